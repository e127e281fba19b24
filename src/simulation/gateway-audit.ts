/**
 * The audit's gateway part (docs/gateway.md), folded from the log apart from the ledger's own code:
 * the rate card's versions, each organization's keys with their settings over time, and what each key
 * spent and holds in each period. It checks that a gateway hold is placed only for a live key within
 * its limit (what the key spent and holds in the hold's period, plus the hold), that the hold counts
 * in the period the key's own kind gives at admission, that a call copies the rate card version in
 * force, that its hold is the worst case of its body's facts (computed here on its own), that it is
 * never charged more than it held, and that every refusal the log records is explained by the account
 * as it was at some moment between the call's estimate and its refusal.
 */
import type { GatewayCallOutcome, MessagesBodyFacts } from '../gateway/gateway-call.port';
import type { GatewayKeySettings, SpendPeriod } from '../accounts/gateway-keys';
import { MAX_REPORTED_USAGE_COUNT } from '../providers/anthropic/anthropic-response.mapper';
import { BASIS_POINTS_PER_MULTIPLE, type GatewayPrices, type Prices } from '../runtime/conversation.types';
import { PRICE_KINDS } from '../runtime/price-kinds';
import type { Usage } from '../runtime/provider.port';

/** Longest an admission takes from reading the rate card to its estimate, in virtual ms (store latency and conflicts included). */
export const MAX_GATEWAY_ADMISSION_SPAN_MS = 5_000;
/** docs/gateway.md's allowances, restated here so a change to the runtime's shows as a difference. */
const REQUEST_ALLOWANCE = 4_096n;
const IMAGE_ALLOWANCE = 10_000n;
const DOCUMENT_ALLOWANCE = 500_000n;
const SEARCH_RESULT_ALLOWANCE = 100_000n;
const DEFAULT_SEARCHES = 10;
const DEFINED_TOOL_ALLOWANCE = 4_096n;
const DEFAULT_FETCHES = 10;
const FETCH_CONTENT_ALLOWANCE = 100_000;
const MILLION = 1_000_000n;

export interface CardVersionAudit {
  readonly version: number;
  readonly prices: GatewayPrices;
  readonly maxOutputTokens: number;
  readonly attemptTimeoutMs: number;
  readonly enabled: boolean;
  readonly pricedAt: string;
  readonly pricedAtMs: number;
}

interface KeyVersion {
  readonly atMs: number;
  readonly settings: GatewayKeySettings;
}

/** One key as the audit folds it: its settings over time and what it spent and holds per period. */
export class KeyAudit {
  readonly versions: KeyVersion[] = [];
  revokedAtMs: number | undefined;
  /** Times its period kind changed (counting starts afresh then: docs/gateway.md "Keys"). */
  kindChanges = 0;
  /** Charges of settled holds and credits of open ones, by period, since the last change of kind. */
  readonly spent = new Map<string, number>();
  readonly held = new Map<string, number>();
  /** Open holds: invocation → its period and the kind-change count it was placed under. */
  readonly open = new Map<string, { readonly period: string; readonly epoch: number; readonly credits: number }>();

  constructor(
    readonly keyId: string,
    readonly organizationId: string,
  ) {}

  get settings(): GatewayKeySettings {
    return this.versions[this.versions.length - 1]!.settings;
  }

  get kind(): SpendPeriod {
    return this.settings.spendLimit?.period ?? 'total';
  }

  change(atMs: number, settings: GatewayKeySettings): void {
    const before = this.versions.length === 0 ? undefined : this.kind;
    this.versions.push({ atMs, settings });
    if (before !== undefined && before !== this.kind) {
      this.kindChanges += 1;
      this.spent.clear();
      this.held.clear();
    }
  }

  /** The settings in force at any moment of [fromMs, toMs]: the last before it and every change within. */
  settingsDuring(fromMs: number, toMs: number): GatewayKeySettings[] {
    const during: GatewayKeySettings[] = [];
    for (let index = this.versions.length - 1; index >= 0; index--) {
      const version = this.versions[index]!;
      if (version.atMs > toMs) continue;
      during.push(version.settings);
      if (version.atMs <= fromMs) break;
    }
    return during;
  }

