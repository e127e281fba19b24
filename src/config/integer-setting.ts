/**
 * An environment variable that holds a whole number within bounds: its value, or undefined when it is
 * unset, blank or refused. Anything else than digits within bounds (a sign, a fraction, hex, out of
 * bounds) adds a problem naming the variable and what it got, so every such setting is refused in the
 * same words; the caller falls back to its default either way.
 */
export function integerSetting(
  name: string,
  value: string | undefined,
  { min, max }: { readonly min: number; readonly max: number },
  problems: string[],
): number | undefined {
  const raw = value?.trim();
  if (!raw) return undefined;
  const parsed = Number(raw);
  if (/^\d+$/.test(raw) && parsed >= min && parsed <= max) return parsed;
  problems.push(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`);
  return undefined;
}
