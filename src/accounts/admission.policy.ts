/**
 * Admission (docs/lifecycle.md "What one run does", step 3) as pure functions: the account's own checks
 * (`admit`) and the full order with the catalog's (`decideAdmission`). Each refusal carries the figures
 * an explanation shows.
 */
import type { Publication } from '../catalog/operation.events';
import { DomainError } from '../domain/domain.errors';
import { MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_OVERRUN_CREDITS } from './account.bounds';
import type { HoldGatewayKey } from './account.events';
import { AccountState, availableCredits, committedCredits, keyCallsInFlight, keySpend, runningCount, teamSpend } from './account.state';
import { KEY_CONCURRENCY_RETRY_AFTER_SECONDS, type GatewayKey, type KeyRateLimit, type SpendPeriod } from './gateway-keys';
import { isoToMs } from '../domain/field-checks';

/**
 * Refusals of the access check: docs/lifecycle.md transition 1. For a gateway call whose key changed
 * after it was checked and before its hold was placed (docs/gateway.md "Admission"): `key_revoked`
 * (revoked), `key_model_not_allowed` (its models no longer include the call's), `key_max_tokens` (its
 * cap fell below the call's `max_tokens`), `key_expired` (the key reached its `expiresAt`, or the
secret presented was rotated away and its grace has ended), `key_worst_case_tokens` (its
 * `tokensPerMinute` fell below the call's worst-case tokens: no minute could ever admit it).
 */
export const ACCESS_REFUSAL_REASONS = ['ai_disabled', 'operation_disabled', 'unknown_operation', 'key_revoked', 'key_model_not_allowed', 'key_max_tokens', 'key_expired', 'key_worst_case_tokens'] as const;
/**
 * Refusals for want of credits or a slot, or a gateway team's or key's limit (`team_spend_limit`,
 * `key_spend_limit`, or a key's rate limit: `key_rate_limit`), or because the hold and its
 * settlement's room would not fit in the exact-integer range (`ledger_totals_bound`):
 * docs/lifecycle.md transition 2.
 */
export const CAPACITY_REFUSAL_REASONS = ['insufficient_credits', 'team_spend_limit', 'key_spend_limit', 'key_rate_limit', 'no_running_slot', 'ledger_totals_bound'] as const;
export const ADMISSION_REFUSAL_REASONS = [...ACCESS_REFUSAL_REASONS, ...CAPACITY_REFUSAL_REASONS] as const;
export type AdmissionRefusalReason = (typeof ADMISSION_REFUSAL_REASONS)[number];

/**
 * The HTTP status each refusal answers a gateway caller with (docs/gateway.md "Admission"): 402 for
 * money (the organization's or the key's), 429 for a slot, 403 for AI off or a model the key may not
 * use, 401 for a revoked key, 400 for a `max_tokens` over the key's cap or a worst case over its
 * `tokensPerMinute` (a retry could never be admitted, so it is not a 429). The explanation quotes it.
 */
export const GATEWAY_STATUS_OF_REFUSAL = {
  ai_disabled: 403,
  unknown_operation: 404,
  operation_disabled: 404,
  insufficient_credits: 402,
  key_spend_limit: 402,
  team_spend_limit: 402,
  key_revoked: 401,
  key_model_not_allowed: 403,
  key_max_tokens: 400,
  key_expired: 401,
  key_worst_case_tokens: 400,
  key_rate_limit: 429,
  no_running_slot: 429,
  ledger_totals_bound: 402,
} as const satisfies Readonly<Record<AdmissionRefusalReason, number>>;

/** A refusal and the figures behind it, as recorded in InvocationRefused. Plain JSON. */
export type AdmissionRefusal =
  | { readonly reason: 'ai_disabled'; readonly figures: { readonly aiEnabled: false } }
  | { readonly reason: 'unknown_operation'; readonly figures: { readonly publishedVersions: 0 } }
  | { readonly reason: 'operation_disabled'; readonly figures: { readonly version: number; readonly enabled: false } }
  | { readonly reason: 'insufficient_credits'; readonly figures: { readonly available: number; readonly creditHold: number } }
  | { readonly reason: 'no_running_slot'; readonly figures: { readonly running: number; readonly maxRunning: number } }
  | { readonly reason: 'ledger_totals_bound'; readonly figures: LedgerTotalsBoundFigures }
  | { readonly reason: 'key_spend_limit'; readonly figures: KeySpendFigures }
  | { readonly reason: 'team_spend_limit'; readonly figures: TeamSpendFigures }
  | { readonly reason: 'key_revoked'; readonly figures: { readonly keyId: string } }
  | { readonly reason: 'key_model_not_allowed'; readonly figures: { readonly keyId: string; readonly model: string } }
  | { readonly reason: 'key_max_tokens'; readonly figures: { readonly keyId: string; readonly maxTokens: number; readonly maxOutputTokens: number } }
  | { readonly reason: 'key_expired'; readonly figures: KeyExpiredFigures }
  | { readonly reason: 'key_worst_case_tokens'; readonly figures: KeyWorstCaseTokensFigures }
  | { readonly reason: 'key_rate_limit'; readonly figures: KeyRateFigures };

