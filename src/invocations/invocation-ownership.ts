/**
 * When the sweep or recovery may settle an invocation, by its owner (docs/lifecycle.md "Recovery"):
 * what a stopped instance left (its lease recorded expired) at once; what a live instance owns only
 * past its own deadline; an invocation from a log written before owners were recorded by the
 * staleness rule it always had (isStale).
 */
import { isoToMs } from '../domain/field-checks';
import type { ExpiredOwnerLease, RecoveryGround } from './invocation.events';
import { isStale, lastActivityAtMs, type InvocationState } from './invocation.state';

/**
 * How long past its time bound a live instance's dispatched invocation is left to its own run, in ms:
 * the run stops its conversation at the bound (a gateway call's relay cuts upstream then) and needs
 * only its settlement's appends after it, so a minute is many times what that takes on a busy store.
 */
export const RECOVERY_DEADLINE_MARGIN_MS = 60_000;

/**
 * The deadline of an invocation whose owner is live, in ms: a dispatched one (or one with a result)
 * has until its time bound plus RECOVERY_DEADLINE_MARGIN_MS, and in every state at least the
 * staleness threshold past its last sign of life.
 */
export function ownedDeadlineMs(state: InvocationState, olderThanMs: number): number {
  const quiet = lastActivityAtMs(state) + olderThanMs;
  if (state.dispatchedAt === undefined || state.publication === null) return quiet;
  return Math.max(quiet, isoToMs(state.dispatchedAt) + state.publication.limits.totalTimeMs + RECOVERY_DEADLINE_MARGIN_MS);
}

/**
 * Whether a stale closer may settle it at `nowMs`, and on what ground: `undefined` leaves it alone;
 * `{ ground: undefined }` is an invocation with no owner on record, settled by the staleness rule.
 */
export function staleClosing(
  state: InvocationState,
  nowMs: number,
  olderThanMs: number,
  expiredOwner: ExpiredOwnerLease | undefined,
): { readonly ground: RecoveryGround | undefined } | undefined {
  if (state.ownerLeaseId === undefined) return isStale(state, nowMs, olderThanMs) ? { ground: undefined } : undefined;
  if (expiredOwner !== undefined && expiredOwner.leaseId === state.ownerLeaseId) {
    return { ground: { because: 'lease_expired', leaseId: expiredOwner.leaseId, leaseLapsedAt: expiredOwner.lapsedAt } };
  }
  const deadlineMs = ownedDeadlineMs(state, olderThanMs);
  if (nowMs <= deadlineMs) return undefined;
  return { ground: { because: 'deadline_passed', deadlineAt: new Date(deadlineMs).toISOString(), pastByMs: nowMs - deadlineMs } };
}
