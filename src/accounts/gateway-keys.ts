/**
 * Gateway keys (docs/gateway.md): an organization's keys for the Anthropic-compatible gateway, kept
 * in its account stream so a key's spend limit is checked in the same decision, against the same
 * expected revision, as the organization's credits and slots. Nothing here holds a key: only the
 * SHA-256 of it, which the key's 256 random bits make as safe to keep as a slow hash would.
 */
import { DomainError } from '../domain/domain.errors';
import { FieldChecks, isoToMs } from '../domain/field-checks';
import { MAX_LEDGER_ENTRY_CREDITS } from './account.bounds';
import { readAlertAt, type BudgetAlertsSent } from './budget-alerts';

/** Keys an organization may hold, revoked ones included (each stays for its history and its holds). */
export const MAX_GATEWAY_KEYS_PER_ORGANIZATION = 1_000;
/** Longest key name, in characters. */
export const MAX_GATEWAY_KEY_NAME_CHARS = 100;
/** Models a key's allowlist may name. */
export const MAX_GATEWAY_KEY_MODELS = 100;
/** Longest model name in an allowlist, in characters. */
export const MAX_GATEWAY_MODEL_NAME_CHARS = 200;
/** Largest `maxOutputTokens` a key may cap requests at, in tokens. */
export const MAX_GATEWAY_KEY_OUTPUT_TOKENS = 1_000_000;
/** Characters of a key's SHA-256, hex. */
export const GATEWAY_KEY_HASH_HEX_CHARS = 64;
/** Highest `maxConcurrent` a key may set, in calls in flight. */
export const MAX_GATEWAY_KEY_CONCURRENT_CALLS = 1_000;
/** Highest `requestsPerMinute` a key may set, in calls admitted per UTC minute. */
export const MAX_GATEWAY_KEY_REQUESTS_PER_MINUTE = 1_000_000;
/** Highest `tokensPerMinute` a key may set, in tokens per UTC minute. */
export const MAX_GATEWAY_KEY_TOKENS_PER_MINUTE = 1_000_000_000_000;
/**
 * What a call refused for a key's `maxConcurrent` is told to wait, in whole seconds (`retry-after`):
 * a call in flight may end any moment, so no later instant is known.
 */
export const KEY_CONCURRENCY_RETRY_AFTER_SECONDS = 1;
/** Longest grace a rotation may leave the old secret, in seconds: 30 days. */
export const MAX_GATEWAY_KEY_ROTATION_GRACE_SECONDS = 2_592_000;

/**
 * Why a call by a known key was refused before anything was held (docs/gateway.md "Rejections before
 * admission"): its model is not on the rate card (or not enabled), the key may not call it, its
 * `max_tokens` is over the key's or the rate card's cap, its worst-case tokens alone are over the key's
 * `tokensPerMinute` (no minute could admit it), it cannot be held (a server tool the rate
 * card gives no allowance, or a worst case past what one call may hold), or its body could not be
 * read as a Messages request.
 */
export const GATEWAY_REJECTION_REASONS = ['model_not_on_rate_card', 'model_not_allowed', 'max_tokens_over_cap', 'max_tokens_over_tokens_per_minute', 'not_holdable', 'invalid_body'] as const;
export type GatewayRejectionReason = (typeof GATEWAY_REJECTION_REASONS)[number];
/** Rejections of a key by reason; a reason never seen is absent. */
export type GatewayRejectionCounts = Readonly<Partial<Record<GatewayRejectionReason, number>>>;

export const SPEND_PERIODS = ['day', 'week', 'month', 'total'] as const;
export type SpendPeriod = (typeof SPEND_PERIODS)[number];

export interface SpendLimit {
  /** Integer credits the key (or team) may spend (charged plus held) in one period. */
  readonly credits: number;
  /** A UTC calendar day, an ISO week (from Monday 00:00 UTC), a UTC calendar month, or the whole life. */
  readonly period: SpendPeriod;
}

