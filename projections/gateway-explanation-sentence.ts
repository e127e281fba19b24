/**
 * The sentence of a gateway call's explanation (docs/gateway.md): it reads like an operation's, but
 * in the gateway's terms: the key, the model, Anthropic's usage, the hold and the charge. Built from
 * the view's figures only, as explanation-sentence.ts is; numbers are grouped by thousands with a
 * fixed rule (no locale), so a rebuild writes the same words.
 */
import { GATEWAY_STATUS_OF_REFUSAL, spendLimitRemaining } from '../src/accounts/admission.policy';
import type { ExplanationFigures, ExplanationGateway, ExplanationRefusal } from './explanation.view';
import { rateLimitClause } from '../src/accounts/admission.policy';
import { expiredClause, FAULT_WORDING, recoveryGroundClause } from './explanation-sentence';


/** The explanation's sentence for a gateway call's figures. */
export function gatewaySentence(view: ExplanationFigures, gateway: ExplanationGateway): string {
  // The name is quoted as JSON: a name holding quotes or line breaks cannot run into the rest.
  const call = `Gateway call by key ${JSON.stringify(gateway.keyName)} to ${gateway.model}`;
  const hold = grouped(view.credits.hold);
  if (view.refusal !== undefined) return `${call} refused (${GATEWAY_STATUS_OF_REFUSAL[view.refusal.reason]} ${view.refusal.reason}): ${refusalClause(view, view.refusal)}.`;
  switch (view.state) {
    case 'estimated':
      return `${call}: awaiting admission for a ${hold}-credit hold.`;
    case 'reserved':
      return `${call}: ${hold} credits held; not yet sent upstream.`;
    case 'dispatched':
      return `${call}: in flight${gateway.stream ? ', streamed' : ''}, holding ${hold} credits.`;
    case 'completed':
    case 'failed':
      return `${call}${failure(view, gateway)}: ${usageClause(gateway)}; held ${hold}; awaiting settlement.`;
    case 'pending':
      return `${call}: ${unmeasured(gateway)}, so it will be charged its ${hold}-credit hold.`;
    case 'settled':
      return settledSentence(call, view, gateway);
    case 'refused':
      return `${call} refused.`;
  }
}

function settledSentence(call: string, view: ExplanationFigures, gateway: ExplanationGateway): string {
  const settlement = view.settlement;
  // A settled state always carries its settlement; reaching here means the log said otherwise.
  if (settlement === undefined) return `${call}: settled.`;
  const hold = grouped(view.credits.hold);
  const charged = grouped(settlement.chargeCredits);
  switch (settlement.transition) {
    case 8:
    case 10:
      if (settlement.overrunCredits !== undefined) {
        const priced = grouped(settlement.chargeCredits + settlement.overrunCredits);
        return `${call}${failure(view, gateway)}: ${usageClause(gateway)}, priced at ${priced}; held ${hold}, charged ${charged}; the ${grouped(settlement.overrunCredits)} credits over the hold are recorded as an overrun.`;
      }
      return `${call}${failure(view, gateway)}: ${usageClause(gateway)}; held ${hold}, charged ${charged}.`;
    case 9:
      return `${call}: ${unmeasured(gateway)}, so it was charged its ${hold}-credit hold.`;
    case 11:
      return `${call}: an error escaped the call's accounting, so it was charged its ${hold}-credit hold (settled by ${settlement.by}).`;
    case 12:
      return `${call}: abandoned before admission; nothing was sent upstream and ${charged} credits were charged (settled by ${settledBy(settlement)}).`;
    case 13:
      return `${call}: abandoned while held; nothing was sent upstream and the hold was released (settled by ${settledBy(settlement)}).`;
    case 14:
      // A log written before owners were recorded says only that the service stopped.
      if (settlement.recovery === undefined) {
        return `${call}: the service stopped while the call was in flight, so its usage was never learned and it was charged its ${hold}-credit hold (settled by ${settlement.by}).`;
      }
      return `${call}: ${recoveryGroundClause(settlement.recovery)} while the call was in flight, so its usage was never learned and it was charged its ${hold}-credit hold (settled by ${settlement.by}).`;
  }
}

/** Who settled it, and why when a lease owned it: `recovery, because the instance that ran it stopped: …`. */
function settledBy(settlement: NonNullable<ExplanationFigures['settlement']>): string {
  return settlement.recovery === undefined ? settlement.by : `${settlement.by}, because ${recoveryGroundClause(settlement.recovery)}`;
}

/** ` failed: overloaded — the provider was overloaded (HTTP 529)` for a failed call; nothing otherwise. */
function failure(view: ExplanationFigures, gateway: ExplanationGateway): string {
  if (view.outcome !== 'failed' || view.fault === undefined) return '';
  const status = gateway.httpStatus !== undefined && gateway.httpStatus >= 400 ? ` (HTTP ${gateway.httpStatus})` : '';
  return ` failed: ${view.fault} — ${FAULT_WORDING[view.fault]}${status}`;
}

