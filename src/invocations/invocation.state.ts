/**
 * State of one invocation and what handlers read from it. Bounded: attempts are summed, not kept.
 */
import type { AdmissionRefusal } from '../accounts/admission.policy';
import type { Publication } from '../catalog/operation.events';
import { isoToMs } from '../domain/field-checks';
import type { EndingLimit, Outcome } from '../runtime/conversation.types';
import type { FaultClass } from '../runtime/faults';
import type { Usage } from '../runtime/provider.port';
import { addUsage, NO_USAGE } from '../runtime/usage';
import type {
  InvocationEvent,
  InvocationStatus,
  RecoveryGround,
  RefusalTransition,
  SettledBy,
  SettlementTransition,
} from './invocation.events';

export interface Settlement {
  readonly transition: SettlementTransition;
  readonly chargeCredits: number;
  /** A gateway call's attempt cost above its hold (InvocationSettled); absent when none. */
  readonly overrunCredits?: number;
  readonly heldCredits: number;
  readonly settledBy: SettledBy;
  readonly settledAt: string;
  readonly recovery?: RecoveryGround;
}

export type Refusal = AdmissionRefusal & { readonly transition: RefusalTransition; readonly refusedAt: string };

export interface InvocationState {
  /** `initial` until InvocationEstimated: the stream does not exist. */
  readonly status: InvocationStatus | 'initial';
  readonly invocationId: string | undefined;
  readonly operationId: string | undefined;
  readonly organizationId: string | undefined;
  readonly idempotencyKey: string | undefined;
  /** The lease of the instance that runs it; undefined in logs written before owners were recorded. */
  readonly ownerLeaseId: string | undefined;
  /** The first request to stop the conversation, if any (who asked, and when). */
  readonly cancellation: { readonly requestedBy: string; readonly requestedAt: string } | undefined;
  /** The keyed fingerprint of the keyed request's operation and input, when recorded. */
  readonly requestFingerprint: string | undefined;
  /** The publication resolved at estimate time; null before it, or for an unknown operation. */
  readonly publication: Publication | null;
  /** Integer credits: the publication's creditHold (0 for an unknown operation). */
  readonly estimate: number;
  /**
   * A gateway call (docs/gateway.md): its hold is the most the request could cost, so it is never
   * charged more, whatever usage upstream reports; what an attempt cost beyond it is recorded as the
   * settlement's overrun.
   */
  readonly chargeAtMostHold: boolean;
  /** True from `reserved` on: the account placed a hold for it (released at settlement). */
  readonly accountHeld: boolean;
  /** Credits the account holds for it; 0 unless `accountHeld`. */
  readonly heldCredits: number;
  /** AttemptRecorded events in the stream (at most MAX_RETAINED_ATTEMPTS). */
  readonly attemptsRecorded: number;
  readonly lastAttempt: { readonly turn: number; readonly retry: number } | undefined;
  /** Clock time (ms) the last recorded attempt ended: activity the sweep must not mistake for staleness. */
  readonly lastAttemptEndedAtMs: number | undefined;
  /** Sums over recorded attempts while dispatched; the loop's exact totals once it finished. */
  readonly attemptCount: number;
  readonly spentCredits: number;
  readonly usageTotals: Usage;
  readonly usageReported: boolean;
  readonly attemptsTruncated: boolean;
  readonly turnsUsed: number;
  readonly toolCallsUsed: number;
  /** Set by completed (the loop's outcome) or failed (`failed`). */
  readonly outcome: Outcome | undefined;
  readonly endingLimit: EndingLimit | undefined;
  readonly fault: FaultClass | undefined;
  readonly refusal: Refusal | undefined;
  readonly settlement: Settlement | undefined;
  readonly dispatchedAt: string | undefined;
  /** ISO-8601 time of the latest transition. */
  readonly lastTransitionAt: string | undefined;
}


export function initialInvocationState(): InvocationState {
  return {
    status: 'initial',
    invocationId: undefined,
    operationId: undefined,
    organizationId: undefined,
    idempotencyKey: undefined,
    ownerLeaseId: undefined,
    requestFingerprint: undefined,
    cancellation: undefined,
    publication: null,
    estimate: 0,
    chargeAtMostHold: false,
    accountHeld: false,
    heldCredits: 0,
    attemptsRecorded: 0,
    lastAttempt: undefined,
    lastAttemptEndedAtMs: undefined,
    attemptCount: 0,
    spentCredits: 0,
    usageTotals: NO_USAGE,
    usageReported: false,
    attemptsTruncated: false,
    turnsUsed: 0,
    toolCallsUsed: 0,
    outcome: undefined,
    endingLimit: undefined,
    fault: undefined,
    refusal: undefined,
    settlement: undefined,
    dispatchedAt: undefined,
    lastTransitionAt: undefined,
  };
}

/**
 * What a settlement at the attempts' prices charges (transitions 8 and 10): their sum, and for a
 * gateway call at most its hold, with what the attempts cost beyond it as the overrun (docs/gateway.md
 * "Settlement"), so `chargeCredits + overrunCredits` is always the sum.
 */
export function attemptsSettlement(spentCredits: number, estimate: number, chargeAtMostHold: boolean): { readonly chargeCredits: number; readonly overrunCredits: number } {
  if (!chargeAtMostHold || spentCredits <= estimate) return { chargeCredits: spentCredits, overrunCredits: 0 };
  return { chargeCredits: estimate, overrunCredits: spentCredits - estimate };
}

