/**
 * What a publication may hold (docs/http.md: `PUT …/publications` and "Errors"). Every bound is named
 * once, with its unit; the messages name the field by its path in the request body (e.g.
 * `limits.maxTurns`).
 */
import { ValidationError } from '../domain/domain.errors';
import { FieldChecks } from '../domain/field-checks';
import type { ConversationLimits, LongContextRates, Prices } from '../runtime/conversation.types';
import { MAX_PRICE_PER_MTOK_CREDITS, MAX_WEB_SEARCH_PER_THOUSAND_CREDITS, PRICE_KINDS, REPLACEABLE_RATES } from '../runtime/price-kinds';
import { DEFAULT_MAX_ATTEMPTS_PER_TURN } from '../runtime/retry-policy';
import { PROVIDERS, Routing } from './operation.events';

// Defined once, with the retry policy it bounds; re-exported for the publication's readers.
export { DEFAULT_MAX_ATTEMPTS_PER_TURN };
/** Model requests per conversation. */
export const MAX_TURNS_LIMIT = 100;
/** Answered tool calls per conversation. */
export const MAX_TOOL_CALLS_LIMIT = 1_000;
/** A conversation's whole time budget: one hour. */
export const MAX_TOTAL_TIME_MS = 3_600_000;
/** One provider attempt: ten minutes. */
export const MAX_ATTEMPT_TIMEOUT_MS = 600_000;
/** Output tokens a single model response may be asked for. */
export const MAX_OUTPUT_TOKENS_LIMIT = 200_000;
/** Provider attempts per turn, retries included. */
export const MAX_ATTEMPTS_PER_TURN_LIMIT = 10;
/** Credits one admission may hold. Keeps every sum of holds and charges an exact integer. */
export const MAX_CREDIT_HOLD_CREDITS = 1_000_000_000_000;
// Rate bounds are the price-kind table's; re-exported for the publication's readers.
export { MAX_PRICE_PER_MTOK_CREDITS, MAX_WEB_SEARCH_PER_THOUSAND_CREDITS };
/** The largest long-context threshold, in input tokens (well past any model's context window). */
export const MAX_LONG_CONTEXT_THRESHOLD_TOKENS = 100_000_000;
/** Longest model name, in characters. */
export const MAX_MODEL_NAME_CHARS = 200;

/** A publication that passed every check, without its version (the decider numbers it). */
export interface ValidPublication {
  readonly operationId: string;
  readonly routing: Routing;
  readonly limits: ConversationLimits;
  readonly prices: Prices;
  readonly creditHold: number;
  readonly enabled: boolean;
  readonly publishedAt: string;
}

/**
 * Checks a publication request and returns it normalised (default `maxAttemptsPerTurn` filled in,
 * unknown fields dropped), or throws one ValidationError naming every bad field.
 *
 * `maxToolCalls` may be 0: an operation that answers with text or with its answer tool alone needs no
 * tool budget (an accepted answer consumes none, docs/rules.md step 6). `creditHold` and prices may be 0 for
 * a free (e.g. scripted) route. `attemptTimeoutMs` may exceed `totalTimeMs`: each attempt is clamped
 * to the time remaining anyway (docs/rules.md step 3).
 */
