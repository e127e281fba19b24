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

/** True when every priced kind is equal. */
export function usageEquals(a: Usage, b: Usage): boolean {
  return USAGE_KINDS.every((kind) => a[kind] === b[kind]);
}

/** True when `total` is at least `part` in every priced kind. */
export function usageCovers(total: Usage, part: Usage): boolean {
  return USAGE_KINDS.every((kind) => total[kind] >= part[kind]);
}
