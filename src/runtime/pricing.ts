/**
 * Attempt prices (SPEC §7, BR-CAP-PFM-LLM-002-07): integer credits, computed in BigInt so no product or
 * sum is ever rounded, then rounded up once per attempt.
 */
import type { LongContextRates, Prices } from './conversation.types';
import type { Usage } from './provider.port';

/** Prices are quoted per this many tokens (per million). */
export const TOKENS_PER_PRICE_UNIT = 1_000_000;
/** Web searches are quoted per this many searches. */
export const SEARCHES_PER_PRICE_UNIT = 1_000;

const PRICE_UNIT = BigInt(TOKENS_PER_PRICE_UNIT);
// A search's price in millionths of a credit is webSearchPerThousand · (1,000,000 / 1,000).
const MILLIONTHS_PER_SEARCH_RATE = BigInt(TOKENS_PER_PRICE_UNIT / SEARCHES_PER_PRICE_UNIT);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const LONG_CONTEXT_RATES = ['inputPerMTok', 'outputPerMTok', 'cacheWritePerMTok', 'cacheWrite1hPerMTok', 'cacheReadPerMTok'] as const;

/** The rates one attempt is priced at, every one filled in. */
export interface AttemptRates {
  readonly inputPerMTok: number;
  readonly outputPerMTok: number;
  readonly cacheWritePerMTok: number;
  readonly cacheWrite1hPerMTok: number;
  readonly cacheReadPerMTok: number;
  readonly webSearchPerThousand: number;
  /** True when the attempt's input passed the long-context threshold. */
  readonly longContext: boolean;
}

/**
 * The rate version with the defaults of the rates a publisher may leave out filled in: 1-hour cache
 * writes at the 5-minute rate, web searches at 0 (SPEC §2). Long-context rates have no default.
 */
export function completePrices(prices: Prices): Prices {
  return {
    ...prices,
    cacheWrite1hPerMTok: prices.cacheWrite1hPerMTok ?? prices.cacheWritePerMTok,
    webSearchPerThousand: prices.webSearchPerThousand ?? 0,
  };
}

/** True when two rate versions price every attempt alike (defaults filled in, long-context rates compared). */
export function samePrices(a: Prices, b: Prices): boolean {
  const x = completePrices(a);
  const y = completePrices(b);
  const flat = ['inputPerMTok', 'outputPerMTok', 'cacheWritePerMTok', 'cacheWrite1hPerMTok', 'cacheReadPerMTok', 'webSearchPerThousand'] as const;
  if (!flat.every((key) => x[key] === y[key])) return false;
  if (x.longContext === undefined || y.longContext === undefined) return x.longContext === y.longContext;
  const long = ['thresholdInputTokens', ...LONG_CONTEXT_RATES] as const;
  return long.every((key) => x.longContext![key] === y.longContext![key]);
}

function assertCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative safe integer, got ${String(value)}`);
  }
}

/** Throws RangeError unless every rate is a non-negative safe integer. */
export function assertPrices(prices: Prices): void {
  assertCount('prices.inputPerMTok', prices.inputPerMTok);
  assertCount('prices.outputPerMTok', prices.outputPerMTok);
  assertCount('prices.cacheWritePerMTok', prices.cacheWritePerMTok);
  if (prices.cacheWrite1hPerMTok !== undefined) assertCount('prices.cacheWrite1hPerMTok', prices.cacheWrite1hPerMTok);
  assertCount('prices.cacheReadPerMTok', prices.cacheReadPerMTok);
  if (prices.webSearchPerThousand !== undefined) assertCount('prices.webSearchPerThousand', prices.webSearchPerThousand);
  const long = prices.longContext;
  if (long !== undefined) {
    assertCount('prices.longContext.thresholdInputTokens', long.thresholdInputTokens);
    for (const rate of LONG_CONTEXT_RATES) assertCount(`prices.longContext.${rate}`, long[rate]);
  }
}

/** Throws RangeError unless every count is a non-negative safe integer. */
export function assertUsage(usage: Usage): void {
  assertCount('usage.inputTokens', usage.inputTokens);
  assertCount('usage.outputTokens', usage.outputTokens);
  assertCount('usage.cacheWriteTokens', usage.cacheWriteTokens);
  assertCount('usage.cacheWrite1hTokens', usage.cacheWrite1hTokens);
  assertCount('usage.cacheReadTokens', usage.cacheReadTokens);
  assertCount('usage.webSearchRequests', usage.webSearchRequests);
}

/**
 * The attempt's input as the long-context threshold counts it: uncached input, cache writes and cache
 * reads (a BigInt: four safe counts may sum past the safe range).
 */
export function contextInputTokens(usage: Usage): bigint {
  return BigInt(usage.inputTokens) + BigInt(usage.cacheWriteTokens) + BigInt(usage.cacheWrite1hTokens) + BigInt(usage.cacheReadTokens);
}

/**
 * The rates an attempt with this usage is priced at: the long-context rates when its input exceeds
 * the threshold (strictly), else the ordinary ones, with the rate version's defaults filled in
 * (1-hour writes at the 5-minute rate, web searches free). Web searches keep their one rate.
 */
export function ratesFor(usage: Usage, prices: Prices): AttemptRates {
  const webSearchPerThousand = prices.webSearchPerThousand ?? 0;
  const long: LongContextRates | undefined = prices.longContext;
  if (long !== undefined && contextInputTokens(usage) > BigInt(long.thresholdInputTokens)) {
    return {
      inputPerMTok: long.inputPerMTok,
      outputPerMTok: long.outputPerMTok,
      cacheWritePerMTok: long.cacheWritePerMTok,
      cacheWrite1hPerMTok: long.cacheWrite1hPerMTok,
      cacheReadPerMTok: long.cacheReadPerMTok,
      webSearchPerThousand,
      longContext: true,
    };
  }
  return {
    inputPerMTok: prices.inputPerMTok,
    outputPerMTok: prices.outputPerMTok,
    cacheWritePerMTok: prices.cacheWritePerMTok,
    cacheWrite1hPerMTok: prices.cacheWrite1hPerMTok ?? prices.cacheWritePerMTok,
    cacheReadPerMTok: prices.cacheReadPerMTok,
    webSearchPerThousand,
    longContext: false,
  };
}

/**
 * The price of one attempt in integer credits:
 * `ceil((in·input + out·output + cw5m·cacheWrite + cw1h·cacheWrite1h + cr·cacheRead + searches·webSearchPerThousand·1,000) / 1,000,000)`
 * at the rates `ratesFor` picks. An attempt that reported no usage costs 0. Throws RangeError on a
 * negative, fractional or unsafe input, or when the price itself would not be a safe integer.
 */
export function priceAttempt(usage: Usage | undefined, prices: Prices): number {
  assertPrices(prices);
  if (usage === undefined) return 0;
  assertUsage(usage);
  const rates = ratesFor(usage, prices);
  const creditMillionths =
    BigInt(usage.inputTokens) * BigInt(rates.inputPerMTok) +
    BigInt(usage.outputTokens) * BigInt(rates.outputPerMTok) +
    BigInt(usage.cacheWriteTokens) * BigInt(rates.cacheWritePerMTok) +
    BigInt(usage.cacheWrite1hTokens) * BigInt(rates.cacheWrite1hPerMTok) +
    BigInt(usage.cacheReadTokens) * BigInt(rates.cacheReadPerMTok) +
    BigInt(usage.webSearchRequests) * BigInt(rates.webSearchPerThousand) * MILLIONTHS_PER_SEARCH_RATE;
  const credits = (creditMillionths + PRICE_UNIT - 1n) / PRICE_UNIT;
  if (credits > MAX_SAFE) throw new RangeError(`attempt price ${credits} credits exceeds the safe integer range`);
  return Number(credits);
}
