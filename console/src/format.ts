/** How the console writes numbers and times. Credits are integers and are only ever formatted. */
import { countOf, listInWords } from '../../src/domain/wording';

const integers = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** `1,000,000` */
export const formatCount = (value: number): string => integers.format(value);

/** `7 credits`, `1 credit` */
export const formatCredits = (value: number): string => `${integers.format(value)} ${Math.abs(value) === 1 ? 'credit' : 'credits'}`;

/** `+1,000,000 credits`, `−7 credits`, `0 credits`: an amount that moves a balance, with its sign. */
export function formatSignedCredits(value: number): string {
  const sign = value > 0 ? '+' : value < 0 ? '−' : '';
  return `${sign}${formatCredits(Math.abs(value))}`;
}

/** `1 tool call`, `2 tool calls`, the number grouped as the console writes numbers. */
export const formatCountOf = (count: number, singular: string, plural?: string): string => countOf(count, singular, plural, formatCount);

/** The usage kinds no attempt used, as a sentence: `No attempt used any cache read tokens or web search requests.` */
export function unusedKindsSentence(kinds: readonly string[]): string {
  return `No attempt used any ${listInWords(kinds.map(words), 'or')}.`;
}

/** `0 ms`, `850 ms`, `1.5 s`, `2 min 5 s` */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${integers.format(ms)} ms`;
  if (ms < 60_000) return `${(Math.round(ms / 100) / 10).toString()} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1_000);
  return seconds === 0 ? `${minutes} min` : `${minutes} min ${seconds} s`;
}

/** An ISO time as `2026-12-01 08:19:31.482 UTC`: support tickets quote UTC. */
export function formatTime(iso: string | number | undefined): string {
  if (iso === undefined) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return `${date.toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

/** `inputTokens` → `input tokens`, `cacheWrite1hTokens` → `cache write 1h tokens` */
export function words(name: string): string {
  return name
    .replace(/([a-z])([A-Z0-9])/g, '$1 $2')
    .replace(/([0-9])([A-Z])/g, '$1 $2')
    .toLowerCase();
}

/** A figure as a person reads it: numbers with separators, everything else as JSON. */
export function formatValue(value: unknown): string {
  if (typeof value === 'number') return formatCount(value);
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (value === undefined || value === null) return '—';
  return JSON.stringify(value);
}

/**
 * A figure in credits with its money beside it when the service has LEDGER_CREDIT_VALUE set (the
 * answer's `money` member, exact decimal strings): `12,345 (1.2345 USD)`; the credits alone otherwise.
 */
export function formatCountWithMoney(credits: number, money: Readonly<Record<string, string>> | undefined, field: string): string {
  const amount = money?.[field];
  return amount === undefined ? formatCount(credits) : `${formatCount(credits)} (${formatMoney(amount, money!.currency)})`;
}

/**
 * An amount of money as the API writes it (an exact decimal string) with its currency, the whole part
 * grouped: `9,999.685 USD`. Text only: money is never turned into a floating-point number.
 */
export function formatMoney(amount: string, currency: string): string {
  const [whole = '', fraction] = amount.split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${grouped}${fraction === undefined ? '' : `.${fraction}`} ${currency}`;
}
