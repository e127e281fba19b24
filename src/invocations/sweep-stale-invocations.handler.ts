import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { IllegalTransitionError } from '../domain/domain.errors';
import { CLOCK, isoAt } from '../domain/clock.token';
import type { Clock } from '../runtime';
import { instanceLeaseDecider, leaseLapsed, leaseStreamName } from './instance-lease';
import { staleClosing } from './invocation-ownership';
import { invocationDecider } from './invocation.decider';
import { invocationStreamName, type ExpiredOwnerLease, type StaleCloser } from './invocation.events';
import type { InvocationState } from './invocation.state';
import { settleHold, settlement } from './invocation-lifecycle';
import { SWEEP_CANDIDATES, type OpenInvocationCandidate, type SweepCandidates } from './sweep-candidates.port';
import { ReleasedHold, SweepReport, SweepStaleInvocationsCommand, SweptInvocation } from './sweep-stale-invocations.command';

/** An owner lease as one pass found it: recorded expired (with the expiry it passed), or not. */
type OwnerLeases = Map<string, ExpiredOwnerLease | undefined>;

/**
 * Candidates come from the read side (SweepCandidates: open invocations, accounts with open holds); every decision
 * is made on the invocation's, its owner lease's and the account's own streams, never on a projection. An
 * invocation whose owner's lease has lapsed is settled whatever its age, once the lapse is recorded on the
 * lease's stream (InstanceLeaseExpired, written here by whoever finds it first); one a live lease owns
 * waits for its deadline (invocation-ownership.ts).
 */
@CommandHandler(SweepStaleInvocationsCommand)
export class SweepStaleInvocationsHandler implements ICommandHandler<SweepStaleInvocationsCommand, SweepReport> {
  private readonly logger = new Logger('Sweep');

