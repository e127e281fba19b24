/**
 * Inputs and results of a bounded conversation (SPEC §5, §7). Plain data: the accounting core copies
 * limits and prices from the publication, and records attempts and outcomes as events.
 */
import type { FaultClass } from './faults';
import type { Usage } from './provider.port';

/**
 * Attempt records kept per invocation (SPEC §7): in a conversation's result and in its stream; later
 * attempts still count in the totals and still cost.
 */
export const MAX_RETAINED_ATTEMPTS = 64;

/** Published limits of an operation. Times in milliseconds. */
export interface ConversationLimits {
  readonly maxTurns: number;
  readonly maxToolCalls: number;
  readonly totalTimeMs: number;
  readonly attemptTimeoutMs: number;
  readonly maxOutputTokens: number;
  /** Default 3 (SPEC §6). */
  readonly maxAttemptsPerTurn: number;
}

/**
 * Rates that replace the ordinary ones for an attempt whose input (uncached input + cache writes +
 * cache reads) exceeds `thresholdInputTokens` tokens: the whole attempt is priced at them, as
 * Anthropic bills long-context requests. Integer credits per million tokens.
 */
export interface LongContextRates {
  readonly thresholdInputTokens: number;
  readonly inputPerMTok: number;
  readonly outputPerMTok: number;
  readonly cacheWritePerMTok: number;
  readonly cacheWrite1hPerMTok: number;
  readonly cacheReadPerMTok: number;
}

/**
 * The rate version (SPEC §2): integer credits per million tokens, except `webSearchPerThousand`
 * (credits per 1,000 server-side web searches). `cacheWritePerMTok` prices 5-minute cache writes and
 * `cacheWrite1hPerMTok` 1-hour ones (absent: `cacheWritePerMTok`); absent `webSearchPerThousand` is 0.
 * Publications are stored complete; the optional fields are what a publisher may leave out.
 */
export interface Prices {
  readonly inputPerMTok: number;
  readonly outputPerMTok: number;
  readonly cacheWritePerMTok: number;
  readonly cacheWrite1hPerMTok?: number;
  readonly cacheReadPerMTok: number;
  readonly webSearchPerThousand?: number;
  readonly longContext?: LongContextRates;
}

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

/** One provider attempt (SPEC §7). Carries no conversation body. */
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
  /** Integer credits, rounded up, at the invocation's rate version. */
  readonly priceCredits: number;
}