export function validatePublication(input: unknown): ValidPublication {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw ValidationError.of('publication', 'must be an object');
  }
  const body = input as Record<string, unknown>;
  const checks = new FieldChecks();
  const routingIn = checks.object('routing', body.routing);
  const limitsIn = checks.object('limits', body.limits);
  const pricesIn = checks.object('prices', body.prices);

  const positive = (field: keyof ConversationLimits, max: number, unit: string): number =>
    checks.integer(`limits.${field}`, limitsIn[field], { min: 1, max, unit });

  const publication: ValidPublication = {
    operationId: checks.id('operationId', body.operationId),
    routing: {
      provider: checks.oneOf('routing.provider', routingIn.provider, PROVIDERS),
      model: checks.text('routing.model', routingIn.model, MAX_MODEL_NAME_CHARS),
    },
    limits: {
      maxTurns: positive('maxTurns', MAX_TURNS_LIMIT, 'turns'),
      maxToolCalls: checks.integer('limits.maxToolCalls', limitsIn.maxToolCalls, {
        min: 0,
        max: MAX_TOOL_CALLS_LIMIT,
        unit: 'tool calls',
      }),
      totalTimeMs: positive('totalTimeMs', MAX_TOTAL_TIME_MS, 'ms'),
      attemptTimeoutMs: positive('attemptTimeoutMs', MAX_ATTEMPT_TIMEOUT_MS, 'ms'),
      maxOutputTokens: positive('maxOutputTokens', MAX_OUTPUT_TOKENS_LIMIT, 'tokens'),
      maxAttemptsPerTurn:
        limitsIn.maxAttemptsPerTurn === undefined
          ? DEFAULT_MAX_ATTEMPTS_PER_TURN
          : positive('maxAttemptsPerTurn', MAX_ATTEMPTS_PER_TURN_LIMIT, 'attempts'),
    },
    prices: readPrices(checks, 'prices', pricesIn),
    creditHold: checks.integer('creditHold', body.creditHold, { min: 0, max: MAX_CREDIT_HOLD_CREDITS, unit: 'credits' }),
    enabled: checks.boolean('enabled', body.enabled),
    publishedAt: checks.instant('publishedAt', body.publishedAt),
  };
  checks.throwIfAny();
  return publication;
}

/** A rate's bound and unit, from its row of the price-kind table. */
function readRate(checks: FieldChecks, path: string, kind: (typeof PRICE_KINDS)[number], value: unknown): number {
  const unit = kind.unit === 'tokens' ? 'credits per million tokens' : `credits per ${kind.unitsPerRate.toLocaleString('en-US')} ${kind.unit}`;
  return checks.integer(path, value, { min: 0, max: kind.maxRate, unit });
}

/**
 * The rate version, complete: one rate for each row of the price-kind table, a rate left out filled
 * with its row's fallback (another kind's rate, or 0), so what is stored says how every kind is priced.
 * Exported for the gateway's rate card, which holds rate versions of the same form.
 */
export function readPrices(checks: FieldChecks, path: string, pricesIn: Record<string, unknown>): Prices {
  const rates: Record<string, number> = {};
  for (const kind of PRICE_KINDS) {
    const value = pricesIn[kind.rate];
    if (value !== undefined || kind.fallback === 'required') rates[kind.rate] = readRate(checks, `${path}.${kind.rate}`, kind, value);
    else rates[kind.rate] = 'credits' in kind.fallback ? kind.fallback.credits : rates[kind.fallback.sameAs]!;
  }
  const longContext = pricesIn.longContext === undefined ? undefined : readLongContext(checks, `${path}.longContext`, pricesIn.longContext);
  return { ...(rates as unknown as Prices), ...(longContext === undefined ? {} : { longContext }) };
}

/** Long-context rates: every replaceable rate required (they replace the ordinary ones at once). */
function readLongContext(checks: FieldChecks, path: string, value: unknown): LongContextRates {
  const longIn = checks.object(path, value);
  const rates: Record<string, number> = {};
  for (const kind of PRICE_KINDS) {
    if (REPLACEABLE_RATES.includes(kind.rate as never)) rates[kind.rate] = readRate(checks, `${path}.${kind.rate}`, kind, longIn[kind.rate]);
  }
  return {
    thresholdInputTokens: checks.integer(`${path}.thresholdInputTokens`, longIn.thresholdInputTokens, {
      min: 1,
      max: MAX_LONG_CONTEXT_THRESHOLD_TOKENS,
      unit: 'tokens',
    }),
    ...(rates as Omit<LongContextRates, 'thresholdInputTokens'>),
  };
}
