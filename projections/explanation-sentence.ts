/**
 * The sentence of an explanation (docs/http.md, `GET …/explanation`): built from the view's figures
 * only, so a rebuild writes the same words and a reader can check every number in it against the
 * structured fields beside it. Integers are printed plainly (no locale grouping), which keeps the text
 * deterministic.
 */
import { rateLimitClause, type KeyExpiredFigures } from '../src/accounts/admission.policy';
import type { RecoveryGround, SettlementTransition } from '../src/invocations/invocation.events';
import { isRetryable, type FaultClass } from '../src/runtime/faults';
import { spendLimitRemaining } from '../src/accounts/admission.policy';
import type { ExplanationFigures, ExplanationRefusal } from './explanation.view';

/** What each provider fault means to a reader of a `failed` explanation. */
export const FAULT_WORDING: Readonly<Record<FaultClass, string>> = {
  timeout: 'provider attempts timed out',
  rate_limited: 'the provider rate-limited the requests',
  credit_exhausted: "the provider account's credit is exhausted",
  overloaded: 'the provider was overloaded',
  server_error: 'the provider returned server errors',
  connection: 'the connection to the provider failed',
  conflict: 'the provider reported a conflict',
  malformed_request: 'the provider rejected the request as malformed',
  unauthorized: 'the provider refused our credentials',
  cancelled: 'the provider call was cancelled',
};

/** The explanation's sentence for these figures. */
export function explanationSentence(view: ExplanationFigures): string {
  if (view.refusal !== undefined) return refusalSentence(view, view.refusal);
  switch (view.state) {
    case 'estimated':
      return view.publicationVersion === undefined
        ? `Estimated: awaiting admission; ${view.operationId} has no published version.`
        : `Estimated: awaiting admission for a ${view.credits.hold}-credit hold (${view.operationId} v${view.publicationVersion}).`;
    case 'reserved':
      return `Reserved: ${credits(view.credits.hold)} and a running slot held; not yet dispatched.`;
    case 'dispatched':
      return `In flight: ${turns(view)} started; ${spent(view)}; ${retries(view)} so far.`;
    case 'completed':
    case 'failed':
      return `${outcomeSentence(view)} Awaiting settlement.`;
    case 'pending':
      return `${outcomeSentence(view)} Pending: no attempt reported usage, so it will be charged its ${view.credits.hold}-credit estimate.`;
    case 'settled':
      return [settledBeforeSentence(view), settlementSentence(view), holdReleaseSentence(view)].filter((part) => part !== '').join(' ');
    case 'refused':
      // A refused state always carries its refusal; reaching here means the log said otherwise.
      return 'Refused.';
  }
}

/**
 * One wording per refusal reason (docs/lifecycle.md "What one run does", step 3), naming the figures
 * behind it.
 */
