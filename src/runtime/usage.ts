/**
 * Sums of usage, kind by kind (docs/rules.md, attempt prices): what an invocation's totals and a statement's token columns
 * are made of. Totals carry the priced kinds only (a service tier is per attempt).
 */
import { USAGE_KINDS, type Usage } from './provider.port';

/** Usage of nothing: every kind 0. */
export const NO_USAGE: Usage = Object.freeze(Object.fromEntries(USAGE_KINDS.map((kind) => [kind, 0])) as unknown as Usage);

/** `a + b`, kind by kind; throws RangeError when a total would leave the safe integer range. */
export function addUsage(a: Usage, b: Usage): Usage {
  const sum: Record<string, number> = {};
  for (const kind of USAGE_KINDS) {
    const total = a[kind] + b[kind];
    if (!Number.isSafeInteger(total)) throw new RangeError(`${kind} total left the safe integer range`);
    sum[kind] = total;
  }
  return sum as unknown as Usage;
}

/** A sum of usage that may have been cut at the exact-integer range (addUsageSaturating). */
export interface SaturatingUsageSum {
  readonly usage: Usage;
  /** True when some kind's total was past Number.MAX_SAFE_INTEGER and is that bound instead. */
  readonly saturated: boolean;
}

/**
 * `a + b`, kind by kind, for a read model that sums whatever a log holds (a usage statement's line and
 * rows, an attempt history): a total past Number.MAX_SAFE_INTEGER is that bound and the sum says it
 * was cut, so a read model never stops on a sum. The gateway refuses a count above its plausibility
 * bound, but a log written before that bound, or the usage an operation's provider recorded, can
 * hold counts up to the bound of the range.
 */
export function addUsageSaturating(a: Usage, b: Usage): SaturatingUsageSum {
  const sum: Record<string, number> = {};
  let saturated = false;
  for (const kind of USAGE_KINDS) {
    const total = a[kind] + b[kind];
    saturated ||= total > Number.MAX_SAFE_INTEGER;
    sum[kind] = Math.min(total, Number.MAX_SAFE_INTEGER);
  }
  return { usage: sum as unknown as Usage, saturated };
}

/** True when every priced kind is equal. */
export function usageEquals(a: Usage, b: Usage): boolean {
  return USAGE_KINDS.every((kind) => a[kind] === b[kind]);
}

/** True when `total` is at least `part` in every priced kind. */
export function usageCovers(total: Usage, part: Usage): boolean {
  return USAGE_KINDS.every((kind) => total[kind] >= part[kind]);
}