  /**
   * The period a hold placed at `at` counts in (day, ISO week, month or total), computed here from the
   * kind; never one before the key's latest hold's of the same kind (docs/gateway.md "Periods": an
   * instance whose clock runs behind counts its hold in the period the key already counts).
   */
  periodAt(at: string): string {
    const kind = this.kind;
    const stamped = kind === 'day' ? at.slice(0, 10) : kind === 'week' ? isoWeekName(at) : kind === 'month' ? at.slice(0, 7) : 'total';
    const last = this.lastPeriod;
    return last !== undefined && last.length === stamped.length && last > stamped ? last : stamped;
  }

  /** The period of the key's latest hold: a hold in another one starts a new period's count. */
  lastPeriod: string | undefined;

  hold(invocationId: string, period: string, credits: number): void {
    this.lastPeriod = period;
    this.open.set(invocationId, { period, epoch: this.kindChanges, credits });
    this.held.set(period, (this.held.get(period) ?? 0) + credits);
  }

  settle(invocationId: string, charged: number): void {
    const open = this.open.get(invocationId);
    this.open.delete(invocationId);
    if (open === undefined || open.epoch !== this.kindChanges) return;
    this.held.set(open.period, (this.held.get(open.period) ?? 0) - open.credits);
    this.spent.set(open.period, (this.spent.get(open.period) ?? 0) + charged);
  }

  /** Every instant a secret of the key stopped working by rotation: a rotation (the secret before the one before) and its grace's end. */
  readonly secretEnds = new Set<string>();

  rotated(rotatedAt: string, previousValidUntil: string): void {
    this.secretEnds.add(rotatedAt);
    this.secretEnds.add(previousValidUntil);
  }

  /** The key's latest UTC minute with a hold (docs/gateway.md "Rate limits"): calls admitted in it and their tokens. */
  minute: { minute: string; requests: number; tokens: number } | undefined;
  /** Open holds' minute and worst-case tokens, for the true-up at settlement. */
  readonly openTokens = new Map<string, { readonly minute: string; readonly tokens: number }>();

  /** The minute a hold at `at` counts in: its own UTC minute, or the key's latest if that is later. */
  minuteAt(at: string): string {
    const own = new Date(Date.parse(at)).toISOString().slice(0, 16);
    return this.minute !== undefined && this.minute.minute > own ? this.minute.minute : own;
  }

  holdTokens(invocationId: string, minute: string, tokens: number): void {
    if (this.minute?.minute !== minute) this.minute = { minute, requests: 0, tokens: 0 };
    this.minute.requests += 1;
    this.minute.tokens += tokens;
    this.openTokens.set(invocationId, { minute, tokens });
  }

  /** Reported tokens replace the worst case in its minute, if that minute is still the key's latest. */
  settleTokens(invocationId: string, reported: number | undefined): void {
    const open = this.openTokens.get(invocationId);
    this.openTokens.delete(invocationId);
    if (open === undefined || reported === undefined || this.minute?.minute !== open.minute) return;
    this.minute.tokens = Math.max(0, this.minute.tokens + reported - open.tokens);
  }

  figures(period: string): { readonly spent: number; readonly held: number } {
    return { spent: this.spent.get(period) ?? 0, held: this.held.get(period) ?? 0 };
  }
}

const DAY_MS = 86_400_000;

/**
 * `2026-W49`, worked out here on its own (not with the ledger's isoWeekOf): ISO year Y's week 1 starts
 * on the Monday of the week holding 4 January of Y.
 */
export function isoWeekName(at: string): string {
  const day = Date.UTC(Number(at.slice(0, 4)), Number(at.slice(5, 7)) - 1, Number(at.slice(8, 10)));
  const firstMonday = (year: number): number => {
    const january4 = Date.UTC(year, 0, 4);
    return january4 - ((new Date(january4).getUTCDay() + 6) % 7) * DAY_MS;
  };
  let year = new Date(day).getUTCFullYear() + 1;
  while (firstMonday(year) > day) year -= 1;
  return `${year}-W${String(Math.floor((day - firstMonday(year)) / (7 * DAY_MS)) + 1).padStart(2, '0')}`;
}