  constructor(
    private readonly repository: AggregateRepository,
    @Inject(SWEEP_CANDIDATES) private readonly candidates: SweepCandidates,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ olderThanMs, by }: SweepStaleInvocationsCommand): Promise<SweepReport> {
    // Candidates must reflect everything committed before the sweep began.
    await this.candidates.caughtUp();
    const nowMs = this.clock.now();
    const settled: SweptInvocation[] = [];
    const owners: OwnerLeases = new Map();
    for (const open of this.candidates.openInvocations()) {
      const expiredOwner = open.ownerLeaseId === undefined ? undefined : await this.expiredLease(open.ownerLeaseId, nowMs, owners);
      if (expiredOwner === undefined && nowMs - Date.parse(open.lastActivityAt) <= olderThanMs) continue;
      const swept = await this.settleInvocation(open, olderThanMs, by, expiredOwner);
      if (swept !== undefined) settled.push(swept);
    }
    const releasedHolds: ReleasedHold[] = [];
    for (const organizationId of this.candidates.organizationsWithOpenHolds()) {
      releasedHolds.push(...(await this.releaseSettledHolds(organizationId, nowMs, olderThanMs, by, owners)));
    }
    if (settled.length + releasedHolds.length > 0) {
      this.logger.log({ message: `${by} settled stale requests`, olderThanMs, settled: settled.length, releasedHolds: releasedHolds.length });
    }
    return { olderThanMs, settled, releasedHolds };
  }

  /**
   * The lease, if it is recorded expired (recording it when it has lapsed by `nowMs`), once per pass.
   * The record is decided on the lease's own stream: a renewal that got there first keeps it live.
   */
  private async expiredLease(leaseId: string, nowMs: number, owners: OwnerLeases): Promise<ExpiredOwnerLease | undefined> {
    if (owners.has(leaseId)) return owners.get(leaseId);
    const stream = leaseStreamName(leaseId);
    let { state } = await this.repository.load(stream, instanceLeaseDecider);
    if (leaseLapsed(state, nowMs)) {
      ({ state } = await this.repository.handle(stream, instanceLeaseDecider, { type: 'ExpireLease', data: { expiredAt: isoAt(this.clock) } }, { correlationId: leaseId }));
      if (state.status === 'expired') this.logger.warn({ message: 'an instance stopped renewing its lease: what it owned is recovered', leaseId, lapsedAt: state.expiresAt });
    }
    const expired = state.status === 'expired' ? { leaseId, lapsedAt: state.expiresAt! } : undefined;
    owners.set(leaseId, expired);
    return expired;
  }

  private async settleInvocation(
    open: OpenInvocationCandidate,
    olderThanMs: number,
    by: StaleCloser,
    expiredOwner: ExpiredOwnerLease | undefined,
  ): Promise<SweptInvocation | undefined> {
    const stream = invocationStreamName(open.invocationId);
    const { state: before } = await this.repository.load(stream, invocationDecider);
    try {
      const settledAt = isoAt(this.clock);
      const nowMs = this.clock.now();
      // Transition 7 then 9 for a stale unmeasured result. Pending is dated at the completion it
      // follows, so marking it does not make a result that was stale look live again.
      const pendingAt = (current: InvocationState): string | undefined =>
        staleClosing(current, nowMs, olderThanMs, expiredOwner) === undefined ? undefined : (current.lastTransitionAt ?? settledAt);
      const settle = { by, settledAt, olderThanMs, ...(expiredOwner === undefined ? {} : { ownerLease: expiredOwner }) };
      const { state, events } = await this.repository.handleAll(stream, invocationDecider, settlement(settle, pendingAt));
      // Nothing appended: the request is still live (not stale by its own stream's account).
      if (events.length === 0 || state.settlement === undefined) return undefined;
      await this.settleHold(open.organizationId, open.invocationId, state.settlement.chargeCredits, by);
      return {
        invocationId: open.invocationId,
        organizationId: open.organizationId,
        from: before.status === 'initial' ? 'estimated' : before.status,
        transition: state.settlement.transition,
        chargeCredits: state.settlement.chargeCredits,
      };
    } catch (error) {
      // Settled or refused meanwhile by its own run or by another sweep: nothing left to do.
      if (error instanceof IllegalTransitionError) return undefined;
      throw error;
    }
  }

  /**
   * Holds left open by a crash between an invocation's settlement and its account's. The settlement
   * must be older than the threshold too, unless the lease of the instance that owned the invocation
   * is recorded expired: a run that settled its invocation a moment ago is about to settle the hold
   * itself (it would do nothing then, but the release would be credited to the sweep), and one whose
   * instance stopped will not.
   */
  private async releaseSettledHolds(organizationId: string, nowMs: number, olderThanMs: number, by: StaleCloser, owners: OwnerLeases): Promise<ReleasedHold[]> {
    const { state: account } = await this.repository.load(accountStreamName(organizationId), accountDecider);
    const released: ReleasedHold[] = [];
    for (const invocationId of [...account.openHolds.keys()]) {
      const { state } = await this.repository.load(invocationStreamName(invocationId), invocationDecider);
      if (state.settlement === undefined) continue;
      const settledLongAgo = nowMs - Date.parse(state.settlement.settledAt) > olderThanMs;
      if (!settledLongAgo && (state.ownerLeaseId === undefined || (await this.expiredLease(state.ownerLeaseId, nowMs, owners)) === undefined)) continue;
      if (await this.settleHold(organizationId, invocationId, state.settlement.chargeCredits, by)) {
        released.push({ invocationId, organizationId, chargeCredits: state.settlement.chargeCredits });
      }
    }
    return released;
  }

  /** Settles the account's hold for the invocation; false when there was none left to settle. */
  private async settleHold(organizationId: string, invocationId: string, chargeCredits: number, by: StaleCloser): Promise<boolean> {
    const { events } = await this.repository.handle(
      accountStreamName(organizationId),
      accountDecider,
      settleHold(invocationId, { settlement: { chargeCredits } }, isoAt(this.clock), by),
      { correlationId: invocationId },
    );
    return events.length > 0;
  }
}
