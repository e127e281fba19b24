/**
 * An environment variable that holds a whole number within bounds: its value, or `fallback` when it
 * is unset or blank. Anything else (a sign, a fraction, hex, out of bounds) adds a problem naming
 * the variable and what it got, and gives `fallback`, so every such setting is refused in the same words.
 */
export function integerSetting(
  name: string,
  value: string | undefined,
  fallback: number,
  { min, max }: { readonly min: number; readonly max: number },
  problems: string[],
): number {
  const raw = value?.trim();
  if (!raw) return fallback;
  const parsed = Number(raw);
  if (/^\d+$/.test(raw) && parsed >= min && parsed <= max) return parsed;
  problems.push(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`);
  return fallback;
}