/** The rate card version in force for a call estimated at `estimatedAtMs`: the latest, or one superseded during its admission. */
export function cardVersionAcceptable(versions: readonly CardVersionAudit[], version: number, estimatedAtMs: number): boolean {
  const next = versions[version];
  return version >= 1 && version <= versions.length && (next === undefined || next.pricedAtMs >= estimatedAtMs - MAX_GATEWAY_ADMISSION_SPAN_MS);
}

/** The publication a gateway call must copy: its rate card version as one turn with one attempt (docs/gateway.md). */
export function expectedGatewayPublication(model: string, card: CardVersionAudit, creditHold: number): Record<string, unknown> {
  return {
    version: card.version,
    routing: { provider: 'anthropic', model },
    limits: { maxTurns: 1, maxToolCalls: 0, totalTimeMs: card.attemptTimeoutMs, attemptTimeoutMs: card.attemptTimeoutMs, maxOutputTokens: card.maxOutputTokens, maxAttemptsPerTurn: 1 },
    prices: card.prices,
    creditHold,
    enabled: card.enabled,
    publishedAt: card.pricedAt,
  };
}

/** Every rate a call at these prices could be charged at, per kind: ordinary and fast, each with its long-context set. */
function rateSets(prices: GatewayPrices): Record<string, number>[] {
  const sets: Prices[] = [prices, ...(prices.fast === undefined ? [] : [prices.fast])];
  return sets.flatMap((set) => {
    const plain = set as unknown as Record<string, number | undefined>;
    const complete: Record<string, number> = {};
    for (const kind of PRICE_KINDS) complete[kind.rate] = rateWithFallback(plain, kind);
    if (set.longContext === undefined) return [complete];
    return [complete, { ...complete, ...(set.longContext as unknown as Record<string, number>) }];
  });
}

function rateWithFallback(rates: Record<string, number | undefined>, kind: (typeof PRICE_KINDS)[number]): number {
  const own = rates[kind.rate];
  if (own !== undefined) return own;
  if (kind.fallback === 'required') return Number.NaN;
  if ('credits' in kind.fallback) return 0;
  const sameAs = kind.fallback.sameAs;
  return rateWithFallback(rates, PRICE_KINDS.find((row) => row.rate === sameAs)!);
}

/**
 * The worst-case hold of docs/gateway.md, computed here on its own: the input bound (web searches and
 * fetches included) at the highest input-side rate, max_tokens at the highest output rate, the
 * searches at the highest search rate, all at the highest geography multiplier, rounded up once.
 */
export function independentHold(facts: MessagesBodyFacts, prices: GatewayPrices): bigint {
  const { input, searches } = independentInputBound(facts, prices);
  const sets = rateSets(prices);
  const highest = (pick: (kind: (typeof PRICE_KINDS)[number]) => boolean): bigint =>
    BigInt(Math.max(0, ...sets.flatMap((set) => PRICE_KINDS.filter(pick).map((kind) => set[kind.rate]!))));
  let millionths = input * highest((kind) => kind.input) + BigInt(facts.maxTokens) * highest((kind) => kind.usage === 'outputTokens');
  for (const kind of PRICE_KINDS.filter((row) => row.unit === 'searches')) {
    millionths += searches * highest((row) => row.usage === kind.usage) * (MILLION / BigInt(kind.unitsPerRate));
  }
  const geo = BigInt(Math.max(BASIS_POINTS_PER_MULTIPLE, ...Object.values(prices.inferenceGeo ?? {})));
  const divisor = MILLION * BigInt(BASIS_POINTS_PER_MULTIPLE);
  return (millionths * geo + divisor - 1n) / divisor;
}

