/**
 * Events of an invocation (docs/lifecycle.md; attempts: docs/rules.md rule 07). Stream:
 * `invocation-<invocationId>`. Every transition of the lifecycle is one event; AttemptRecorded is not a
 * transition but the record of one provider attempt. No event holds a prompt, a message, tool arguments
 * or tool results.
 */
import type { AdmissionRefusal } from '../accounts/admission.policy';
import type { Publication } from '../catalog/operation.events';
import type { DomainEvent } from '../domain/decider';
import type { AttemptRecord, EndingLimit, Outcome } from '../runtime/conversation.types';
import type { FaultClass } from '../runtime/faults';
import type { Usage } from '../runtime/provider.port';

// The one bound, defined beside the attempt record; re-exported for the invocation's readers.
export { MAX_RETAINED_ATTEMPTS } from '../runtime/conversation.types';

export const INVOCATION_STATUSES = [
  'estimated',
  'refused',
  'reserved',
  'dispatched',
  'completed',
  'failed',
  'pending',
  'settled',
] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];

/** The fourteen transitions of STATE-PFM-LLM-001 (docs/lifecycle.md), by number. There are no others. */
export const TRANSITIONS = {
  1: { from: 'estimated', to: 'refused' },
  2: { from: 'estimated', to: 'refused' },
  3: { from: 'estimated', to: 'reserved' },
  4: { from: 'reserved', to: 'dispatched' },
  5: { from: 'dispatched', to: 'completed' },
  6: { from: 'dispatched', to: 'failed' },
  7: { from: 'completed', to: 'pending' },
  8: { from: 'completed', to: 'settled' },
  9: { from: 'pending', to: 'settled' },
  10: { from: 'failed', to: 'settled' },
  11: { from: 'dispatched', to: 'settled' },
  12: { from: 'estimated', to: 'settled' },
  13: { from: 'reserved', to: 'settled' },
  14: { from: 'dispatched', to: 'settled' },
} as const satisfies Record<number, { from: InvocationStatus; to: InvocationStatus }>;
export type InvocationTransition = keyof typeof TRANSITIONS;
export type RefusalTransition = 1 | 2;
export type SettlementTransition = 8 | 9 | 10 | 11 | 12 | 13 | 14;

/**
 * Who closed the invocation: the runtime after its loop, its exception path, the sweep someone ran
 * (`POST /v1/settlements/sweep`), or the recovery every instance runs on start and on its schedule.
 * `recovery` is new: events written before it carry one of the first three, and read as they were.
 */
export const SETTLED_BY = ['runtime', 'exception', 'sweep', 'recovery'] as const;
export type SettledBy = (typeof SETTLED_BY)[number];
/** The closers of stale requests: they settle only what is stale by the invocation's own stream. */
export const STALE_CLOSERS = ['sweep', 'recovery'] as const;
export type StaleCloser = (typeof STALE_CLOSERS)[number];

/** An outcome the lifecycle calls `completed` (all but `failed`). */
export type CompletedOutcome = Exclude<Outcome, 'failed'>;

/** What a finished conversation reports; exact even when attempt records were truncated. */
export interface ConversationFigures {
  readonly turnsUsed: number;
  readonly toolCallsUsed: number;
  /** Integer credits: the sum of every attempt's price, retained or not. */
  readonly spentCredits: number;
  /** Every provider attempt, retained or not. */
  readonly attemptCount: number;
  /** True when attemptCount > MAX_RETAINED_ATTEMPTS, so not every attempt has a record. */
  readonly attemptsTruncated: boolean;
  readonly usageTotals: Usage;
  /** True when at least one attempt reported usage. */
  readonly usageReported: boolean;
}

/**
 * A gateway call (docs/gateway.md): the key that made it, the model and the rate card version it was
 * priced at. Its `publication` is the rate card version as a one-turn, one-attempt publication whose
 * `creditHold` is the call's worst-case hold.
 */
export interface GatewayCallFacts {
  readonly keyId: string;
  /** The key's name when the call was made, for explanations and statements. */
  readonly keyName: string;
  readonly model: string;
  readonly rateCardVersion: number;
  readonly stream: boolean;
  /**
   * The key's team when the call was checked (docs/gateway.md "Teams"), for attribution; the hold
   * counts against the team the key names when it is placed. Absent: no team.
   */
  readonly teamId?: string;
  /** The caller's `metadata.user_id` (call-attribution.ts): opaque, bounded; absent when none was sent. */
  readonly userId?: string;
  /** The caller's `x-ledger-tags` (call-attribution.ts); absent when none were sent. */
  readonly tags?: readonly string[];
}

