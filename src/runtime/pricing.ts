/**
 * Attempt prices (docs/rules.md, BR-CAP-PFM-LLM-002-07): integer credits, computed in BigInt so no
 * product or sum is ever rounded, then rounded up once per attempt. Every kind comes from the
 * price-kind table (price-kinds.ts); nothing here names one.
 */
import { BASIS_POINTS_PER_MULTIPLE, type GatewayPrices, type LongContextRates, type Prices } from './conversation.types';
import {
  INPUT_USAGE_KINDS,
  PRICE_KINDS,
  RATE_FIELDS,
  REPLACEABLE_RATES,
  SEARCHES_PER_PRICE_UNIT,
  TOKENS_PER_PRICE_UNIT,
  USAGE_KINDS,
  type RateField,
} from './price-kinds';
import type { Usage } from './provider.port';

// Defined once, in the price-kind table; re-exported for the pricing's readers.
export { SEARCHES_PER_PRICE_UNIT, TOKENS_PER_PRICE_UNIT };

/** Prices are summed in millionths of a credit: every rate is quoted per a divisor of a million units. */
const MILLIONTHS_PER_CREDIT = BigInt(TOKENS_PER_PRICE_UNIT);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const BASIS_POINTS = BigInt(BASIS_POINTS_PER_MULTIPLE);

type RateRecord = Record<string, number | undefined>;

/** The rates one attempt is priced at: every rate field filled in, and which rate set was used. */
export type AttemptRates = { readonly [K in RateField]: number } & {
  /** True when the attempt's input passed the long-context threshold. */
  readonly longContext: boolean;
  /** True when the attempt was served in fast mode and priced at the rate card's `fast` rates. */
  readonly fast: boolean;
  /** The geography multiplier applied to the whole price, in basis points (10,000 when none). */
  readonly geoBasisPoints: number;
  /** The Message Batches multiplier applied to the whole price, in basis points (10,000 unless served as a batch). */
  readonly batchBasisPoints: number;
};

/** The service tier Anthropic reports, and the gateway records, for a request served through Message Batches. */
export const BATCH_SERVICE_TIER = 'batch';

/** Each rate field's row of the price-kind table. */
const PRICE_KIND_OF_RATE: ReadonlyMap<string, (typeof PRICE_KINDS)[number]> = new Map(PRICE_KINDS.map((kind) => [kind.rate, kind]));

/** A rate that was left out, filled with its row's fallback (another rate, or 0). */
function rateOf(prices: RateRecord, rate: RateField): number {
  const kind = PRICE_KIND_OF_RATE.get(rate)!;
  const stated = prices[rate];
  if (stated !== undefined) return stated;
  if (kind.fallback === 'required') return Number.NaN;
  return 'credits' in kind.fallback ? kind.fallback.credits : rateOf(prices, kind.fallback.sameAs as RateField);
}

/**
 * The rate version with the defaults of the rates a publisher may leave out filled in (1-hour cache
 * writes at the 5-minute rate, web searches at 0). Long-context rates have no default.
 */
export function completePrices<P extends Prices>(prices: P): P {
  const filled = { ...prices } as unknown as RateRecord;
  for (const rate of RATE_FIELDS) filled[rate] = rateOf(prices as unknown as RateRecord, rate);
  return filled as unknown as P;
}

/** True when two rate versions price every attempt alike (defaults filled in, long-context and mode rates compared). */
export function samePrices(a: GatewayPrices, b: GatewayPrices): boolean {
  const x = completePrices(a) as unknown as RateRecord;
  const y = completePrices(b) as unknown as RateRecord;
  if (!RATE_FIELDS.every((rate) => x[rate] === y[rate])) return false;
  if (!sameLongContext(a.longContext, b.longContext)) return false;
  if ((a.fast === undefined) !== (b.fast === undefined)) return false;
  if (a.fast !== undefined && !samePrices(a.fast, b.fast!)) return false;
  return a.webSearchMaxUsesDefault === b.webSearchMaxUsesDefault && a.batchBasisPoints === b.batchBasisPoints && sameGeo(a.inferenceGeo, b.inferenceGeo);
}

function sameLongContext(a: LongContextRates | undefined, b: LongContextRates | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.thresholdInputTokens === b.thresholdInputTokens && REPLACEABLE_RATES.every((rate) => a[rate] === b[rate]);
}

function sameGeo(a: GatewayPrices['inferenceGeo'], b: GatewayPrices['inferenceGeo']): boolean {
  const x = Object.entries(a ?? {}).sort(([k], [l]) => k.localeCompare(l));
  const y = Object.entries(b ?? {}).sort(([k], [l]) => k.localeCompare(l));
  return x.length === y.length && x.every(([geo, bp], i) => y[i]![0] === geo && y[i]![1] === bp);
}

function assertCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative safe integer, got ${String(value)}`);
  }
}

/** Throws RangeError unless every rate (long-context and mode rates included) is a non-negative safe integer. */
export function assertPrices(prices: GatewayPrices, path = 'prices'): void {
  const record = prices as unknown as RateRecord;
  for (const kind of PRICE_KINDS) {
    const stated = record[kind.rate];
    if (stated !== undefined || kind.fallback === 'required') assertCount(`${path}.${kind.rate}`, stated as number);
  }
  const long = prices.longContext;
  if (long !== undefined) {
    assertCount(`${path}.longContext.thresholdInputTokens`, long.thresholdInputTokens);
    for (const rate of REPLACEABLE_RATES) assertCount(`${path}.longContext.${rate}`, long[rate]);
  }
  if (prices.fast !== undefined) assertPrices(prices.fast, `${path}.fast`);
  for (const [geo, basisPoints] of Object.entries(prices.inferenceGeo ?? {})) assertCount(`${path}.inferenceGeo.${geo}`, basisPoints);
  if (prices.webSearchMaxUsesDefault !== undefined) assertCount(`${path}.webSearchMaxUsesDefault`, prices.webSearchMaxUsesDefault);
  if (prices.batchBasisPoints !== undefined) assertCount(`${path}.batchBasisPoints`, prices.batchBasisPoints);
}

/** Throws RangeError unless every count is a non-negative safe integer. */
export function assertUsage(usage: Usage): void {
  for (const kind of USAGE_KINDS) assertCount(`usage.${kind}`, usage[kind]);
}

/**
 * The attempt's input as the long-context threshold counts it: uncached input, cache writes and cache
 * reads (a BigInt: four safe counts may sum past the safe range).
 */
export function contextInputTokens(usage: Usage): bigint {
  return INPUT_USAGE_KINDS.reduce((sum, kind) => sum + BigInt(usage[kind]), 0n);
}

/**
 * The rates an attempt with this usage is priced at. The base set is the rate card's `fast` rates
 * when the provider served the attempt fast and the card has them, else the ordinary ones; within it,
 * the long-context rates replace the replaceable ones when the input exceeds the threshold (strictly).
 * Rates a publisher left out take their fallback; kinds that are not replaceable keep their one rate.
 */
export function ratesFor(usage: Usage, prices: GatewayPrices): AttemptRates {
  const fast = usage.speed === 'fast' && prices.fast !== undefined;
  const base: Prices = fast ? prices.fast! : prices;
  const long: LongContextRates | undefined = base.longContext;
  const longContext = long !== undefined && contextInputTokens(usage) > BigInt(long.thresholdInputTokens);
  const geo = usage.inferenceGeo === undefined ? undefined : prices.inferenceGeo?.[usage.inferenceGeo];
  const batch = usage.serviceTier === BATCH_SERVICE_TIER ? prices.batchBasisPoints : undefined;
  // The rates are added to an object that has its other fields already: spreading a record built key by
  // key into a new object cost 35 times as much (5 µs an attempt, priced twice per call).
  const rates: Record<string, number | boolean> = {
    longContext,
    fast,
    geoBasisPoints: geo ?? BASIS_POINTS_PER_MULTIPLE,
    batchBasisPoints: batch ?? BASIS_POINTS_PER_MULTIPLE,
  };
  for (const kind of PRICE_KINDS) {
    const replaced = longContext && kind.replaceable ? long![kind.rate as keyof LongContextRates] : undefined;
    rates[kind.rate] = replaced ?? rateOf(base as unknown as RateRecord, kind.rate);
  }
  return rates as AttemptRates;
}

/** Millionths of a credit per unit of each kind's rate: a million over its quote (1 for tokens, 1,000 for searches). */
const MILLIONTHS_PER_RATE_UNIT = PRICE_KINDS.map((kind) => ({
  usage: kind.usage,
  rate: kind.rate,
  multiplier: BigInt(TOKENS_PER_PRICE_UNIT / kind.unitsPerRate),
}));

/** `Σ count × rate × (1,000,000 / unitsPerRate)` over the table: the attempt's price in millionths of a credit. */
export function priceInMillionths(usage: Usage, rates: AttemptRates): bigint {
  let sum = 0n;
  for (const kind of MILLIONTHS_PER_RATE_UNIT) sum += BigInt(usage[kind.usage]) * BigInt(rates[kind.rate]) * kind.multiplier;
  return sum;
}

/**
 * The price of one attempt in integer credits:
 * `ceil(Σ count·rate·(1,000,000 / unitsPerRate) · geo / 10,000 · batch / 10,000 / 1,000,000)` over
 * every kind of the table, at the rates `ratesFor` picks (the geography multiplier is 1× unless the
 * rate card names the attempt's geography; the batch multiplier is 1× unless the attempt was served
 * through Message Batches and the card names `batchBasisPoints`). An attempt that reported no usage costs 0. Throws RangeError on a negative,
 * fractional or unsafe input, or when the price itself would not be a safe integer.
 */
export function priceAttempt(usage: Usage | undefined, prices: GatewayPrices): number {
  assertPrices(prices);
  if (usage === undefined) return 0;
  assertUsage(usage);
  const rates = ratesFor(usage, prices);
  const scaled = priceInMillionths(usage, rates) * BigInt(rates.geoBasisPoints) * BigInt(rates.batchBasisPoints);
  const divisor = MILLIONTHS_PER_CREDIT * BASIS_POINTS * BASIS_POINTS;
  const credits = (scaled + divisor - 1n) / divisor;
  if (credits > MAX_SAFE) throw new RangeError(`attempt price ${credits} credits exceeds the safe integer range`);
  return Number(credits);
}