/** The input bound of a call's worst case, in tokens (docs/gateway.md "How the hold is bounded"), and its searches. */
function independentInputBound(facts: MessagesBodyFacts, prices: GatewayPrices): { readonly input: bigint; readonly searches: bigint } {
  const fallback = prices.webSearchMaxUsesDefault ?? DEFAULT_SEARCHES;
  const searches = BigInt(facts.webSearchMaxUses.reduce<number>((sum, uses) => sum + (uses ?? fallback), 0));
  if (facts.codeExecutionTools.length > 0 || facts.mcpServers > 0) throw new Error('the simulated calls use no code execution or MCP servers');
  const fetches = BigInt(facts.webFetches.reduce((sum, fetch) => sum + (fetch.maxUses ?? DEFAULT_FETCHES), 0));
  const fetched = facts.webFetches.reduce((sum, fetch) => sum + BigInt(fetch.maxUses ?? DEFAULT_FETCHES) * BigInt(fetch.maxContentTokens ?? FETCH_CONTENT_ALLOWANCE), 0n);
  const uses = searches + fetches;
  const tools = BigInt(facts.definedTools) * DEFINED_TOOL_ALLOWANCE + searches * SEARCH_RESULT_ALLOWANCE + fetched;
  // After a server tool's use, a sampling step reads the context again, with the answer so far.
  const perStep = BigInt(facts.bodyBytes) + REQUEST_ALLOWANCE + BigInt(facts.imageBlocks) * IMAGE_ALLOWANCE + BigInt(facts.documentBlocks) * DOCUMENT_ALLOWANCE + tools + (uses > 0n ? BigInt(facts.maxTokens) : 0n);
  return { input: perStep * (1n + uses), searches };
}

/** A call's worst case in tokens, for a key's `tokensPerMinute` (docs/gateway.md "Rate limits"): its input bound plus max_tokens. */
export function independentWorstCaseTokens(facts: MessagesBodyFacts, prices: GatewayPrices): bigint {
  return independentInputBound(facts, prices).input + BigInt(facts.maxTokens);
}

/**
 * An attempt's price at gateway prices, on its own (docs/gateway.md "The rate card"): the `fast` set
 * when Anthropic reports a fast answer and the card has one, its long-context rates past the
 * threshold, the reported geography's multiplier and (served as a batch) the card's batch multiplier
 * on the whole price, one rounding up.
 */
export function independentGatewayPrice(usage: Usage, prices: GatewayPrices): number {
  const counts = usage as unknown as Record<string, number>;
  const base: Prices = usage.speed === 'fast' && prices.fast !== undefined ? prices.fast : prices;
  const input = PRICE_KINDS.filter((kind) => kind.input).reduce((sum, kind) => sum + BigInt(counts[kind.usage]!), 0n);
  const long = base.longContext !== undefined && input > BigInt(base.longContext.thresholdInputTokens) ? (base.longContext as unknown as Record<string, number>) : undefined;
  const plain = base as unknown as Record<string, number | undefined>;
  let millionths = 0n;
  for (const kind of PRICE_KINDS) {
    const rate = long !== undefined && kind.replaceable ? long[kind.rate]! : rateWithFallback(plain, kind);
    millionths += BigInt(counts[kind.usage]!) * BigInt(rate) * (MILLION / BigInt(kind.unitsPerRate));
  }
  const geo = BigInt((usage.inferenceGeo === undefined ? undefined : prices.inferenceGeo?.[usage.inferenceGeo]) ?? BASIS_POINTS_PER_MULTIPLE);
  const batch = BigInt((usage.serviceTier === 'batch' ? prices.batchBasisPoints : undefined) ?? BASIS_POINTS_PER_MULTIPLE);
  const divisor = MILLION * BigInt(BASIS_POINTS_PER_MULTIPLE) * BigInt(BASIS_POINTS_PER_MULTIPLE);
  return Number((millionths * geo * batch + divisor - 1n) / divisor);
}

/**
 * What the upstream reported for a call, judged here on its own (docs/gateway.md "Settlement"): a
 * final usage and its price, which the call must be charged (up to its hold, the rest on record as its
 * overrun); malformed usage (a count that is not a non-negative safe integer or is above
 * MAX_REPORTED_USAGE_COUNT, or a price past the exact-integer range), which must be charged the hold;
 * or no usage at all.
 */
export type UpstreamReport = { readonly kind: 'usage'; readonly usage: Usage; readonly priceCredits: number } | { readonly kind: 'malformed' } | { readonly kind: 'none' };