/** The instant the key (or, `rotated`, the secret presented, rotated away) stopped working. */
// A type, not an interface: it is read as a plain record of figures (the console shows them so).
export type KeyExpiredFigures = { readonly keyId: string; readonly expiredAt: string; readonly rotated: boolean };

/**
 * A call whose worst case alone is over its key's `tokensPerMinute`: `worstCaseTokens >
 * tokensPerMinute`, whatever the minute counts, so no retry could be admitted.
 */
// A type, not an interface: it is read as a plain record of figures (the console shows them so).
export type KeyWorstCaseTokensFigures = { readonly keyId: string; readonly maxTokens: number; readonly worstCaseTokens: number; readonly tokensPerMinute: number };

/**
 * A key's rate limit against a call: `counted + asked > allowed`. `maxConcurrent` counts calls in
 * flight and asks 1 (a Message Batch is one hold in flight); `requestsPerMinute` counts requests
 * admitted in `minute` and asks 1 (a Message Batch its request count);
 * `tokensPerMinute` counts their tokens and asks the call's worst case. `retryAfterSeconds` is when
 * the minute rolls over, or KEY_CONCURRENCY_RETRY_AFTER_SECONDS for calls in flight.
 */
// A type, not an interface: it is read as a plain record of figures (the console shows them so).
export type KeyRateFigures = {
  readonly keyId: string;
  readonly limit: KeyRateLimit;
  readonly allowed: number;
  readonly counted: number;
  readonly asked: number;
  /** The UTC minute counted (`2026-12-03T20:44`); absent for `maxConcurrent`. */
  readonly minute?: string;
  readonly retryAfterSeconds: number;
};

/**
 * Why a hold was refused at the exact-integer bound: `committedCredits + creditHold + overrunRoomCredits
 * > maxTotalCredits` (charged, held and each running invocation's room, then this hold and its room).
 */
// A type, not an interface: it is read as a plain record of figures (the console shows them so).
export type LedgerTotalsBoundFigures = {
  readonly committedCredits: number;
  readonly creditHold: number;
  readonly overrunRoomCredits: number;
  readonly maxTotalCredits: number;
};



/** A spend limit's figures in a period: a key's, or a team's (what its keys spent and hold). */
export type SpendLimitFigures = Pick<KeySpendFigures, 'limitCredits' | 'spentCredits' | 'heldCredits'>;

/**
 * What a gateway key's or team's limit leaves for a new hold, in credits: `limitCredits −
 * spentCredits − heldCredits` (negative when spent and held are over it). A larger hold is refused.
 */
export function spendLimitLeft(figures: SpendLimitFigures): number {
  return figures.limitCredits - figures.spentCredits - figures.heldCredits;
}

/** What a refusal says remains of the limit: spendLimitLeft, never below 0. */
export function spendLimitRemaining(figures: SpendLimitFigures): number {
  return Math.max(0, spendLimitLeft(figures));
}

/** A gateway key's limit against a call's hold: refused when `spendLimitLeft < creditHold`. */
// A type, not an interface: it is read as a plain record of figures (the console shows them so).
export type KeySpendFigures = {
  readonly keyId: string;
  readonly limitCredits: number;
  readonly period: SpendPeriod;
  /** The period counted: `2026-12-01`, `2026-W49`, `2026-12` or `total`. */
  readonly periodStart: string;
  readonly spentCredits: number;
  readonly heldCredits: number;
  readonly creditHold: number;
};

/** A gateway team's limit against a call's hold (docs/gateway.md "Teams"): the same test as a key's. */
// A type, not an interface: it is read as a plain record of figures (the console shows them so).
export type TeamSpendFigures = KeySpendFigures & { readonly teamId: string; readonly teamName: string };

/** The refusals an account can decide alone. */
export type AccountRefusal = Extract<
  AdmissionRefusal,
  {
    reason:
      | 'ai_disabled'
      | 'insufficient_credits'
      | 'no_running_slot'
      | 'key_spend_limit'
      | 'team_spend_limit'
      | 'key_rate_limit'
      | 'ledger_totals_bound'
      | 'key_model_not_allowed'
      | 'key_max_tokens'
      | 'key_expired'
      | 'key_worst_case_tokens';
  }
