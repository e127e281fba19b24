/**
 * Admission (docs/lifecycle.md "What one run does", step 3) as pure functions: the account's own checks
 * (`admit`) and the full order with the catalog's (`decideAdmission`). Each refusal carries the figures
 * an explanation shows.
 */
import type { Publication } from '../catalog/operation.events';
import { DomainError } from '../domain/domain.errors';
import { MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_OVERRUN_CREDITS } from './account.bounds';
import type { HoldGatewayKey } from './account.events';
import { AccountState, availableCredits, committedCredits, keySpend, runningCount, teamSpend } from './account.state';
import type { SpendPeriod } from './gateway-keys';

/**
 * Refusals of the access check: docs/lifecycle.md transition 1. For a gateway call whose key changed
 * after it was checked and before its hold was placed (docs/gateway.md "Admission"): `key_revoked`
 * (revoked), `key_model_not_allowed` (its models no longer include the call's), `key_max_tokens` (its
 * cap fell below the call's `max_tokens`).
 */
export const ACCESS_REFUSAL_REASONS = ['ai_disabled', 'operation_disabled', 'unknown_operation', 'key_revoked', 'key_model_not_allowed', 'key_max_tokens'] as const;
/**
 * Refusals for want of credits or a slot, or a gateway team's or key's limit, or because the hold and its settlement's room would not fit
 * in the exact-integer range (`ledger_totals_bound`): docs/lifecycle.md transition 2.
 */
export const CAPACITY_REFUSAL_REASONS = ['insufficient_credits', 'team_spend_limit', 'key_spend_limit', 'no_running_slot', 'ledger_totals_bound'] as const;
export const ADMISSION_REFUSAL_REASONS = [...ACCESS_REFUSAL_REASONS, ...CAPACITY_REFUSAL_REASONS] as const;
export type AdmissionRefusalReason = (typeof ADMISSION_REFUSAL_REASONS)[number];

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
  | { readonly reason: 'key_max_tokens'; readonly figures: { readonly keyId: string; readonly maxTokens: number; readonly maxOutputTokens: number } };

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



/** A gateway key's limit against a call's hold: `limitCredits − spentCredits − heldCredits < creditHold`. */
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
  { reason: 'ai_disabled' | 'insufficient_credits' | 'no_running_slot' | 'key_spend_limit' | 'team_spend_limit' | 'ledger_totals_bound' | 'key_model_not_allowed' | 'key_max_tokens' }
>;

export type AdmissionDecision = { readonly admitted: true } | ({ readonly admitted: false } & AdmissionRefusal);
export type AccountAdmission = { readonly admitted: true } | ({ readonly admitted: false } & AccountRefusal);

/**
 * The account's checks, in the order docs/lifecycle.md gives: the organization switch, then credits
 * (`available < creditHold`; exactly enough is enough), then a gateway call's team limit and key limit
 * (what the team's keys, then the key, spent and hold in the period, plus this hold, within the limit), then a slot (`running >=
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
    if (team.spendLimit.credits - spent - held < creditHold) {
      const figures = { teamId: team.teamId, teamName: team.name, keyId: gatewayKey.keyId, limitCredits: team.spendLimit.credits, period: team.spendLimit.period, periodStart: period, spentCredits: spent, heldCredits: held, creditHold };
      return { admitted: false, reason: 'team_spend_limit', figures };
    }
  }
  const key = state.gatewayKeys.get(gatewayKey.keyId);
  if (key?.spendLimit !== undefined) {
    const { period, spent, held } = keySpend(state, key, at);
    if (key.spendLimit.credits - spent - held < creditHold) {
      const figures = { keyId: key.keyId, limitCredits: key.spendLimit.credits, period: key.spendLimit.period, periodStart: period, spentCredits: spent, heldCredits: held, creditHold };
      return { admitted: false, reason: 'key_spend_limit', figures };
    }
  }
  return undefined;
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