export function judgeUpstreamReport(outcome: GatewayCallOutcome, prices: GatewayPrices): UpstreamReport {
  if (outcome.malformedUsage !== undefined) return { kind: 'malformed' };
  const usage = outcome.usage;
  if (usage === undefined) return { kind: 'none' };
  const counts = usage as unknown as Record<string, number>;
  const malformedCount = (count: number | undefined): boolean => count === undefined || !Number.isSafeInteger(count) || count < 0 || count > MAX_REPORTED_USAGE_COUNT;
  if (PRICE_KINDS.some((kind) => malformedCount(counts[kind.usage]))) return { kind: 'malformed' };
  const priceCredits = independentGatewayPrice(usage, prices);
  return Number.isSafeInteger(priceCredits) ? { kind: 'usage', usage, priceCredits } : { kind: 'malformed' };
}

/**
 * A gateway call's settlement against what its upstream reported, when its attempt was recorded: a
 * final usage is charged at least its price and at most the hold, any difference an overrun on record
 * (`charge + overrun = price`); malformed usage is charged the hold (transition 9). Undefined when it
 * holds, else what is wrong.
 */
export function settlementAgainstReport(report: UpstreamReport, settlement: { readonly transition: number; readonly charge: number; readonly overrun: number }, hold: number): string | undefined {
  const { transition, charge, overrun } = settlement;
  if (report.kind === 'malformed') return transition === 9 && charge === hold ? undefined : `upstream reported malformed usage; settled by transition ${transition} at ${charge} of a ${hold}-credit hold`;
  if (report.kind === 'none' || (transition !== 8 && transition !== 10)) return undefined;
  if (charge <= hold && charge + overrun === report.priceCredits) return undefined;
  return `upstream's usage prices at ${report.priceCredits}; charged ${charge} of a ${hold}-credit hold with an overrun of ${overrun} on record`;
}

/** The figures a recorded refusal can be explained by: the account as the audit folded it after one event. */
export interface AccountMoment {
  readonly available: number;
  readonly running: number;
  readonly maxRunning: number;
  readonly aiEnabled: boolean;
  /** Per key: its limit and period kind, and what it spent and holds in each period. */
  readonly keys: ReadonlyMap<
    string,
    {
      readonly revoked: boolean;
      readonly models: readonly string[] | undefined;
      readonly maxOutputTokens: number | undefined;
      readonly limit: number | undefined;
      readonly kind: SpendPeriod;
      readonly kindChanges: number;
      readonly spent: ReadonlyMap<string, number>;
      readonly held: ReadonlyMap<string, number>;
      readonly limits: Pick<GatewayKeySettings, 'expiresAt' | 'maxConcurrent' | 'requestsPerMinute' | 'tokensPerMinute'>;
      readonly inFlight: number;
      /** Instants a secret of the key stopped working by rotation (rotations and graces' ends). */
      readonly secretEnds: ReadonlySet<string>;
      readonly minute: { readonly minute: string; readonly requests: number; readonly tokens: number } | undefined;
    }
  >;
  /** Per team (docs/gateway.md "Teams"), the same figures as a key's (folded by a KeyAudit of its own). */
  readonly teams: AccountMoment['keys'];
}

export function momentOf(available: number, running: number, maxRunning: number, aiEnabled: boolean, keys: Iterable<KeyAudit>, teams: Iterable<KeyAudit> = []): AccountMoment {
  return { available, running, maxRunning, aiEnabled, keys: levelFigures(keys), teams: levelFigures(teams) };
}

function levelFigures(keys: Iterable<KeyAudit>): AccountMoment['keys'] {
  const figures = new Map<string, AccountMoment['keys'] extends ReadonlyMap<string, infer V> ? V : never>();
  for (const key of keys) {
    figures.set(key.keyId, {
      revoked: key.revokedAtMs !== undefined,
      models: key.settings.models,
      maxOutputTokens: key.settings.maxOutputTokens,
      limit: key.settings.spendLimit?.credits,
      kind: key.kind,
      kindChanges: key.kindChanges,
      spent: new Map(key.spent),
      held: new Map(key.held),
      limits: { expiresAt: key.settings.expiresAt, maxConcurrent: key.settings.maxConcurrent, requestsPerMinute: key.settings.requestsPerMinute, tokensPerMinute: key.settings.tokensPerMinute },
      inFlight: key.open.size,
      secretEnds: new Set(key.secretEnds),
      minute: key.minute === undefined ? undefined : { ...key.minute },
    });
  }
  return figures;
}