/** What an administrator sets on a key; every field but the name is optional (absent: no cap). */
export interface GatewayKeySettings {
  readonly name: string;
  /** The models the key may call; absent: every model on the rate card. */
  readonly models?: readonly string[];
  /** The largest `max_tokens` a call with this key may ask for; absent: the rate card's cap alone. */
  readonly maxOutputTokens?: number;
  readonly spendLimit?: SpendLimit;
  /** Percentages of `spendLimit` at which a GatewayBudgetThresholdCrossed is recorded, once per period. */
  readonly alertAt?: readonly number[];
  /** The team whose limit the key's calls also count against (docs/gateway.md "Teams"); absent: none. */
  readonly teamId?: string;
  /** ISO-8601: from this instant the key is refused (401); absent: it never expires. */
  readonly expiresAt?: string;
  /** Calls in flight (held, not yet settled) the key may have at once; absent: the organization's `maxRunning` alone. */
  readonly maxConcurrent?: number;
  /** Calls the key may have admitted in one UTC minute. */
  readonly requestsPerMinute?: number;
  /** Tokens the key's calls admitted in one UTC minute may hold (worst case until settled, then their usage). */
  readonly tokensPerMinute?: number;
}

/** The rate limits of a key's settings. */
export const KEY_RATE_LIMITS = ['maxConcurrent', 'requestsPerMinute', 'tokensPerMinute'] as const;
export type KeyRateLimit = (typeof KEY_RATE_LIMITS)[number];

/**
 * What a key's calls admitted in its latest minute count against `requestsPerMinute` and
 * `tokensPerMinute`: only that minute is kept, so the state stays one entry per key.
 */
export interface KeyMinute {
  /** The UTC minute, `2026-12-03T20:44`. */
  readonly minute: string;
  readonly requests: number;
  /** Worst-case tokens of the calls still held, reported tokens of those settled. */
  readonly tokens: number;
}

export interface GatewayKey extends GatewayKeySettings {
  readonly keyId: string;
  readonly keyHash: string;
  readonly issuedAt: string;
  readonly revokedAt?: string;
  /** The secret before the latest rotation (its SHA-256) and the instant it stops working. */
  readonly previousKeyHash?: string;
  readonly previousKeyValidUntil?: string;
  readonly rotatedAt?: string;
  /** Absent before the key's first call, and in state written before rate limits existed. */
  readonly rateMinute?: KeyMinute;
  /** The period (`2026-12-01`, `2026-W49`, `2026-12`, `total`) that `spentInPeriod` counts: the period of the key's latest hold. */
  readonly spendPeriod?: string;
  /** Credits charged for calls admitted in `spendPeriod`. */
  readonly spentInPeriod: number;
  /** Calls refused before their hold since the key was issued, by reason; absent before the first. */
  readonly rejections?: GatewayRejectionCounts;
  /** The `alertAt` thresholds already recorded as crossed, in the latest period one was. */
  readonly alertsSent?: BudgetAlertsSent;
}

/** `counts` added to a key's rejections; a count stops at Number.MAX_SAFE_INTEGER rather than leave the exact range. */
export function withRejections(key: GatewayKey, counts: GatewayRejectionCounts): GatewayKey {
  const rejections: Partial<Record<GatewayRejectionReason, number>> = { ...key.rejections };
  for (const reason of GATEWAY_REJECTION_REASONS) {
    const count = counts[reason];
    if (count !== undefined) rejections[reason] = Math.min(Number.MAX_SAFE_INTEGER, (rejections[reason] ?? 0) + count);
  }
  return { ...key, rejections };
}

/** Whether the key may call `model`: every model unless the key names its models. */
export function keyAllowsModel(key: GatewayKeySettings, model: string): boolean {
  return key.models === undefined || key.models.includes(model);
}

/**
 * The period a call admitted at `at` (ISO-8601, UTC) counts against: `2026-12-01` (a day), `2026-W49`
 * (an ISO week), `2026-12` (a month) or `total`. Names of one kind sort in time order.
 */
export function periodOf(period: SpendPeriod, at: string): string {
  if (period === 'day') return at.slice(0, 10);
  if (period === 'week') return isoWeekOf(at);
  if (period === 'month') return at.slice(0, 7);
  return 'total';
}

