import type { HoldSettler } from '../src/accounts/account.events';
import type { AdmissionRefusal } from '../src/accounts/admission.policy';
import type { GatewayCallFacts, InvocationStatus, RecoveryGround, RefusalTransition, SettledBy, SettlementTransition } from '../src/invocations/invocation.events';
import type { AttemptClassification, EndingLimit, FaultClass, Outcome, UsageCounts } from '../src/runtime';

/**
 * The explanation of an invocation as its read model stores it: what explanations.projection.ts
 * folds and explanation-sentence.ts puts in words, in a file of its own so neither imports the other.
 */

/** The refusal recorded at admission: the reason, the figures behind it, and transition 1 or 2. */
export type ExplanationRefusal = AdmissionRefusal & { readonly transition: RefusalTransition };

/**
 * The bound that ended a conversation, with where its value came from: the publication copied into
 * the invocation when it was admitted, never the catalog as it is now (ATS-PFM-LLM-002-12/13).
 */
export interface ExplanationEndingLimit {
  readonly name: EndingLimit;
  /** The published value: turns, tool calls, credits or milliseconds, as `name` says. */
  readonly value: number;
  readonly operationId: string;
  readonly publicationVersion: number;
}

export interface ExplanationSettlement {
  readonly transition: SettlementTransition;
  readonly by: SettledBy;
  /** Integer credits charged. */
  readonly chargeCredits: number;
  /** A gateway call's attempt price above its hold, recorded as its overrun; absent when none. */
  readonly overrunCredits?: number;
  /** Why the sweep or recovery settled what a lease owned: its instance stopped, or it passed its deadline. */
  readonly recovery?: RecoveryGround;
}

/**
 * A gateway call's facts (docs/gateway.md), as its InvocationEstimated names them, and how its one
 * upstream attempt went once it is recorded.
 */
export interface ExplanationGateway extends GatewayCallFacts {
  /** The attempt's classification: `ok`, or the fault of the upstream answer. */
  readonly classification?: AttemptClassification;
  readonly httpStatus?: number;
  /** The call ran out of its time bound. */
  readonly timedOut?: boolean;
  /** Anthropic's usage report, counts by kind; absent until the attempt is recorded, and when it reported none or reported it malformed. */
  readonly usage?: UsageCounts;
  /** The usage field Anthropic reported malformed (`output_tokens`, …): the usage is unknown and the call charged its hold. */
  readonly malformedUsage?: string;
}

/**
 * Why an invocation was refused or how its conversation ended, in figures and in one sentence
 * (docs/http.md).
 */
export interface ExplanationView {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly operationId: string;
  /** Absent for an operation that was never published; a gateway call's rate card version. */
  readonly publicationVersion?: number;
  /** Present for a gateway call only. */
  readonly gateway?: ExplanationGateway;
  readonly state: InvocationStatus;
  /** Set once the conversation ended (`failed` included). */
  readonly outcome?: Outcome;
  readonly refusal?: ExplanationRefusal;
  /** Set when a limit ended the conversation. */
  readonly endingLimit?: ExplanationEndingLimit;
  /** The provider fault of a `failed` outcome. */
  readonly fault?: FaultClass;
  /** Turns used (while in flight: the highest turn attempted) and the published `maxTurns`. */
  readonly turns: { readonly used: number; readonly limit?: number };
  /** Tool calls answered (known once the conversation ended) and the published `maxToolCalls`. */
  readonly toolCalls: { readonly used: number; readonly limit?: number };
  /**
   * Integer credits: spent by attempts, the hold (the estimate), the charge once settled, and a gateway
   * call's overrun (its attempt price above its hold) when it has one.
   */
  readonly credits: { readonly spent: number; readonly hold: number; readonly charge?: number; readonly overrun?: number };
  /** Attempts with retry > 0 among the retained attempt records. */
  readonly retries: number;
  readonly settlement?: ExplanationSettlement;
  /**
   * Set when the sweep or recovery released the hold of an invocation its own run had settled (a
   * crash between the invocation's settlement and its account's): who, and the credits released.
   */
  readonly holdRelease?: { readonly by: HoldSettler; readonly heldCredits: number };
  /** Who asked the conversation to stop, and when (POST /v1/invocations/:id/cancel, CancelInvocationCommand). */
  readonly cancellation?: { readonly requestedBy: string; readonly requestedAt: string };
  /** What a person reads, built from the figures above only (explanation-sentence.ts; a gateway call's: gateway-explanation-sentence.ts). */
  readonly sentence: string;
}

/** The view without its sentence: what the sentence is built from. */
export type ExplanationFigures = Omit<ExplanationView, 'sentence'>;