>;

export type AdmissionDecision = { readonly admitted: true } | ({ readonly admitted: false } & AdmissionRefusal);
export type AccountAdmission = { readonly admitted: true } | ({ readonly admitted: false } & AccountRefusal);

/**
 * The account's checks, in the order docs/lifecycle.md gives: the organization switch, then credits
 * (`available < creditHold`; exactly enough is enough), then a gateway call's team limit and key limit
 * (what the team's keys, then the key, spent and hold in the period, plus this hold, within the limit),
 * then the key's rate limits (keyRateRefusal), then a slot (`running >=
 * maxRunning`), then the bound: the hold and the room its settlement may need past it must fit under
 * MAX_ACCOUNT_TOTAL_CREDITS beside everything already committed, so that settling it can never leave
 * the exact-integer range.
 */
export function admit(
  state: AccountState,
  { creditHold, gatewayKey, at }: { readonly creditHold: number; readonly gatewayKey?: HoldGatewayKey; readonly at?: string },
): AccountAdmission {
  if (!state.aiEnabled) return { admitted: false, reason: 'ai_disabled', figures: { aiEnabled: false } };
  const available = availableCredits(state);
  if (available < creditHold) {
    return { admitted: false, reason: 'insufficient_credits', figures: { available, creditHold } };
  }
  const limited = gatewayKey === undefined || at === undefined ? undefined : gatewayLimitRefusal(state, gatewayKey, creditHold, at);
  if (limited !== undefined) return limited;
  const key = gatewayKey === undefined ? undefined : state.gatewayKeys.get(gatewayKey.keyId);
  const rate = key === undefined || gatewayKey === undefined || at === undefined ? undefined : keyRateRefusal(state, key, gatewayKey, at);
  if (rate !== undefined) return { admitted: false, reason: 'key_rate_limit', figures: rate };
  const running = runningCount(state);
  if (running >= state.maxRunning) {
    return { admitted: false, reason: 'no_running_slot', figures: { running, maxRunning: state.maxRunning } };
  }
  const committed = committedCredits(state);
  // Compared as a sum, not a difference: rounding is monotonic, so a sum past the bound reads as past it.
  if (committed + creditHold + MAX_HOLD_OVERRUN_CREDITS > MAX_ACCOUNT_TOTAL_CREDITS) return totalsBoundRefusal(committed, creditHold);
  return { admitted: true };
}

/**
 * A gateway call's team limit, then its key's (docs/gateway.md "Teams"): what the team's keys (the
 * key's) spent and hold in the period, plus this hold, within the limit. A limit of 0 refuses every
 * hold but an empty one.
 */
function gatewayLimitRefusal(state: AccountState, gatewayKey: HoldGatewayKey, creditHold: number, at: string): ({ readonly admitted: false } & AccountRefusal) | undefined {
  const team = gatewayKey.team === undefined ? undefined : state.gatewayTeams.get(gatewayKey.team.teamId);
  if (team?.spendLimit !== undefined) {
    const { period, spent, held } = teamSpend(state, team, at);
    const figures = { teamId: team.teamId, teamName: team.name, keyId: gatewayKey.keyId, limitCredits: team.spendLimit.credits, period: team.spendLimit.period, periodStart: period, spentCredits: spent, heldCredits: held, creditHold };
    if (spendLimitLeft(figures) < creditHold) return { admitted: false, reason: 'team_spend_limit', figures };
  }
  const key = state.gatewayKeys.get(gatewayKey.keyId);
  if (key?.spendLimit !== undefined) {
    const { period, spent, held } = keySpend(state, key, at);
    const figures = { keyId: key.keyId, limitCredits: key.spendLimit.credits, period: key.spendLimit.period, periodStart: period, spentCredits: spent, heldCredits: held, creditHold };
    if (spendLimitLeft(figures) < creditHold) return { admitted: false, reason: 'key_spend_limit', figures };
  }
  return undefined;
}

/**
 * The first of the key's rate limits this call would cross (docs/gateway.md "Rate limits"): calls in
 * flight, then calls admitted in the call's UTC minute, then their tokens with this call's worst case.
 * Only the key's latest minute is counted; a later minute starts at 0.
 */
