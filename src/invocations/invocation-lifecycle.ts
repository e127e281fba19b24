/**
 * The steps of docs/lifecycle.md that every transport shares, as the commands they write: an
 * operation's run (run-workflow.ts), a gateway call (gateway-calls.service.ts), the sweep and recovery
 * (sweep-stale-invocations.handler.ts) build their commands here and nowhere else, so the events an
 * invocation writes and their order are the same whoever drives it.
 *
 * In order: `estimate` (opens the stream) → `placeHold` on the account, or `refuseEstimate`
 * (transitions 1, 2) → `reserveAndDispatch` in one append (3, 4) → the attempts → `closeAndSettle`
 * in one append (5/6, then 7 when unmeasured, then 8/9/10), or `settlement` alone (11 by exception,
 * 8–14 by the sweep) → `settleHold` on the account. Pure: nothing here reads a clock or a store.
 */
import type { AccountCommand, PlaceHold } from '../accounts/account.commands';
import type { HoldGatewayKey, HoldSettler } from '../accounts/account.events';
import type { AdmissionRefusal } from '../accounts/admission.policy';
import type { CommandStep } from '../aggregates/aggregate.repository';
import type { AttemptRecord, EndingLimit, Outcome } from '../runtime/conversation.types';
import type { FaultClass } from '../runtime/faults';
import type { Usage } from '../runtime/provider.port';
import { NO_USAGE } from '../runtime/usage';
import type { ConversationReport, EstimateInvocation, InvocationCommand, SettleInvocation } from './invocation.commands';
import { isUnmeasured, type InvocationState } from './invocation.state';

/** One command of an append on the invocation's stream (a function decides on the state before it). */
export type LifecycleStep = CommandStep<InvocationCommand, InvocationState>;

/**
 * What opens an invocation's stream: who asked, for what, at which publication (a gateway call's: its
 * rate card version, `publicationOf`), its key and owner lease; everything but the instant.
 */
export type EstimateFacts = Omit<EstimateInvocation['data'], 'estimatedAt'>;

/** EstimateInvocation: the stream's first event. */
export function estimate(facts: EstimateFacts, at: string): InvocationCommand {
  const { invocationId, operationId, organizationId, publication, idempotencyKey, requestFingerprint, gateway, ownerLeaseId } = facts;
  return {
    type: 'EstimateInvocation',
    data: {
      invocationId,
      operationId,
      organizationId,
      publication,
      ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
      ...(requestFingerprint === undefined ? {} : { requestFingerprint }),
      ...(gateway === undefined ? {} : { gateway }),
      ...(ownerLeaseId === undefined ? {} : { ownerLeaseId }),
      estimatedAt: at,
    },
  };
}

/** What a gateway call's hold checks beside the balance: its key, the model and `max_tokens` it asks. */
export interface HoldOfGatewayCall {
  readonly gatewayKey: HoldGatewayKey;
  readonly gatewayCall: NonNullable<PlaceHold['data']['gatewayCall']>;
}

/**
 * PlaceHold: the account re-checks against its own stream (the append's expected revision), so
 * concurrent admissions never over-commit; a refusal throws AdmissionRefusedError.
 */
export function placeHold(invocationId: string, credits: number, at: string, gateway?: HoldOfGatewayCall): AccountCommand {
  return { type: 'PlaceHold', data: { invocationId, credits, placedAt: at, ...gateway } };
}

/** Transition 1 or 2: the estimate refused for `refusal` (decideAdmission's, or the account's). */
export function refuseEstimate(refusal: AdmissionRefusal, at: string): InvocationCommand {
  return { type: 'RefuseInvocation', data: { ...refusal, refusedAt: at } };
}

/**
 * Transitions 3 and 4 in one append, after the hold: nothing happens between them that a crash could
 * lose, and nothing is sent upstream before both committed.
 */
export function reserveAndDispatch(at: string): readonly LifecycleStep[] {
  return [
    { type: 'ReserveInvocation', data: { reservedAt: at } },
    { type: 'DispatchInvocation', data: { dispatchedAt: at } },
  ];
}