/** Why a call had no usage to price: what its attempt says. */
function unmeasured(gateway: ExplanationGateway): string {
  if (gateway.malformedUsage !== undefined) return `the upstream reported malformed usage (${gateway.malformedUsage})`;
  if (gateway.timedOut === true) return 'it reached its time bound before its final usage was reported';
  if (gateway.classification !== undefined && gateway.classification !== 'ok') return `no usage was reported (${gateway.classification} — ${FAULT_WORDING[gateway.classification]})`;
  return 'no usage was reported';
}

/** `1,234 input and 56 output tokens`, with the cache kinds and web searches where there were any. */
function usageClause(gateway: ExplanationGateway): string {
  const usage = gateway.usage;
  if (usage === undefined) return 'no usage was reported';
  const tokens = [
    `${grouped(usage.inputTokens)} input`,
    ...(usage.cacheWriteTokens > 0 ? [`${grouped(usage.cacheWriteTokens)} cache-write`] : []),
    ...(usage.cacheWrite1hTokens > 0 ? [`${grouped(usage.cacheWrite1hTokens)} 1-hour cache-write`] : []),
    ...(usage.cacheReadTokens > 0 ? [`${grouped(usage.cacheReadTokens)} cache-read`] : []),
  ];
  const output = `${grouped(usage.outputTokens)} output tokens`;
  const searches = usage.webSearchRequests === 0 ? '' : `, ${grouped(usage.webSearchRequests)} web ${usage.webSearchRequests === 1 ? 'search' : 'searches'}`;
  return `${tokens.join(', ')} and ${output}${searches}`;
}

function refusalClause(view: ExplanationFigures, refusal: ExplanationRefusal): string {
  switch (refusal.reason) {
    case 'ai_disabled':
      return `AI is switched off for organization ${view.organizationId}`;
    case 'unknown_operation':
    case 'operation_disabled':
      return `${view.operationId} is not accepting calls`;
    case 'insufficient_credits':
      return `available ${grouped(refusal.figures.available)} < hold ${grouped(refusal.figures.creditHold)}`;
    case 'no_running_slot':
      return `running ${grouped(refusal.figures.running)} of ${grouped(refusal.figures.maxRunning)}`;
    case 'ledger_totals_bound':
      return `the account cannot hold ${grouped(refusal.figures.creditHold)} more credits within its exact-integer bound`;
    case 'key_revoked':
      return 'the key was revoked before the hold was placed, so nothing was held or sent upstream';
    case 'key_model_not_allowed':
      return `the key's models were changed before the hold was placed and no longer include ${refusal.figures.model}, so nothing was held or sent upstream`;
    case 'key_max_tokens':
      return `the key's max_tokens cap was lowered to ${grouped(refusal.figures.maxOutputTokens)} before the hold was placed, below the call's ${grouped(refusal.figures.maxTokens)}, so nothing was held or sent upstream`;
    case 'key_spend_limit': {
      const key = refusal.figures;
      const period = key.period === 'total' ? 'in total' : `in ${key.periodStart} (UTC ${key.period})`;
      const remaining = spendLimitRemaining(key);
      return `the key may spend ${grouped(key.limitCredits)} credits ${period}; it spent ${grouped(key.spentCredits)} and holds ${grouped(key.heldCredits)}, so ${grouped(remaining)} remain < hold ${grouped(key.creditHold)}`;
    }
    case 'team_spend_limit': {
      const team = refusal.figures;
      const period = team.period === 'total' ? 'in total' : `in ${team.periodStart} (UTC ${team.period})`;
      const remaining = spendLimitRemaining(team);
      return `the key's team ${JSON.stringify(team.teamName)} may spend ${grouped(team.limitCredits)} credits ${period}; its keys spent ${grouped(team.spentCredits)} and hold ${grouped(team.heldCredits)}, so ${grouped(remaining)} remain < hold ${grouped(team.creditHold)}`;
    }
    case 'key_expired':
      return expiredClause(refusal.figures);
    case 'key_rate_limit':
      return `${rateLimitClause(refusal.figures, grouped)}, so nothing was held or sent upstream`;
    case 'key_worst_case_tokens':
      return `the key's tokensPerMinute was lowered to ${grouped(refusal.figures.tokensPerMinute)} before the hold was placed, below the call's worst case of ${grouped(refusal.figures.worstCaseTokens)} tokens (max_tokens ${grouped(refusal.figures.maxTokens)}), so nothing was held or sent upstream`;
  }
}

/** `1234567` → `1,234,567`: digits grouped by thousands with a comma, the same on every machine. */
export function grouped(amount: number): string {
  return String(amount).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
