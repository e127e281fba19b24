/**
 * What a publication may hold (SPEC §2, §11). Every bound is named once, with its unit; the messages
 * name the field by its path in the request body (e.g. `limits.maxTurns`).
 */
import { ValidationError } from '../domain/domain.errors';
import { FieldChecks } from '../domain/field-checks';
import type { ConversationLimits, LongContextRates, Prices } from '../runtime/conversation.types';
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
/** Credits per million tokens, for each token kind. */
export const MAX_PRICE_PER_MTOK_CREDITS = 1_000_000_000;
/** Credits per 1,000 server-side web searches. */
export const MAX_WEB_SEARCH_PER_THOUSAND_CREDITS = 1_000_000_000;
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
 * tool budget (an accepted answer consumes none, SPEC §5 step 6). `creditHold` and prices may be 0 for
 * a free (e.g. scripted) route. `attemptTimeoutMs` may exceed `totalTimeMs`: each attempt is clamped
 * to the time remaining anyway (SPEC §5 step 3).
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
  const rate = (path: string, value: unknown): number =>
    checks.integer(path, value, { min: 0, max: MAX_PRICE_PER_MTOK_CREDITS, unit: 'credits per million tokens' });
  const price = (field: 'inputPerMTok' | 'outputPerMTok' | 'cacheWritePerMTok' | 'cacheReadPerMTok'): number =>
    rate(`prices.${field}`, pricesIn[field]);

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
    prices: readPrices(checks, pricesIn, price, rate),
    creditHold: checks.integer('creditHold', body.creditHold, { min: 0, max: MAX_CREDIT_HOLD_CREDITS, unit: 'credits' }),
    enabled: checks.boolean('enabled', body.enabled),
    publishedAt: checks.instant('publishedAt', body.publishedAt),
  };
  checks.throwIfAny();
  return publication;
}

/**
 * The rate version, complete: the optional rates filled with their defaults (1-hour writes at the
 * 5-minute rate, web searches at 0), so what is stored says how every kind is priced.
 */
function readPrices(
  checks: FieldChecks,
  pricesIn: Record<string, unknown>,
  price: (field: 'inputPerMTok' | 'outputPerMTok' | 'cacheWritePerMTok' | 'cacheReadPerMTok') => number,
  rate: (path: string, value: unknown) => number,
): Prices {
  const cacheWritePerMTok = price('cacheWritePerMTok');
  const longContext = pricesIn.longContext === undefined ? undefined : readLongContext(checks, pricesIn.longContext, rate);
  return {
    inputPerMTok: price('inputPerMTok'),
    outputPerMTok: price('outputPerMTok'),
    cacheWritePerMTok,
    cacheWrite1hPerMTok:
      pricesIn.cacheWrite1hPerMTok === undefined ? cacheWritePerMTok : rate('prices.cacheWrite1hPerMTok', pricesIn.cacheWrite1hPerMTok),
    cacheReadPerMTok: price('cacheReadPerMTok'),
    webSearchPerThousand:
      pricesIn.webSearchPerThousand === undefined
        ? 0
        : checks.integer('prices.webSearchPerThousand', pricesIn.webSearchPerThousand, {
            min: 0,
            max: MAX_WEB_SEARCH_PER_THOUSAND_CREDITS,
            unit: 'credits per 1,000 searches',
          }),
    ...(longContext === undefined ? {} : { longContext }),
  };
}

/** Long-context rates: every field required (they replace all the ordinary token rates at once). */
function readLongContext(checks: FieldChecks, value: unknown, rate: (path: string, value: unknown) => number): LongContextRates {
  const longIn = checks.object('prices.longContext', value);
  return {
    thresholdInputTokens: checks.integer('prices.longContext.thresholdInputTokens', longIn.thresholdInputTokens, {
      min: 1,
      max: MAX_LONG_CONTEXT_THRESHOLD_TOKENS,
      unit: 'tokens',
    }),
    inputPerMTok: rate('prices.longContext.inputPerMTok', longIn.inputPerMTok),
    outputPerMTok: rate('prices.longContext.outputPerMTok', longIn.outputPerMTok),
    cacheWritePerMTok: rate('prices.longContext.cacheWritePerMTok', longIn.cacheWritePerMTok),
    cacheWrite1hPerMTok: rate('prices.longContext.cacheWrite1hPerMTok', longIn.cacheWrite1hPerMTok),
    cacheReadPerMTok: rate('prices.longContext.cacheReadPerMTok', longIn.cacheReadPerMTok),
  };
}
