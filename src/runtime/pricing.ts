/**
 * Attempt prices (SPEC §7, BR-CAP-PFM-LLM-002-07): integer credits, computed in BigInt so no product or
 * sum is ever rounded, then rounded up once per attempt.
 */
import type { Prices } from './conversation.types';
import type { Usage } from './provider.port';

/** Prices are quoted per this many tokens (per million). */
export const TOKENS_PER_PRICE_UNIT = 1_000_000;

const PRICE_UNIT = BigInt(TOKENS_PER_PRICE_UNIT);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function assertCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative safe integer, got ${String(value)}`);
  }
}

/** Throws RangeError unless every rate is a non-negative safe integer (credits per million tokens). */
export function assertPrices(prices: Prices): void {
  assertCount('prices.inputPerMTok', prices.inputPerMTok);
  assertCount('prices.outputPerMTok', prices.outputPerMTok);
  assertCount('prices.cacheWritePerMTok', prices.cacheWritePerMTok);
  assertCount('prices.cacheReadPerMTok', prices.cacheReadPerMTok);
}

/** Throws RangeError unless every token count is a non-negative safe integer. */
export function assertUsage(usage: Usage): void {
  assertCount('usage.inputTokens', usage.inputTokens);
  assertCount('usage.outputTokens', usage.outputTokens);
  assertCount('usage.cacheWriteTokens', usage.cacheWriteTokens);
  assertCount('usage.cacheReadTokens', usage.cacheReadTokens);
}

/**
 * The price of one attempt in integer credits:
 * `ceil((in·inputPerMTok + out·outputPerMTok + cw·cacheWritePerMTok + cr·cacheReadPerMTok) / 1,000,000)`.
 * An attempt that reported no usage costs 0. Throws RangeError on a negative, fractional or unsafe input,
 * or when the price itself would not be a safe integer.
 */
export function priceAttempt(usage: Usage | undefined, prices: Prices): number {
  assertPrices(prices);
  if (usage === undefined) return 0;
  assertUsage(usage);
  const creditMillionths =
    BigInt(usage.inputTokens) * BigInt(prices.inputPerMTok) +
    BigInt(usage.outputTokens) * BigInt(prices.outputPerMTok) +
    BigInt(usage.cacheWriteTokens) * BigInt(prices.cacheWritePerMTok) +
    BigInt(usage.cacheReadTokens) * BigInt(prices.cacheReadPerMTok);
  const credits = (creditMillionths + PRICE_UNIT - 1n) / PRICE_UNIT;
  if (credits > MAX_SAFE) throw new RangeError(`attempt price ${credits} credits exceeds the safe integer range`);
  return Number(credits);
}
