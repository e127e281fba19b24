/**
 * `LEDGER_CREDIT_VALUE` (e.g. `0.0001 USD`): what one credit is worth in money, so the API and the
 * console can show money beside credits (docs/http.md "Money beside credits"). Money is never computed
 * in floating point: the value is kept as an integer count of its smallest written unit and its
 * scale, and a figure in money is the exact decimal string of credits × value. Absent: no money is
 * shown anywhere. Credits stay the ledger's only unit; money is a reading of them.
 */

/** Most digits after the decimal point in LEDGER_CREDIT_VALUE (a credit worth 10^-18 of a unit at least). */
export const MAX_CREDIT_VALUE_FRACTION_DIGITS = 18;
/** Most digits before the decimal point in LEDGER_CREDIT_VALUE (a credit worth under 10^12 units). */
export const MAX_CREDIT_VALUE_INTEGER_DIGITS = 12;

/** The written form: a decimal number with a point (no exponent, no sign), a space and an ISO 4217 code. */
const CREDIT_VALUE = new RegExp(`^(\\d{1,${MAX_CREDIT_VALUE_INTEGER_DIGITS}})(?:\\.(\\d{1,${MAX_CREDIT_VALUE_FRACTION_DIGITS}}))? ([A-Z]{3})$`);

export interface CreditValue {
  /** The ISO 4217 code as written (`USD`, `EUR`). */
  readonly currency: string;
  /** One credit's value as a decimal string, trailing zeros dropped (`0.0001`). */
  readonly amount: string;
  /** The value in units of 10^-scale: `0.0001` is 1 at scale 4. */
  readonly scaled: bigint;
  readonly scale: number;
}

/** LEDGER_CREDIT_VALUE read, or what is wrong with it (one line naming the variable). Absent or blank: undefined. */
export function parseCreditValue(text: string | undefined): CreditValue | { readonly problem: string } | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const match = CREDIT_VALUE.exec(text.trim());
  const problem = `LEDGER_CREDIT_VALUE: expected a positive decimal amount (at most ${MAX_CREDIT_VALUE_INTEGER_DIGITS} digits before the point and ${MAX_CREDIT_VALUE_FRACTION_DIGITS} after), a space and a 3-letter currency code, such as "0.0001 USD"; got "${text}"`;
  if (match === null) return { problem };
  const [, whole, fraction = '', currency] = match;
  const digits = fraction.replace(/0+$/, '');
  const scaled = BigInt(`${whole}${digits}`);
  if (scaled === 0n) return { problem };
  return { currency: currency!, amount: decimalOf(scaled, digits.length), scaled, scale: digits.length };
}

/** `credits` (a safe integer) in money at `value`, as an exact decimal string: 4,542 at 0.0001 is `0.4542`. */
export function moneyOf(credits: number, value: CreditValue): string {
  if (!Number.isSafeInteger(credits)) throw new RangeError('credits must be a safe integer');
  return decimalOf(BigInt(credits) * value.scaled, value.scale);
}

/**
 * The `money` member an answer carries beside its credit figures: the currency and each figure named
 * as in the answer, in money; nothing when no LEDGER_CREDIT_VALUE is set.
 */
export function moneyMember<K extends string>(value: CreditValue | undefined, figures: Readonly<Record<K, number>>): { readonly money?: { readonly currency: string } & Readonly<Record<K, string>> } {
  if (value === undefined) return {};
  const money: Record<string, string> = { currency: value.currency };
  for (const [name, credits] of Object.entries(figures) as [K, number][]) money[name] = moneyOf(credits, value);
  return { money: money as { readonly currency: string } & Readonly<Record<K, string>> };
}

/** `units` × 10^-scale as a decimal string, trailing zeros of the fraction dropped. */
function decimalOf(units: bigint, scale: number): string {
  const sign = units < 0n ? '-' : '';
  const digits = (units < 0n ? -units : units).toString().padStart(scale + 1, '0');
  if (scale === 0) return `${sign}${digits}`;
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, '');
  return `${sign}${digits.slice(0, digits.length - scale)}${fraction === '' ? '' : `.${fraction}`}`;
}
