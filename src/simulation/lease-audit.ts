/**
 * The audit of instance leases and of what recovery settles by them (issue 31, finding 2; docs/lifecycle.md
 * "Recovery"), folded on its own from the log: a lease is taken once, renewed only before it lapses
 * and never after it is recorded expired, recorded expired only past its last expiry; and no
 * invocation a lease owns is settled by the sweep or recovery while that lease is live, unless it is
 * past its own deadline (its time bound plus RECOVERY_DEADLINE_MARGIN_MS, recomputed here).
 */
import type { RecordedEvent } from '../event-store/event-store.port';
import { RECOVERY_DEADLINE_MARGIN_MS } from '../invocations/invocation-ownership';
import type { Publication } from '../catalog/operation.events';

type Fail = (invariant: string, detail: string) => never;

interface LeaseFold {
  /** Its expiry as its last renewal set it, in ms. */
  expiresAtMs: number;
  /** When recovery recorded it expired, in ms; undefined while live. */
  expiredAtMs: number | undefined;
}

/** What the audit knows of an invocation a stale closer settles. */
export interface OwnedSettlement {
  readonly ownerLeaseId: string | undefined;
  readonly publication: Publication | null;
  readonly dispatchedAt: string | undefined;
}

export class LeaseAudit {
  private readonly leases = new Map<string, LeaseFold>();

  /** One event of `lease-<leaseId>`. */
  fold(leaseId: string, event: RecordedEvent, fail: Fail): void {
    const data = event.data as Record<string, string>;
    const lease = this.leases.get(leaseId);
    switch (event.type) {
      case 'InstanceLeaseTaken':
        if (lease !== undefined) fail('lease.taken-once', `lease ${leaseId} taken again`);
        this.leases.set(leaseId, { expiresAtMs: Date.parse(data.expiresAt!), expiredAtMs: undefined });
        return;
      case 'InstanceLeaseRenewed':
        if (lease === undefined) return fail('lease.taken-once', `lease ${leaseId} renewed before it was taken`);
        if (lease.expiredAtMs !== undefined) fail('lease.never-renewed-once-expired', `lease ${leaseId} renewed at ${data.renewedAt} after recovery recorded it expired`);
        if (Date.parse(data.renewedAt!) > lease.expiresAtMs) fail('lease.renewed-before-it-lapses', `lease ${leaseId} renewed at ${data.renewedAt}, after it lapsed at ${new Date(lease.expiresAtMs).toISOString()}`);
        lease.expiresAtMs = Date.parse(data.expiresAt!);
        return;
      case 'InstanceLeaseExpired':
        if (lease === undefined) return fail('lease.taken-once', `lease ${leaseId} expired before it was taken`);
        if (lease.expiredAtMs !== undefined) fail('lease.expired-once', `lease ${leaseId} recorded expired twice`);
        if (Date.parse(data.expiredAt!) <= lease.expiresAtMs || Date.parse(data.lapsedAt!) !== lease.expiresAtMs) {
          fail('lease.expired-only-once-lapsed', `lease ${leaseId} recorded expired at ${data.expiredAt} (lapsed at ${data.lapsedAt}); its last renewal runs to ${new Date(lease.expiresAtMs).toISOString()}`);
        }
        lease.expiredAtMs = Date.parse(data.expiredAt!);
        return;
      default:
        fail('lease.known-events', `unexpected ${event.type}`);
    }
  }

  /**
   * A settlement by the sweep or recovery: what a lease owns only once that lease is recorded expired,
   * or past the invocation's deadline; either way the settlement says which. Returns the ground.
   */
  checkStaleSettlement(invocation: OwnedSettlement, data: Record<string, unknown>, fail: Fail): string | undefined {
    const ground = data.recovery as { because: string; leaseId?: string; leaseLapsedAt?: string; deadlineAt?: string; pastByMs?: number } | undefined;
    if (invocation.ownerLeaseId === undefined) {
      if (ground !== undefined) fail('recovery.ground-only-for-owned', 'a settlement of an invocation no lease owns names a ground');
      return undefined;
    }
    if (ground === undefined) return fail('recovery.says-why', `settled by ${String(data.settledBy)} without saying why, though lease ${invocation.ownerLeaseId} owns it`);
    const lease = this.leases.get(invocation.ownerLeaseId);
    const settledAtMs = Date.parse(data.settledAt as string);
    if (ground.because === 'lease_expired') {
      if (lease?.expiredAtMs === undefined || ground.leaseId !== invocation.ownerLeaseId || Date.parse(ground.leaseLapsedAt!) !== lease.expiresAtMs) {
        fail('recovery.never-touches-a-live-lease', `settled as left by lease ${String(ground.leaseId)}, but its owner ${invocation.ownerLeaseId} is not recorded expired (lapsed at ${String(ground.leaseLapsedAt)})`);
      }
      return 'lease-expired';
    }
    const deadlineMs = Date.parse(ground.deadlineAt!);
    if (ground.because !== 'deadline_passed' || settledAtMs - deadlineMs !== ground.pastByMs || settledAtMs <= deadlineMs) {
      fail('recovery.says-why', `settlement ground ${JSON.stringify(ground)} does not add up at ${String(data.settledAt)}`);
    }
    // Its own deadline, recomputed: a dispatched call has its time bound and the margin, whatever the threshold.
    if (invocation.dispatchedAt !== undefined && invocation.publication !== null && lease?.expiredAtMs === undefined) {
      const earliestMs = Date.parse(invocation.dispatchedAt) + invocation.publication.limits.totalTimeMs + RECOVERY_DEADLINE_MARGIN_MS;
      if (settledAtMs <= earliestMs) {
        fail('recovery.never-touches-a-live-lease', `settled at ${String(data.settledAt)} while lease ${invocation.ownerLeaseId} was live, before its deadline ${new Date(earliestMs).toISOString()}`);
      }
    }
    return 'deadline-passed';
  }
}
