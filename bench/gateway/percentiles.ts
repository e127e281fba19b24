/**
 * The gateway benchmark's statistics: percentiles of samples, and of a Prometheus histogram from its
 * cumulative buckets (as `histogram_quantile` reads them), to quote llm-ledger's own
 * `ledger_gateway_overhead_seconds` beside what the client measured.
 */

export interface Percentiles {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

const EMPTY: Percentiles = { count: 0, p50: NaN, p90: NaN, p99: NaN, max: NaN, mean: NaN };

/** Nearest-rank percentiles (the value below which that share of the samples lie), rounded to 3 decimals. */
export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) return EMPTY;
  const sorted = Float64Array.from(values).sort();
  const at = (share: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
  let sum = 0;
  for (const value of sorted) sum += value;
  return { count: sorted.length, p50: round(at(0.5)), p90: round(at(0.9)), p99: round(at(0.99)), max: round(sorted[sorted.length - 1]!), mean: round(sum / sorted.length) };
}

/** One histogram's buckets: upper bound (`le`, Infinity for `+Inf`) → cumulative count, summed over label sets. */
export type Buckets = ReadonlyMap<number, number>;

/**
 * The buckets of histogram `name` in a Prometheus text exposition, every label set summed into one,
 * or undefined when the metric is not there.
 */
export function histogramBuckets(exposition: string, name: string): Buckets | undefined {
  const buckets = new Map<number, number>();
  const line = new RegExp(`^${name}_bucket\\{([^}]*)\\}\\s+(\\S+)`, 'gm');
  for (const match of exposition.matchAll(line)) {
    const le = /(?:^|,)le="([^"]+)"/.exec(match[1]!)?.[1];
    if (le === undefined) continue;
    const bound = le === '+Inf' ? Infinity : Number(le);
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(match[2]));
  }
  return buckets.size === 0 ? undefined : buckets;
}

/** What was observed between two scrapes: the later buckets minus the earlier. */
export function bucketsBetween(before: Buckets | undefined, after: Buckets): Buckets {
  return new Map([...after].map(([bound, count]) => [bound, count - (before?.get(bound) ?? 0)]));
}

/**
 * The `share` quantile of a histogram, interpolated linearly inside the bucket it falls in, as
 * Prometheus's histogram_quantile does; a quantile in the +Inf bucket reads as the highest finite
 * bound. NaN when nothing was observed.
 */
export function histogramQuantile(buckets: Buckets, share: number): number {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Infinity) ?? buckets.get(bounds[bounds.length - 1]!) ?? 0;
  if (total <= 0) return NaN;
  const rank = share * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const bound of bounds) {
    const count = buckets.get(bound)!;
    if (count >= rank) {
      if (bound === Infinity) return lowerBound;
      const inBucket = count - lowerCount;
      return inBucket <= 0 ? bound : lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / inBucket;
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}

/** To three decimals, as the gateway benchmark quotes every figure. */
export function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
