/**
 * When a failed provider attempt is tried again, and after how long (docs/rules.md,
 * BR-CAP-PFM-LLM-002-05/06). Whether a class is retryable is `isRetryable` in faults.ts; this file adds
 * the attempt budget and the waits. Pure: randomness is injected so tests can pin the jitter.
 */
import { isRetryable, type FaultClass } from './faults';

/** Attempts per turn when the publication names none (docs/rules.md rule 05). */
export const DEFAULT_MAX_ATTEMPTS_PER_TURN = 3;
/** The wait before the first retry; each later retry doubles it. */
export const BASE_RETRY_WAIT_MS = 500;
/** Doubling stops here, so a large attempt budget cannot produce absurd waits. */
export const MAX_BACKOFF_WAIT_MS = 30_000;
/** Jitter adds up to this share of the step (percent), so waits still grow with every retry. */
export const MAX_JITTER_PERCENT = 25;

/** A source of numbers in [0, 1), like Math.random; injected for deterministic tests. */
export type RandomSource = () => number;

/**
 * The backoff before retry number `retry` (1 = the first retry): the doubling step plus jitter in
 * [0, MAX_JITTER_PERCENT% of the step). Retry 1 waits 500–624 ms, retry 2 1,000–1,249 ms, and so on.
 */
export function backoffWaitMs(retry: number, random: RandomSource): number {
  if (!Number.isSafeInteger(retry) || retry < 1) throw new RangeError(`retry must be a positive integer, got ${retry}`);
  // The exponent is clamped so 2 ** n stays finite for any retry number; the cap applies long before.
  const step = Math.min(BASE_RETRY_WAIT_MS * 2 ** Math.min(retry - 1, 30), MAX_BACKOFF_WAIT_MS);
  const unit = Math.min(Math.max(random(), 0), 1 - Number.EPSILON);
  return step + Math.floor((unit * step * MAX_JITTER_PERCENT) / 100);
}

/**
 * The wait before retry number `retry`: the backoff, or longer when the provider asked for it
 * (`retry-after-ms` / `retry-after`); a server's request is honoured, never shortened.
 */
export function retryWaitMs(retry: number, random: RandomSource, retryAfterMs?: number): number {
  const backoff = backoffWaitMs(retry, random);
  const asked = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0 ? Math.ceil(retryAfterMs) : 0;
  return Math.max(backoff, asked);
}

export type RetryDecision =
  | { readonly retry: true; readonly waitMs: number }
  | { readonly retry: false; readonly reason: 'permanent' | 'exhausted' };

/**
 * Decides after a failed attempt. `attemptsMade` counts this turn's attempts so far (1 after the first).
 * A permanent class is never retried, whatever budget remains.
 */
export function decideRetry(
  classification: FaultClass,
  attemptsMade: number,
  maxAttemptsPerTurn: number,
  random: RandomSource,
  retryAfterMs?: number,
): RetryDecision {
  if (!isRetryable(classification)) return { retry: false, reason: 'permanent' };
  if (attemptsMade >= maxAttemptsPerTurn) return { retry: false, reason: 'exhausted' };
  return { retry: true, waitMs: retryWaitMs(attemptsMade, random, retryAfterMs) };
}