/**
 * A completed result whose cost was never measured: attempts were made and none reported usage. It
 * must go through `pending` (transition 7) and is charged its estimate (9). A result with no attempt
 * at all (cancelled, or out of time before the first request) sent nothing and owes nothing: it
 * settles by transition 8 at its spend, 0.
 */
export function isUnmeasured(state: InvocationState): boolean {
  return state.status === 'completed' && !state.usageReported && state.attemptCount > 0;
}

/** Latest sign of life, in ms: the last transition or the end of the last recorded attempt. */
export function lastActivityAtMs(state: InvocationState): number {
  const transitionMs = state.lastTransitionAt === undefined ? Number.NEGATIVE_INFINITY : isoToMs(state.lastTransitionAt);
  return Math.max(transitionMs, state.lastAttemptEndedAtMs ?? Number.NEGATIVE_INFINITY);
}

/**
 * Whether the sweep may settle it at `nowMs`: nothing happened for more than `olderThanMs`, and a
 * dispatched conversation is also past its own deadline (dispatchedAt + totalTimeMs), so the sweep
 * never cuts short a conversation still inside its time budget.
 */
export function isStale(state: InvocationState, nowMs: number, olderThanMs: number): boolean {
  if (nowMs - lastActivityAtMs(state) <= olderThanMs) return false;
  if (state.status === 'dispatched' && state.dispatchedAt !== undefined && state.publication !== null) {
    return nowMs >= isoToMs(state.dispatchedAt) + state.publication.limits.totalTimeMs;
  }
  return true;
}

/** The figures of the invocation result (docs/http.md, `POST /v1/invocations`). */
export interface InvocationSummary {
  readonly invocationId: string;
  readonly state: InvocationStatus;
  readonly outcome?: Outcome;
  readonly refusalReason?: AdmissionRefusal['reason'];
  readonly publicationVersion?: number;
  readonly estimate: number;
  /** Integer credits charged; 0 until settled. */
  readonly charge: number;
  readonly turnsUsed: number;
  readonly toolCallsUsed: number;
}

export function invocationSummary(state: InvocationState): InvocationSummary {
  if (state.status === 'initial' || state.invocationId === undefined) {
    throw new Error('an invocation that was never estimated has no summary');
  }
  return {
    invocationId: state.invocationId,
    state: state.status,
    ...(state.outcome === undefined ? {} : { outcome: state.outcome }),
    ...(state.refusal === undefined ? {} : { refusalReason: state.refusal.reason }),
    ...(state.publication === null ? {} : { publicationVersion: state.publication.version }),
    estimate: state.estimate,
    charge: state.settlement?.chargeCredits ?? 0,
    turnsUsed: state.turnsUsed,
    toolCallsUsed: state.toolCallsUsed,
  };
}

export function evolveInvocation(state: InvocationState, event: InvocationEvent): InvocationState {
  switch (event.type) {
    case 'InvocationEstimated': {
      const { invocationId, operationId, organizationId, publication, idempotencyKey, requestFingerprint, estimatedAt, gateway, ownerLeaseId } = event.data;
      return {
        ...state,
        status: 'estimated',
        invocationId,
        operationId,
        organizationId,
        idempotencyKey,
        ownerLeaseId,
        requestFingerprint,
        publication,
        estimate: publication?.creditHold ?? 0,
        chargeAtMostHold: gateway !== undefined,
        lastTransitionAt: estimatedAt,
      };
    }
    case 'InvocationRefused':
      return { ...state, status: 'refused', refusal: event.data, lastTransitionAt: event.data.refusedAt };
    case 'InvocationReserved':
      return {
        ...state,
        status: 'reserved',
        accountHeld: true,
        heldCredits: event.data.creditHold,
        lastTransitionAt: event.data.reservedAt,
      };
    case 'InvocationDispatched':
      return { ...state, status: 'dispatched', dispatchedAt: event.data.dispatchedAt, lastTransitionAt: event.data.dispatchedAt };
    case 'AttemptRecorded': {
      const attempt = event.data;
      return {
        ...state,
        attemptsRecorded: state.attemptsRecorded + 1,
        lastAttempt: { turn: attempt.turn, retry: attempt.retry },
        lastAttemptEndedAtMs: attempt.startedAtMs + attempt.durationMs,
        attemptCount: state.attemptCount + 1,
        spentCredits: state.spentCredits + attempt.priceCredits,
        usageTotals: attempt.usage === undefined ? state.usageTotals : addUsage(state.usageTotals, attempt.usage),
        usageReported: state.usageReported || attempt.usage !== undefined,
      };
    }
    case 'InvocationCompleted': {
      const { outcome, endingLimit, completedAt, ...figures } = event.data;
      return { ...state, ...figures, status: 'completed', outcome, endingLimit, lastTransitionAt: completedAt };
    }
    case 'InvocationFailed': {
      const { fault, failedAt, ...figures } = event.data;
      return { ...state, ...figures, status: 'failed', outcome: 'failed', fault, lastTransitionAt: failedAt };
    }
    case 'InvocationPending':
      return { ...state, status: 'pending', lastTransitionAt: event.data.pendingAt };
    case 'InvocationSettled':
      return { ...state, status: 'settled', settlement: event.data, lastTransitionAt: event.data.settledAt };
    case 'InvocationCancellationRequested':
      // Not a transition: lastTransitionAt (what a sweep measures staleness from) stays.
      return state.cancellation === undefined ? { ...state, cancellation: event.data } : state;
    default:
      // An event type this version does not know (written by a newer one) changes nothing here.
      return state;
  }
}