function refusalSentence(view: ExplanationFigures, refusal: ExplanationRefusal): string {
  switch (refusal.reason) {
    case 'ai_disabled':
      return `Refused: ai_disabled — AI is switched off for organization ${view.organizationId}.`;
    case 'unknown_operation':
      return `Refused: unknown_operation — ${view.operationId} has no published version.`;
    case 'operation_disabled':
      return `Refused: operation_disabled — ${view.operationId} v${refusal.figures.version} is published as disabled.`;
    case 'insufficient_credits':
      return `Refused: insufficient_credits — available ${refusal.figures.available} < hold ${refusal.figures.creditHold}.`;
    case 'no_running_slot':
      return `Refused: no_running_slot — running ${refusal.figures.running} of ${refusal.figures.maxRunning}.`;
    case 'ledger_totals_bound': {
      const { committedCredits, creditHold, overrunRoomCredits, maxTotalCredits } = refusal.figures;
      return `Refused: ledger_totals_bound — committed ${committedCredits} + hold ${creditHold} + settlement room ${overrunRoomCredits} > ${maxTotalCredits}, the exact-integer bound of the account's totals.`;
    }
    case 'key_revoked':
      return `Refused: key_revoked — key ${refusal.figures.keyId} was revoked before the hold was placed.`;
    case 'key_model_not_allowed':
      return `Refused: key_model_not_allowed — key ${refusal.figures.keyId} no longer allowed ${refusal.figures.model} when the hold was to be placed.`;
    case 'key_max_tokens':
      return `Refused: key_max_tokens — key ${refusal.figures.keyId} allowed max_tokens up to ${refusal.figures.maxOutputTokens} when the hold was to be placed; the call asked for ${refusal.figures.maxTokens}.`;
    case 'key_spend_limit': {
      const key = refusal.figures;
      const period = key.period === 'total' ? 'in total' : `in ${key.periodStart} (UTC ${key.period})`;
      return `Refused: key_spend_limit — key ${key.keyId} may spend ${key.limitCredits} credits ${period}; it spent ${key.spentCredits} and holds ${key.heldCredits}, so ${spendLimitRemaining(key)} remain < hold ${key.creditHold}.`;
    }
    case 'team_spend_limit': {
      const team = refusal.figures;
      const period = team.period === 'total' ? 'in total' : `in ${team.periodStart} (UTC ${team.period})`;
      return `Refused: team_spend_limit — team ${team.teamId} of key ${team.keyId} may spend ${team.limitCredits} credits ${period}; its keys spent ${team.spentCredits} and hold ${team.heldCredits}, so ${spendLimitRemaining(team)} remain < hold ${team.creditHold}.`;
    }
    case 'key_expired':
      return `Refused: key_expired — ${expiredClause(refusal.figures)}.`;
    case 'key_rate_limit':
      return `Refused: key_rate_limit — ${rateLimitClause(refusal.figures, String)}.`;
    case 'key_worst_case_tokens':
      return `Refused: key_worst_case_tokens — key ${refusal.figures.keyId} allowed ${refusal.figures.tokensPerMinute} tokens per minute when the hold was to be placed; the call's worst case was ${refusal.figures.worstCaseTokens} (max_tokens ${refusal.figures.maxTokens}).`;
  }
}

/** One wording per outcome of docs/rules.md: what ended the conversation, then every figure it reports. */
export function outcomeSentence(view: ExplanationFigures): string {
  const limit = view.endingLimit;
  const source = limit === undefined ? '' : ` (${limit.name} of ${limit.operationId} v${limit.publicationVersion})`;
  switch (view.outcome) {
    case 'completed':
      return `Completed: answer accepted after ${turns(view)}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'turn_limit':
      return `Ended by turn_limit: used ${count(view.turns.used, limit?.value ?? view.turns.limit, 'turn')}${source}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'tool_limit':
      return `Ended by tool_limit: used ${count(view.toolCalls.used, limit?.value ?? view.toolCalls.limit, 'tool call')} and the next batch asked for more${source}; ${turns(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'credit_limit':
      return `Ended by credit_limit: spent ${view.credits.spent}, more than the ${limit?.value ?? view.credits.hold}-credit hold${source}; ${turns(view)}; ${toolCalls(view)}; ${retries(view)}.`;
    case 'time_limit':
      return `Ended by time_limit: the ${limit === undefined ? '' : `${limit.value} ms `}conversation time ran out${source}; ${turns(view)}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'refused_by_model':
      return `Ended by refused_by_model: the model declined to answer; ${turns(view)}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'incomplete':
      return `Ended incomplete: the model's output was cut off at its token limit before an accepted answer; ${turns(view)}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'protocol_error':
      return `Ended by protocol_error: the model asked for a tool batch that could not run safely (a repeated call id, or a write tool batched with others), so none of it ran; ${turns(view)}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'cancelled':
      return `Cancelled: ${view.cancellation === undefined ? 'the caller cancelled the request' : `${view.cancellation.requestedBy} asked at ${view.cancellation.requestedAt} to stop it`}; ${turns(view)}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case 'failed':
      return `Failed: ${faultClause(view.fault)}; ${turns(view)}; ${toolCalls(view)}; ${spent(view)}; ${retries(view)}.`;
    case undefined:
      return '';
  }
}

function faultClause(fault: FaultClass | undefined): string {
  if (fault === undefined) return 'the provider failed';
  const retried = isRetryable(fault) ? 'and retries ran out' : 'which is not retried';
  return `${fault} — ${FAULT_WORDING[fault]}, ${retried}`;
}

/** What happened before a settlement: the outcome, or how far a conversation the sweep stopped had got. */
function settledBeforeSentence(view: ExplanationFigures): string {
  if (view.outcome !== undefined) return outcomeSentence(view);
  const transition = view.settlement?.transition;
  // 11 and 14 close a dispatched conversation; 12 and 13 one that never sent anything.
  if (transition === 11 || transition === 14) return `Stopped in flight after ${turns(view)}; ${spent(view)}; ${retries(view)}.`;
  return '';
}

