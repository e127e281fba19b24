/**
 * Issue 31, finding 2 (docs/lifecycle.md "Recovery"): the sweep and recovery settle an invocation a
 * lease owns only once that lease is recorded expired, or past the invocation's own deadline (its
 * time bound plus RECOVERY_DEADLINE_MARGIN_MS), and record which; one from a log written before
 * owners were recorded keeps the staleness rule. The lease itself: renewed only while live, recorded
 * expired only once lapsed, never renewed after.
 */
import { IllegalTransitionError } from '../../src/domain/domain.errors';
import { instanceLeaseDecider, leaseStreamName, type InstanceLeaseEvent } from '../../src/invocations/instance-lease';
import { RECOVERY_DEADLINE_MARGIN_MS } from '../../src/invocations/invocation-ownership';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import type { SettleInvocation } from '../../src/invocations/invocation.commands';
import type { InvocationEvent } from '../../src/invocations/invocation.events';
import { deciderSpec } from '../support/decider-spec';
import { at, dispatched, estimated, HISTORY, PUBLICATION, reserved, settled, sweep } from './invocation.fixtures';

const spec = deciderSpec(invocationDecider);
const leases = deciderSpec(instanceLeaseDecider);

const LEASE = 'lease-1';
const owned = (...rest: InvocationEvent[]): InvocationEvent[] => {
  const first = estimated();
  return [{ ...first, data: { ...first.data, ownerLeaseId: LEASE } } as InvocationEvent, ...rest];
};
/** The dispatched conversation's deadline: dispatched at +20 ms, its time bound, and the margin. */
const DEADLINE_MS = 20 + PUBLICATION.limits.totalTimeMs + RECOVERY_DEADLINE_MARGIN_MS;
const THRESHOLD_MS = 1_000;

const recover = (settledAtMs: number, lapsedAt?: string, leaseId = LEASE): SettleInvocation => ({
  type: 'SettleInvocation',
  data: { by: 'recovery', settledAt: at(settledAtMs), olderThanMs: THRESHOLD_MS, ...(lapsedAt === undefined ? {} : { ownerLease: { leaseId, lapsedAt } }) },
});

describe('issue 31 finding 2: recovery settles what a live lease owns only past its deadline, and what a lapsed one owned at once, saying which', () => {
  it('leaves a dispatched invocation of a live lease past the threshold and its time bound, inside the margin', () => {
    spec.given(owned(reserved(), dispatched())).when(recover(20 + PUBLICATION.limits.totalTimeMs + 1)).thenNothing();
    spec.given(owned(reserved(), dispatched())).when(recover(DEADLINE_MS)).thenNothing();
  });

  it('settles it past its deadline, recording the deadline and by how much it passed it', () => {
    spec
      .given(owned(reserved(), dispatched()))
      .when(recover(DEADLINE_MS + 5_000))
      .then([
        {
          ...settled(14, 500, 500, 'recovery', DEADLINE_MS + 5_000),
          data: { ...settled(14, 500, 500, 'recovery', DEADLINE_MS + 5_000).data, recovery: { because: 'deadline_passed', deadlineAt: at(DEADLINE_MS), pastByMs: 5_000 } },
        } as InvocationEvent,
      ]);
  });

  it('settles what a lapsed lease owned at once, inside the threshold and the time bound, recording the lapse', () => {
    const lapsedAt = at(40);
    const event = settled(14, 500, 500, 'recovery', 50);
    spec
      .given(owned(reserved(), dispatched()))
      .when(recover(50, lapsedAt))
      .then([{ ...event, data: { ...event.data, recovery: { because: 'lease_expired', leaseId: LEASE, leaseLapsedAt: lapsedAt } } } as InvocationEvent]);
    // Another lease's lapse says nothing about this owner: it is live, and inside its deadline.
    spec.given(owned(reserved(), dispatched())).when(recover(50, lapsedAt, 'another-lease')).thenNothing();
  });

  it('keeps the staleness rule for an invocation with no owner on record (a log written before owners were)', () => {
    spec.given(HISTORY.dispatched).when(sweep(PUBLICATION.limits.totalTimeMs + 20, 0)).then([settled(14, 500, 500, 'sweep', PUBLICATION.limits.totalTimeMs + 20)]);
    spec.given(HISTORY.dispatched).when(recover(50, at(40))).thenNothing();
  });

  it('leaves a reserved invocation of a live lease until the threshold since its last transition', () => {
    spec.given(owned(reserved())).when(recover(10 + THRESHOLD_MS)).thenNothing();
    const event = settled(13, 0, 500, 'recovery', 10 + THRESHOLD_MS + 1);
    spec
      .given(owned(reserved()))
      .when(recover(10 + THRESHOLD_MS + 1))
      .then([{ ...event, data: { ...event.data, recovery: { because: 'deadline_passed', deadlineAt: at(10 + THRESHOLD_MS), pastByMs: 1 } } } as InvocationEvent]);
  });
});

describe('an instance lease (src/invocations/instance-lease.ts): renewed while live, recorded expired once lapsed, never renewed after', () => {
  const taken: InstanceLeaseEvent = { type: 'InstanceLeaseTaken', data: { leaseId: LEASE, instance: 'host:1', takenAt: at(0), expiresAt: at(30_000) } };

  it('is named after its id', () => {
    expect(leaseStreamName(LEASE)).toBe('lease-lease-1');
  });

  it('renews a live lease from the renewal on', () => {
    leases.given([taken]).when({ type: 'RenewLease', data: { renewedAt: at(10_000), durationMs: 30_000 } }).then([{ type: 'InstanceLeaseRenewed', data: { renewedAt: at(10_000), expiresAt: at(40_000) } }]);
  });

  it('refuses to renew a lease that lapsed, recorded or not: the instance takes a new one', () => {
    leases.given([taken]).when({ type: 'RenewLease', data: { renewedAt: at(30_001), durationMs: 30_000 } }).thenThrows(IllegalTransitionError);
    const expired: InstanceLeaseEvent = { type: 'InstanceLeaseExpired', data: { expiredAt: at(31_000), lapsedAt: at(30_000) } };
    leases.given([taken, expired]).when({ type: 'RenewLease', data: { renewedAt: at(29_000), durationMs: 30_000 } }).thenThrows(IllegalTransitionError);
  });

  it('records a lapse once, and only after the expiry', () => {
    leases.given([taken]).when({ type: 'ExpireLease', data: { expiredAt: at(30_000) } }).thenNothing();
    leases.given([taken]).when({ type: 'ExpireLease', data: { expiredAt: at(30_001) } }).then([{ type: 'InstanceLeaseExpired', data: { expiredAt: at(30_001), lapsedAt: at(30_000) } }]);
    const expired: InstanceLeaseEvent = { type: 'InstanceLeaseExpired', data: { expiredAt: at(31_000), lapsedAt: at(30_000) } };
    leases.given([taken, expired]).when({ type: 'ExpireLease', data: { expiredAt: at(40_000) } }).thenNothing();
  });
});