/** How a conversation ended, with its figures (a ToolLoopResult is one; `oneAttemptEnd` makes one). */
export interface ConversationEnd extends ConversationReport {
  readonly outcome: Outcome;
  readonly endingLimit?: EndingLimit;
  /** The fault a `failed` conversation ended with (server_error when none is known). */
  readonly faultClassification?: FaultClass;
}

/** Transition 5 or 6: the result, with its figures. */
export function closeConversation(end: ConversationEnd, at: string): InvocationCommand {
  const figures: ConversationReport = {
    turnsUsed: end.turnsUsed,
    toolCallsUsed: end.toolCallsUsed,
    spentCredits: end.spentCredits,
    attemptCount: end.attemptCount,
    usageTotals: end.usageTotals,
    usageReported: end.usageReported,
  };
  if (end.outcome === 'failed') return { type: 'FailInvocation', data: { ...figures, fault: end.faultClassification ?? 'server_error', failedAt: at } };
  return {
    type: 'CompleteInvocation',
    data: { ...figures, outcome: end.outcome, ...(end.endingLimit === undefined ? {} : { endingLimit: end.endingLimit }), completedAt: at },
  };
}

/**
 * A transport's one attempt (a gateway call, a batch request) as a conversation's end: one turn, no
 * tool call, its price spent; `fault` fails it, else it completed. Usage totals keep the counts only
 * (the served mode stays on the attempt).
 */
export function oneAttemptEnd(priceCredits: number, usage: Usage | undefined, fault?: FaultClass): ConversationEnd {
  return {
    outcome: fault === undefined ? 'completed' : 'failed',
    ...(fault === undefined ? {} : { faultClassification: fault }),
    turnsUsed: 1,
    toolCallsUsed: 0,
    spentCredits: priceCredits,
    attemptCount: 1,
    usageTotals: usage === undefined ? NO_USAGE : countsOf(usage),
    usageReported: usage !== undefined,
  };
}

/**
 * Transition 7 when a completed result reported no usage (dated `pendingAt`, or as the state says),
 * then settlement (8–14): the decider picks the transition and the charge.
 */
export function settlement(settle: SettleInvocation['data'], pendingAt: string | ((state: InvocationState) => string | undefined) = settle.settledAt): LifecycleStep[] {
  return [
    (current) => {
      if (current.status !== 'completed' || !isUnmeasured(current)) return undefined;
      const at = typeof pendingAt === 'string' ? pendingAt : pendingAt(current);
      return at === undefined ? undefined : { type: 'MarkInvocationPending', data: { pendingAt: at } };
    },
    { type: 'SettleInvocation', data: settle },
  ];
}

/**
 * The conversation's result and its settlement in one append (5/6, 7, 8/9/10): no crash can leave a
 * result unsettled. `attempt`: a transport's one attempt, recorded in the same append.
 */
export function closeAndSettle(end: ConversationEnd, at: string, attempt?: AttemptRecord): LifecycleStep[] {
  return [
    ...(attempt === undefined ? [] : [{ type: 'RecordAttempt', data: attempt } as const]),
    closeConversation(end, at),
    ...settlement({ by: 'runtime', settledAt: at }),
  ];
}

/**
 * SettleHold: releases the hold and the slot and charges what the invocation settled at (docs/lifecycle.md
 * step 9); 0 when it has no settlement.
 */
export function settleHold(
  invocationId: string,
  settled: { readonly settlement?: { readonly chargeCredits: number } },
  at: string,
  by?: HoldSettler,
  /** A gateway call's reported tokens, which true up its key's minute (docs/gateway.md "Rate limits"). */
  reportedTokens?: number,
): AccountCommand {
  const trueUp = reportedTokens === undefined ? {} : { reportedTokens };
  return { type: 'SettleHold', data: { invocationId, chargeCredits: settled.settlement?.chargeCredits ?? 0, settledAt: at, ...(by === undefined ? {} : { by }), ...trueUp } };
}

function countsOf(usage: Usage): Usage {
  const { serviceTier: _t, speed: _s, inferenceGeo: _g, ...counts } = usage as Usage & { serviceTier?: string; speed?: string; inferenceGeo?: string };
  return counts as Usage;
}