export function keyRateRefusal(state: AccountState, key: GatewayKey, call: HoldGatewayKey, at: string): KeyRateFigures | undefined {
  if (key.maxConcurrent !== undefined) {
    const inFlight = keyCallsInFlight(state, key.keyId);
    if (inFlight + 1 > key.maxConcurrent) {
      return { keyId: key.keyId, limit: 'maxConcurrent', allowed: key.maxConcurrent, counted: inFlight, asked: 1, retryAfterSeconds: KEY_CONCURRENCY_RETRY_AFTER_SECONDS };
    }
  }
  if (call.minute === undefined) return undefined;
  const counted = key.rateMinute?.minute === call.minute ? key.rateMinute : { requests: 0, tokens: 0 };
  // Whole seconds until the minute rolls over, at least 1 (a refusal at :59.5 waits one second).
  const retryAfterSeconds = Math.max(1, Math.ceil((isoToMs(`${call.minute}:00.000Z`) + 60_000 - isoToMs(at)) / 1_000));
  const minute = { keyId: key.keyId, minute: call.minute, retryAfterSeconds };
  const requests = call.requests ?? 1;
  if (key.requestsPerMinute !== undefined && counted.requests + requests > key.requestsPerMinute) {
    return { ...minute, limit: 'requestsPerMinute', allowed: key.requestsPerMinute, counted: counted.requests, asked: requests };
  }
  const tokens = call.tokens ?? 0;
  if (key.tokensPerMinute !== undefined && counted.tokens + tokens > key.tokensPerMinute) {
    return { ...minute, limit: 'tokensPerMinute', allowed: key.tokensPerMinute, counted: counted.tokens, asked: tokens };
  }
  return undefined;
}

/** Which of a key's rate limits the call would cross, with its figures (`number` formats them). */
export function rateLimitClause(figures: KeyRateFigures, number: (amount: number) => string): string {
  const { keyId, allowed, counted, asked } = figures;
  switch (figures.limit) {
    case 'maxConcurrent':
      return `key ${keyId} may have ${number(allowed)} calls in flight and has ${number(counted)}`;
    case 'requestsPerMinute':
      return `key ${keyId} may have ${number(allowed)} calls admitted per minute and had ${number(counted)} in ${figures.minute} UTC${asked > 1 ? `, and this batch's ${number(asked)} requests would pass it` : ''}`;
    case 'tokensPerMinute':
      return `key ${keyId} may have ${number(allowed)} tokens per minute; its calls in ${figures.minute} UTC count ${number(counted)}, and this call's worst case of ${number(asked)} would pass it`;
  }
}

/** The `ledger_totals_bound` refusal of a hold of `creditHold` on an account with `committed` credits. */
export function totalsBoundRefusal(committed: number, creditHold: number): { readonly admitted: false } & AccountRefusal {
  return {
    admitted: false,
    reason: 'ledger_totals_bound',
    // Only a log already past the range commits more than the bound; the figure then says the bound.
    figures: { committedCredits: Math.min(committed, MAX_ACCOUNT_TOTAL_CREDITS), creditHold, overrunRoomCredits: MAX_HOLD_OVERRUN_CREDITS, maxTotalCredits: MAX_ACCOUNT_TOTAL_CREDITS },
  };
}

/**
 * All of admission (docs/lifecycle.md "What one run does", step 3) for a request resolved against
 * `publication` (undefined when the operation was never published), first refusal wins:
 * 1. `ai_disabled` — the organization's switch comes first: an organization with AI off is told so
 *    whatever it asked for, and learns nothing about the catalog;
 * 2. `unknown_operation`, then `operation_disabled` — these two exclude each other (an unknown
 *    operation has no switch), so their order only fixes which check reads first;
 * 3. `insufficient_credits`; 4. `no_running_slot`; 5. `ledger_totals_bound`.
 */
export function decideAdmission(account: AccountState, publication: Publication | undefined): AdmissionDecision {
  if (!account.aiEnabled) return { admitted: false, reason: 'ai_disabled', figures: { aiEnabled: false } };
  if (publication === undefined) {
    return { admitted: false, reason: 'unknown_operation', figures: { publishedVersions: 0 } };
  }
  if (!publication.enabled) {
    return { admitted: false, reason: 'operation_disabled', figures: { version: publication.version, enabled: false } };
  }
  return admit(account, { creditHold: publication.creditHold });
}

/** PlaceHold refused because the account cannot admit it now; carries the refusal to record. */
export class AdmissionRefusedError extends DomainError {
  override readonly name = 'AdmissionRefusedError';

  constructor(readonly refusal: AccountRefusal) {
    super('admission_refused', `admission refused: ${refusal.reason} ${JSON.stringify(refusal.figures)}`);
  }
}

/** The refusal of a refused decision, without the `admitted` flag: what InvocationRefused records. */
export function refusalOf<R extends AdmissionRefusal>(decision: { readonly admitted: false } & R): R {
  return { reason: decision.reason, figures: decision.figures } as R;
}
