/**
 * Commands of an invocation. Times are ISO-8601 from the handler's clock (deciders read no clock);
 * every field is re-checked at run time and a bad one is named.
 */
import type { AdmissionRefusal } from '../accounts/admission.policy';
import type { Publication } from '../catalog/operation.events';
import type { GatewayCallFacts } from './invocation.events';
import type { DomainCommand } from '../domain/decider';
import type { AttemptRecord, EndingLimit, Outcome } from '../runtime/conversation.types';
import type { FaultClass } from '../runtime/faults';
import type { ConversationFigures, ExpiredOwnerLease, StaleCloser } from './invocation.events';

/**
 * Opens the stream. `publication` is the one in force (`publicationInForce`), or null when the
 * operation was never published (it can then only be refused with `unknown_operation`).
 * Allowed only on a stream that does not exist yet.
 */
export type EstimateInvocation = DomainCommand<
  'EstimateInvocation',
  {
    readonly invocationId: string;
    readonly operationId: string;
    readonly organizationId: string;
    readonly publication: Publication | null;
    readonly idempotencyKey?: string;
    /** With a key: the keyed fingerprint of operation and input (request-fingerprint.ts). */
    readonly requestFingerprint?: string;
    /** A gateway call's key, model and rate card version. */
    readonly gateway?: GatewayCallFacts;
    /** The lease of the instance that runs it (instance-lease.ts). */
    readonly ownerLeaseId?: string;
    readonly estimatedAt: string;
  }
>;

/** Transition 1 or 2, chosen from the reason. Pass a refusal from `decideAdmission` (see `refusalOf`). */
export type RefuseInvocation = DomainCommand<'RefuseInvocation', AdmissionRefusal & { readonly refusedAt: string }>;

/** Transition 3, after the account appended HoldPlaced. The held credits come from the publication. */
export type ReserveInvocation = DomainCommand<'ReserveInvocation', { readonly reservedAt: string }>;

/** Transition 4. */
export type DispatchInvocation = DomainCommand<'DispatchInvocation', { readonly dispatchedAt: string }>;

/**
 * Records one provider attempt, in the order attempts were made. Its price must be the §7 price of its
 * usage at the invocation's rate version. Beyond MAX_RETAINED_ATTEMPTS it records nothing; repeating
 * the last recorded attempt records nothing either.
 */
export type RecordAttempt = DomainCommand<'RecordAttempt', AttemptRecord>;

/** What the loop reports; `attemptsTruncated` is derived by the decider. */
export type ConversationReport = Omit<ConversationFigures, 'attemptsTruncated'>;

/** Transition 5: the loop returned any outcome but `failed`. `endingLimit` may be left out. */
export type CompleteInvocation = DomainCommand<
  'CompleteInvocation',
  ConversationReport & {
    readonly outcome: Exclude<Outcome, 'failed'>;
    readonly endingLimit?: EndingLimit;
    readonly completedAt: string;
  }
>;

/** Transition 6: the loop returned `failed` with this fault. */
export type FailInvocation = DomainCommand<
  'FailInvocation',
  ConversationReport & { readonly fault: FaultClass; readonly failedAt: string }
>;

/** Transition 7: allowed only for a completed result whose attempts reported no usage. */
export type MarkInvocationPending = DomainCommand<'MarkInvocationPending', { readonly pendingAt: string }>;

/**
 * Transitions 8–14; the decider picks the transition and computes the charge from the state.
 * `sweep` and `recovery` carry their staleness threshold: they settle only a request whose last
 * activity is more than `olderThanMs` before `settledAt` (and, for a dispatched one, whose
 * conversation deadline has passed), and emit nothing otherwise, so a sweep racing live traffic
 * re-decides on fresh state and leaves live requests alone.
 */
export type SettleInvocation = DomainCommand<
  'SettleInvocation',
  | { readonly by: 'runtime' | 'exception'; readonly settledAt: string }
  | {
      readonly by: StaleCloser;
      readonly settledAt: string;
      readonly olderThanMs: number;
      /** The owner's lease, when the sweep found it recorded expired (read from its own stream). */
      readonly ownerLease?: ExpiredOwnerLease;
    }
>;

/** Records a request to stop the conversation; allowed until the conversation has ended. */
export type RequestCancellation = DomainCommand<'RequestCancellation', { readonly requestedBy: string; readonly requestedAt: string }>;

export type InvocationCommand =
  | RequestCancellation
  | EstimateInvocation
  | RefuseInvocation
  | ReserveInvocation
  | DispatchInvocation
  | RecordAttempt
  | CompleteInvocation
  | FailInvocation
  | MarkInvocationPending
  | SettleInvocation;