/** First event: the request, and the publication in force copied in full (null: never published). */
export type InvocationEstimated = DomainEvent<
  'InvocationEstimated',
  {
    readonly invocationId: string;
    readonly operationId: string;
    readonly organizationId: string;
    /** The estimate is `publication.creditHold` (0 for an unknown operation). */
    readonly publication: Publication | null;
    /** Present only when the caller gave one. */
    readonly idempotencyKey?: string;
    /**
     * With a key: the keyed fingerprint of the operation and input (request-fingerprint.ts), so a
     * repeat with another input is refused. Never the input itself. Absent in events written before it.
     */
    readonly requestFingerprint?: string;
    /** Present for a gateway call. */
    readonly gateway?: GatewayCallFacts;
    /**
     * The lease of the instance that runs it (instance-lease.ts): recovery settles it only once that
     * lease has lapsed, or past its deadline. Absent in events written before owners were recorded.
     */
    readonly ownerLeaseId?: string;
    readonly estimatedAt: string;
  }
>;

/** Transition 1 (access: ai_disabled, operation_disabled, unknown_operation) or 2 (credits, slot). */
export type InvocationRefused = DomainEvent<
  'InvocationRefused',
  AdmissionRefusal & { readonly transition: RefusalTransition; readonly refusedAt: string }
>;

/** Transition 3: the account holds `creditHold` and a slot for this invocation. */
export type InvocationReserved = DomainEvent<'InvocationReserved', { readonly creditHold: number; readonly reservedAt: string }>;

/** Transition 4: request capture returned and was written; no provider call was made before it. */
export type InvocationDispatched = DomainEvent<'InvocationDispatched', { readonly dispatchedAt: string }>;

/**
 * One provider attempt (docs/rules.md rule 07), only while dispatched, at most MAX_RETAINED_ATTEMPTS
 * per stream.
 */
export type AttemptRecorded = DomainEvent<'AttemptRecorded', AttemptRecord>;

/** Transition 5. `endingLimit` is present exactly when the outcome is a limit's. */
export type InvocationCompleted = DomainEvent<
  'InvocationCompleted',
  ConversationFigures & {
    readonly outcome: CompletedOutcome;
    readonly endingLimit?: EndingLimit;
    readonly completedAt: string;
  }
>;

/** Transition 6: the loop failed with `fault` (permanent, or retries exhausted). */
export type InvocationFailed = DomainEvent<
  'InvocationFailed',
  ConversationFigures & { readonly fault: FaultClass; readonly failedAt: string }
>;

/** Transition 7: completed, but no attempt reported usage, so its cost is unknown. */
export type InvocationPending = DomainEvent<'InvocationPending', { readonly pendingAt: string }>;

/**
 * Transitions 8–14. `chargeCredits` is computed by the decider from the state (docs/lifecycle.md); the
 * account releases `heldCredits` (0 when no hold was placed) and the slot, and charges `chargeCredits`.
 */
export type InvocationSettled = DomainEvent<
  'InvocationSettled',
  {
    readonly transition: SettlementTransition;
    readonly chargeCredits: number;
    /**
     * A gateway call whose attempt was priced above its hold (transitions 8 and 10): it is charged its
     * hold, and what the attempt cost beyond it is recorded here, so the charge plus the overrun is the
     * attempt's price (docs/gateway.md "Settlement"). Present only when above 0; absent in events
     * written before it, which read as no overrun.
     */
    readonly overrunCredits?: number;
    readonly heldCredits: number;
    readonly settledBy: SettledBy;
    readonly settledAt: string;
    /** Why the sweep or recovery settled an invocation a lease owned (absent otherwise, and before owners were recorded). */
    readonly recovery?: RecoveryGround;
  }
>;

/** Why the sweep or recovery settled an invocation a lease owned (invocation-ownership.ts). */
export type RecoveryGround =
  | { readonly because: 'lease_expired'; readonly leaseId: string; readonly leaseLapsedAt: string }
  | { readonly because: 'deadline_passed'; readonly deadlineAt: string; readonly pastByMs: number };

/** The owner's lease as the sweep found it, recorded expired, with the expiry it passed. */
export interface ExpiredOwnerLease {
  readonly leaseId: string;
  readonly lapsedAt: string;
}

/**
 * Someone asked the running conversation to stop (docs/http.md "Cancelling"). Not a lifecycle
 * transition: the state is unchanged, and the instance running the conversation ends it `cancelled` at
 * its next boundary.
 */
export type InvocationCancellationRequested = DomainEvent<
  'InvocationCancellationRequested',
  {
    /** A role and organization (over HTTP), or what embedding code said; never a token. */
    readonly requestedBy: string;
    readonly requestedAt: string;
  }
>;

export type InvocationEvent =
  | InvocationEstimated
  | InvocationCancellationRequested
  | InvocationRefused
  | InvocationReserved
  | InvocationDispatched
  | AttemptRecorded
  | InvocationCompleted
  | InvocationFailed
  | InvocationPending
  | InvocationSettled;

/** Every event type of an invocation stream, in lifecycle order. */
export const INVOCATION_EVENT_TYPES: readonly InvocationEvent['type'][] = [
  'InvocationEstimated',
  'InvocationRefused',
  'InvocationReserved',
  'InvocationDispatched',
  'AttemptRecorded',
  'InvocationCompleted',
  'InvocationFailed',
  'InvocationPending',
  'InvocationSettled',
  'InvocationCancellationRequested',
];

export function invocationStreamName(invocationId: string): string {
  return `invocation-${invocationId}`;
}