/** Milliseconds in a UTC day. */
const DAY_MS = 86_400_000;

/**
 * The ISO-8601 week of the UTC day `at` falls on, as `2026-W49`: weeks start Monday 00:00 UTC, and a
 * week belongs to the year of its Thursday (so 2027-01-01, a Friday, is in `2026-W53`).
 */
export function isoWeekOf(at: string): string {
  const day = Date.UTC(Number(at.slice(0, 4)), Number(at.slice(5, 7)) - 1, Number(at.slice(8, 10)));
  const weekday = (new Date(day).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
  const thursday = new Date(day + (3 - weekday) * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = 1 + Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * DAY_MS));
  return `${year}-W${String(week).padStart(2, '0')}`;
}

/**
 * The period a hold at `at` counts in for a key or a team: the period of `at`, unless the level already
 * counts a later period of the same kind (names of one kind have one length and sort in time order).
 * An instance whose clock runs behind, around midnight, stamps its hold in a period the others have
 * left; counting it there would restart the later period's count at 0 and forget what was spent in it.
 */
export function countedPeriod(level: Pick<GatewayKey, 'spendLimit' | 'spendPeriod'>, at: string): string {
  const period = periodOf(level.spendLimit?.period ?? 'total', at);
  const counted = level.spendPeriod;
  return counted !== undefined && counted.length === period.length && counted > period ? counted : period;
}

/** A key's (or a team's) figures in the period a hold at `at` counts in: what it spent and what it holds now. */
export function keySpendAt(key: Pick<GatewayKey, 'spendLimit' | 'spendPeriod' | 'spentInPeriod'>, heldByPeriod: ReadonlyMap<string, number>, at: string): { readonly period: string; readonly spent: number; readonly held: number } {
  const period = countedPeriod(key, at);
  return { period, spent: key.spendPeriod === period ? key.spentInPeriod : 0, held: heldByPeriod.get(period) ?? 0 };
}

/** The UTC minute (`2026-12-03T20:44`) that contains `at` (ISO-8601, any zone). */
export function minuteOf(at: string): string {
  return new Date(isoToMs(at)).toISOString().slice(0, 16);
}

/** The key's lifetime and rate limits, checked field by field; `expiresAt` must be after `now`. */
function readKeyLimits(checks: FieldChecks, input: Record<string, unknown>, now: string): Pick<GatewayKeySettings, 'expiresAt' | KeyRateLimit> {
  let expiresAt: string | undefined;
  if (input.expiresAt !== undefined) {
    expiresAt = checks.instant('expiresAt', input.expiresAt);
    if (Number.isFinite(isoToMs(expiresAt)) && Number.isFinite(isoToMs(now)) && isoToMs(expiresAt) <= isoToMs(now)) checks.add('expiresAt', `must be in the future (after ${now})`);
  }
  const bounds: Record<KeyRateLimit, { readonly max: number; readonly unit: string }> = {
    maxConcurrent: { max: MAX_GATEWAY_KEY_CONCURRENT_CALLS, unit: 'calls in flight' },
    requestsPerMinute: { max: MAX_GATEWAY_KEY_REQUESTS_PER_MINUTE, unit: 'calls per minute' },
    tokensPerMinute: { max: MAX_GATEWAY_KEY_TOKENS_PER_MINUTE, unit: 'tokens per minute' },
  };
  const limits: Partial<Record<KeyRateLimit, number>> = {};
  for (const limit of KEY_RATE_LIMITS) {
    if (input[limit] !== undefined) limits[limit] = checks.integer(limit, input[limit], { min: 1, ...bounds[limit] });
  }
  return { ...(expiresAt === undefined ? {} : { expiresAt }), ...limits };
}

/**
 * The key's settings, checked field by field (names are paths in the request body); `now` is the
 * instant of the issue or change, which `expiresAt` must be after.
 */