const SETTLEMENT_WORDING: Readonly<Record<SettlementTransition, (charge: string) => string>> = {
  8: (charge) => `charged ${charge}, the sum of its attempt prices.`,
  9: (charge) => `no attempt reported usage, so charged the estimate, ${charge}.`,
  10: (charge) => `charged ${charge} for its billed attempts.`,
  11: (charge) => `an error escaped the conversation, so charged the estimate, ${charge}.`,
  12: (charge) => `abandoned before admission; nothing was sent and ${charge} charged.`,
  13: (charge) => `abandoned while reserved; nothing was sent, the hold was released and ${charge} charged.`,
  14: (charge) => `abandoned in flight; its real cost was never learned, so charged the estimate, ${charge}.`,
};

/**
 * Why recovery ran, for a request with no owner on record (a log written before owners were): the
 * process running it was gone (restarted, or killed and not back).
 */
const RECOVERY_CAUSE = 'after a restart or a lost process';

/**
 * Why the sweep or recovery settled what a lease owned (src/invocations/invocation-ownership.ts): the
 * instance that ran it stopped renewing its lease, or it outlived its deadline on a live one.
 */
export function recoveryGroundClause(ground: RecoveryGround): string {
  if (ground.because === 'lease_expired') return `the instance that ran it stopped: its lease expired at ${ground.leaseLapsedAt}`;
  const pastBy = ground.pastByMs < 1_000 ? `${ground.pastByMs} ms` : `${Math.floor(ground.pastByMs / 1_000)} s`;
  return `it passed its deadline (${ground.deadlineAt}) by ${pastBy}`;
}

function settlementSentence(view: ExplanationFigures): string {
  const settlement = view.settlement;
  if (settlement === undefined) return '';
  const wording = SETTLEMENT_WORDING[settlement.transition](credits(settlement.chargeCredits));
  if (settlement.recovery !== undefined) {
    const by = settlement.by === 'recovery' ? 'recovery' : 'the sweep';
    return `Settled by ${by} because ${recoveryGroundClause(settlement.recovery)} (transition ${settlement.transition}): ${wording}`;
  }
  if (settlement.by === 'recovery') return `Settled by recovery ${RECOVERY_CAUSE} (transition ${settlement.transition}): ${wording}`;
  return `Settled (transition ${settlement.transition}, by ${settlement.by}): ${wording}`;
}

/** A hold released by the sweep or recovery after the invocation's own run settled it and was cut off. */
function holdReleaseSentence(view: ExplanationFigures): string {
  const release = view.holdRelease;
  if (release === undefined) return '';
  const by = release.by === 'recovery' ? `recovery ${RECOVERY_CAUSE}` : 'the sweep';
  return `Its ${release.heldCredits}-credit hold was released by ${by}.`;
}

function turns(view: ExplanationFigures): string {
  return count(view.turns.used, view.turns.limit, 'turn');
}

function toolCalls(view: ExplanationFigures): string {
  return count(view.toolCalls.used, view.toolCalls.limit, 'tool call');
}

function spent(view: ExplanationFigures): string {
  return `spent ${view.credits.spent} of a ${view.credits.hold}-credit hold`;
}

function retries(view: ExplanationFigures): string {
  if (view.retries === 0) return 'no retries';
  return view.retries === 1 ? '1 retry' : `${view.retries} retries`;
}

function credits(amount: number): string {
  return amount === 1 ? '1 credit' : `${amount} credits`;
}

/** `2 of 10 tool calls`, or `2 tool calls` when no limit is known; the noun agrees with the last number. */
function count(used: number, limit: number | undefined, noun: string): string {
  if (limit === undefined) return `${used} ${used === 1 ? noun : `${noun}s`}`;
  return `${used} of ${limit} ${limit === 1 ? noun : `${noun}s`}`;
}

/** Why a key stopped working before the hold: it expired, or the secret presented was rotated away. */
export function expiredClause(figures: KeyExpiredFigures): string {
  return figures.rotated
    ? `the secret presented for key ${figures.keyId} was rotated away, and its grace ended at ${figures.expiredAt}, so nothing was held or sent upstream`
    : `key ${figures.keyId} expired at ${figures.expiredAt}, so nothing was held or sent upstream`;
}
