/**
 * Inputs and results of a bounded conversation (docs/rules.md). Plain data: the accounting core copies
 * limits and prices from the publication, and records attempts and outcomes as events.
 */
import type { FaultClass } from './faults';
import type { OptionalRate, ReplaceableRate, RequiredRate } from './price-kinds';
import type { Usage } from './provider.port';

/**
 * Attempt records kept per invocation (docs/rules.md rule 07): in a conversation's result and in its
 * stream; later attempts still count in the totals and still cost.
 */
export const MAX_RETAINED_ATTEMPTS = 64;

/** Published limits of an operation. Times in milliseconds. */
export interface ConversationLimits {
  readonly maxTurns: number;
  readonly maxToolCalls: number;
  readonly totalTimeMs: number;
  readonly attemptTimeoutMs: number;
  readonly maxOutputTokens: number;
  /** Default 3 (docs/rules.md rule 05). */
  readonly maxAttemptsPerTurn: number;
}

/**
 * Rates that replace the ordinary ones for an attempt whose input (uncached input + cache writes +
 * cache reads) exceeds `thresholdInputTokens` tokens: the whole attempt is priced at them, as
 * Anthropic bills long-context requests. Integer credits per million tokens; one rate for each
 * replaceable row of the price-kind table.
 */
export type LongContextRates = { readonly thresholdInputTokens: number } & { readonly [K in ReplaceableRate]: number };

/**
 * The rate version (docs/rules.md, attempt prices): one integer rate for each row of the price-kind
 * table (`src/runtime/price-kinds.ts`), in credits per million tokens or per 1,000 searches. A row
 * with a fallback may be left out by a publisher; publications are stored complete.
 */
export type Prices = { readonly [K in RequiredRate]: number } & { readonly [K in OptionalRate]?: number } & {
  readonly longContext?: LongContextRates;
};

/** A geography's price multiplier is quoted in basis points of the whole price: 10,000 is 1×. */
export const BASIS_POINTS_PER_MULTIPLE = 10_000;

/**
 * A gateway rate card's prices (docs/gateway.md): the rate version, plus what a served mode changes.
 * `fast` is a whole rate version for requests served with `speed: "fast"`; `inferenceGeo` maps a
 * geography to a multiplier in basis points applied to the attempt's whole price before rounding;
 * `webSearchMaxUsesDefault` bounds the searches of a web-search tool that sets no `max_uses`;
 * `batchBasisPoints` is the multiplier, in basis points of the whole price, of an attempt served
 * through Message Batches (`serviceTier: "batch"`), applied before rounding as the geography's is.
 */
export type GatewayPrices = Prices & {
  readonly fast?: Prices;
  readonly inferenceGeo?: Readonly<Record<string, number>>;
  readonly batchBasisPoints?: number;
  readonly webSearchMaxUsesDefault?: number;
};

export const OUTCOMES = [
  'completed',
  'turn_limit',
  'tool_limit',
  'credit_limit',
  'time_limit',
  'refused_by_model',
  'incomplete',
  'protocol_error',
  'cancelled',
  'failed',
] as const;

export type Outcome = (typeof OUTCOMES)[number];

/** The bounds that can end a conversation, named as the publication names them. */
export const ENDING_LIMITS = ['maxTurns', 'maxToolCalls', 'creditHold', 'totalTimeMs'] as const;
export type EndingLimit = (typeof ENDING_LIMITS)[number];

/** The limit each `*_limit` outcome ended at; every other outcome names none. */
export const LIMIT_OF_OUTCOME: Readonly<Partial<Record<Outcome, EndingLimit>>> = {
  turn_limit: 'maxTurns',
  tool_limit: 'maxToolCalls',
  credit_limit: 'creditHold',
  time_limit: 'totalTimeMs',
};

export type AttemptClassification = 'ok' | FaultClass;

/** One provider attempt (docs/rules.md rule 07). Carries no conversation body. */
export interface AttemptRecord {
  /** 1-based turn number. */
  readonly turn: number;
  /** 0 for the first try of the turn. */
  readonly retry: number;
  /** Clock time when the attempt was sent (ms since epoch, from the injected clock). */
  readonly startedAtMs: number;
  readonly durationMs: number;
  /** The wait taken before this attempt (0 for a first try). */
  readonly waitBeforeMs: number;
  readonly classification: AttemptClassification;
  /** The attempt ended because its own timeout ran out. */
  readonly timedOut: boolean;
  readonly httpStatus?: number;
  readonly providerRequestId?: string;
  readonly model: string;
  readonly usage?: Usage;
  /**
   * The provider's usage field that was malformed (not a non-negative safe integer, or pricing past the
   * exact-integer range): the usage is unknown, so `usage` is absent and the attempt is priced 0. Its
   * name only (`output_tokens`), never its value. Absent in records written before it.
   */
  readonly malformedUsage?: string;
  /** Integer credits, rounded up, at the invocation's rate version. */
  readonly priceCredits: number;
}