/** True when the refusal's reason and figures are what the account said at `moment`. */
export function refusalExplainedBy(refusal: { readonly reason: string; readonly figures: Record<string, unknown> }, estimate: number, moment: AccountMoment): boolean {
  const f = refusal.figures;
  switch (refusal.reason) {
    case 'ai_disabled':
      return !moment.aiEnabled;
    case 'key_revoked':
      // Revoked between the key check and the hold (docs/gateway.md "Admission").
      return moment.keys.get(f.keyId as string)?.revoked === true;
    case 'key_model_not_allowed': {
      // Its models changed between the key check and the hold.
      const models = moment.keys.get(f.keyId as string)?.models;
      return models !== undefined && !models.includes(f.model as string);
    }
    case 'key_max_tokens': {
      // Its cap was lowered between the key check and the hold.
      const cap = moment.keys.get(f.keyId as string)?.maxOutputTokens;
      return cap !== undefined && f.maxOutputTokens === cap && (f.maxTokens as number) > cap;
    }
    case 'key_expired': {
      // Past its expiresAt at the hold, or a secret rotated away whose grace (or the next rotation) had ended.
      const key = moment.keys.get(f.keyId as string);
      if (f.rotated === true) return key?.secretEnds.has(f.expiredAt as string) === true;
      return key?.limits.expiresAt !== undefined && f.expiredAt === key.limits.expiresAt;
    }
    case 'key_worst_case_tokens': {
      const allowed = moment.keys.get(f.keyId as string)?.limits.tokensPerMinute;
      return allowed !== undefined && f.tokensPerMinute === allowed && (f.worstCaseTokens as number) > allowed;
    }
    case 'key_rate_limit':
      return rateLimitExplains(moment.keys.get(f.keyId as string), f);
    case 'insufficient_credits':
      return moment.aiEnabled && f.creditHold === estimate && f.available === moment.available && moment.available < estimate;
    case 'no_running_slot':
      return f.running === moment.running && f.maxRunning === moment.maxRunning && moment.running >= moment.maxRunning;
    case 'key_spend_limit':
      return limitExplains(moment.keys.get(f.keyId as string), f, estimate, moment);
    case 'team_spend_limit':
      return limitExplains(moment.teams.get(f.teamId as string), f, estimate, moment);
    default:
      return false;
  }
}

/** A key's or a team's limit refusal: its limit, kind and figures as the audit had them, short of the hold. */
function limitExplains(key: (AccountMoment['keys'] extends ReadonlyMap<string, infer V> ? V : never) | undefined, f: Record<string, unknown>, estimate: number, moment: AccountMoment): boolean {
  if (key === undefined || key.limit !== f.limitCredits || key.kind !== f.period || f.creditHold !== estimate) return false;
  const spent = key.spent.get(f.periodStart as string) ?? 0;
  const held = key.held.get(f.periodStart as string) ?? 0;
  const remaining = (f.limitCredits as number) - (f.spentCredits as number) - (f.heldCredits as number);
  // After a change of period kind the ledger may still count what came before (it restarts at the
  // next hold in another period): figures at least the audit's then, exactly them otherwise.
  const counted = key.kindChanges === 0 ? f.spentCredits === spent && f.heldCredits === held : (f.spentCredits as number) >= spent && (f.heldCredits as number) >= held;
  return moment.available >= estimate && counted && remaining < estimate;
}

/** A key_rate_limit refusal's figures are the key's limit and count at this moment, and they refuse the call. */
function rateLimitExplains(key: (AccountMoment['keys'] extends ReadonlyMap<string, infer V> ? V : never) | undefined, f: Record<string, unknown>): boolean {
  if (key === undefined) return false;
  const limit = f.limit as 'maxConcurrent' | 'requestsPerMinute' | 'tokensPerMinute';
  const counted = f.counted as number;
  const refuses = counted + (f.asked as number) > (f.allowed as number) && f.allowed === key.limits[limit];
  if (limit === 'maxConcurrent') return refuses && f.asked === 1 && counted === key.inFlight;
  const minute = key.minute !== undefined && key.minute.minute === f.minute ? key.minute : { requests: 0, tokens: 0 };
  return refuses && (limit === 'requestsPerMinute' ? f.asked === 1 && counted === minute.requests : counted === minute.tokens);
}
