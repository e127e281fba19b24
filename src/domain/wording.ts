/**
 * How counts and lists read in English, for every sentence the ledger writes (explanations, error
 * messages, the CLI's summaries, the console): `1 organization`, `2 organizations`, `a, b or c`.
 * No locale: the words are the product's own, and a rebuilt explanation must read the same.
 */

/** The noun that goes with `count`: `organization` for 1, `organizations` otherwise (0 included). */
export function nounFor(count: number, singular: string, plural = `${singular}s`): string {
  return count === 1 ? singular : plural;
}

/** `1 tool call`, `0 tool calls`, `3 entries` (with `plural` given); `shown` writes the number. */
export function countOf(count: number, singular: string, plural = `${singular}s`, shown: (count: number) => string = String): string {
  return `${shown(count)} ${nounFor(count, singular, plural)}`;
}

/** `a`, `a and b`, `a, b and c` (`or` with `conjunction: 'or'`); no serial comma. */
export function listInWords(items: readonly string[], conjunction: 'and' | 'or' = 'and'): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} ${conjunction} ${items[items.length - 1]!}`;
}