export function readKeySettings(checks: FieldChecks, input: Record<string, unknown>, now: string): GatewayKeySettings {
  const name = checks.text('name', input.name, MAX_GATEWAY_KEY_NAME_CHARS);
  let models: string[] | undefined;
  if (input.models !== undefined) {
    if (!Array.isArray(input.models)) checks.add('models', 'must be an array of model names');
    else if (input.models.length > MAX_GATEWAY_KEY_MODELS) checks.add('models', `must name at most ${MAX_GATEWAY_KEY_MODELS} models`);
    else models = [...new Set(input.models.map((model, index) => checks.text(`models.${index}`, model, MAX_GATEWAY_MODEL_NAME_CHARS)))].sort();
  }
  const maxOutputTokens =
    input.maxOutputTokens === undefined
      ? undefined
      : checks.integer('maxOutputTokens', input.maxOutputTokens, { min: 1, max: MAX_GATEWAY_KEY_OUTPUT_TOKENS, unit: 'tokens' });
  const spendLimit = readSpendLimit(checks, input.spendLimit);
  const alertAt = readBudgetAlerts(checks, input, spendLimit);
  const teamId = input.teamId === undefined ? undefined : checks.id('teamId', input.teamId);
  return {
    name,
    ...(models === undefined ? {} : { models }),
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
    ...(spendLimit === undefined ? {} : { spendLimit }),
    ...(alertAt === undefined ? {} : { alertAt }),
    ...(teamId === undefined ? {} : { teamId }),
    ...readKeyLimits(checks, input, now),
  };
}

/** A key's or a team's spend limit, checked field by field. */
export function readSpendLimit(checks: FieldChecks, value: unknown): SpendLimit | undefined {
  if (value === undefined) return undefined;
  const limit = checks.object('spendLimit', value);
  return {
    credits: checks.integer('spendLimit.credits', limit.credits, { min: 0, max: MAX_LEDGER_ENTRY_CREDITS, unit: 'credits' }),
    period: checks.oneOf('spendLimit.period', limit.period, SPEND_PERIODS),
  };
}

/** A key's or a team's `alertAt`: it needs a limit to be a percentage of. */
export function readBudgetAlerts(checks: FieldChecks, input: Record<string, unknown>, spendLimit: SpendLimit | undefined): number[] | undefined {
  const alertAt = readAlertAt(checks, input.alertAt);
  if (alertAt !== undefined && input.spendLimit === undefined) checks.add('alertAt', 'needs a spendLimit: its percentages are of that limit');
  return spendLimit === undefined ? undefined : alertAt;
}

export function readKeyHash(checks: FieldChecks, value: unknown): string {
  if (typeof value !== 'string' || !/^[0-9a-f]{64}$/.test(value)) {
    checks.add('keyHash', `must be ${GATEWAY_KEY_HASH_HEX_CHARS} lower-case hex digits`);
    return '';
  }
  return value;
}

/** The seconds a rotation leaves the old secret working, checked (0 ends it at once). */
export function readGraceSeconds(checks: FieldChecks, value: unknown): number {
  return checks.integer('graceSeconds', value, { min: 0, max: MAX_GATEWAY_KEY_ROTATION_GRACE_SECONDS, unit: 'seconds' });
}

/**
 * Whether the secret whose SHA-256 is `hash` opens `key` at `at`: the current secret until the key
 * expires, the one before the latest rotation until its grace ends too. Undefined when it does;
 * otherwise the instant it stopped working and whether that was the rotation's grace.
 */
export function keyExpiry(key: GatewayKey, hash: string, at: string): { readonly expiredAt: string; readonly rotated: boolean } | undefined {
  const ms = isoToMs(at);
  if (hash === key.previousKeyHash && key.previousKeyValidUntil !== undefined && ms >= isoToMs(key.previousKeyValidUntil)) {
    return { expiredAt: key.previousKeyValidUntil, rotated: true };
  }
  if (key.expiresAt !== undefined && ms >= isoToMs(key.expiresAt)) return { expiredAt: key.expiresAt, rotated: false };
  return undefined;
}

/** No key with this id belongs to the organization (or it was never issued): nothing is written. */
export class UnknownGatewayKeyError extends DomainError {
  override readonly name = 'UnknownGatewayKeyError';

  constructor(readonly keyId: string) {
    super('unknown_gateway_key', `gateway key "${keyId}" was not found`);
  }
}
