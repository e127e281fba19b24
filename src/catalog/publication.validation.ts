/**
 * What a publication may hold (SPEC §2, §11). Every bound is named once, with its unit; the messages
 * name the field by its path in the request body (e.g. `limits.maxTurns`).
 */
import { ValidationError } from '../domain/domain.errors';
import { FieldChecks } from '../domain/field-checks';
import type { ConversationLimits, Prices } from '../runtime/conversation.types';
import { PROVIDERS, Routing } from './operation.events';

/** Provider attempts per turn when the publisher names none (SPEC §6). */
export const DEFAULT_MAX_ATTEMPTS_PER_TURN = 3;
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
/** Credits per million tokens, for each of the four token kinds. */
export const MAX_PRICE_PER_MTOK_CREDITS = 1_000_000_000;
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
  const price = (field: keyof Prices): number =>
    checks.integer(`prices.${field}`, pricesIn[field], {
      min: 0,
      max: MAX_PRICE_PER_MTOK_CREDITS,
      unit: 'credits per million tokens',
    });

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
    prices: {
      inputPerMTok: price('inputPerMTok'),
      outputPerMTok: price('outputPerMTok'),
      cacheWritePerMTok: price('cacheWritePerMTok'),
      cacheReadPerMTok: price('cacheReadPerMTok'),
    },
    creditHold: checks.integer('creditHold', body.creditHold, { min: 0, max: MAX_CREDIT_HOLD_CREDITS, unit: 'credits' }),
    enabled: checks.boolean('enabled', body.enabled),
    publishedAt: checks.instant('publishedAt', body.publishedAt),
  };
  checks.throwIfAny();
  return publication;
}
