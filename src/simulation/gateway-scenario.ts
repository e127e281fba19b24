/**
 * The gateway's part of a scenario (docs/gateway.md), drawn from its own seeded streams so the
 * operations' draws stay as they were: the rate card, organizations that only make gateway calls,
 * several keys per organization (spend limits per UTC day, month or in total, model allowlists,
 * `max_tokens` caps), most of them in one of the organization's teams (limits per day, ISO week, month
 * or in total, some with budget alerts), and per wave gateway calls (bursts on one key at one instant among them),
 * key changes and revocations, and rate card changes while calls are in flight. What upstream
 * answers each call is drawn here too; gateway-upstream.ts turns it into the call's outcome.
 */
import type { GatewayKeySettings, SpendLimit } from '../accounts/gateway-keys';
import type { GatewayTeamSettings } from '../accounts/gateway-teams';
import type { MessagesBodyFacts } from '../gateway/gateway-call.port';
import type { GatewayPrices } from '../runtime/conversation.types';
import type { Prng } from './prng';
import { WAVE_GRID_MS, WAVE_SPREAD_MS } from './simulation.bounds';

/** An organization as scenario.ts plans it (its OrganizationPlan; restated so the two files need not import each other). */
export interface GatewayOrganizationPlan {
  readonly id: string;
  readonly initialCredits: number;
  readonly maxRunning: number;
}

/** A model the rate card prices, as the simulator writes it (`PUT /v1/gateway/models/:model`). */
export interface GatewayCardPlan {
  readonly prices: GatewayPrices;
  readonly maxOutputTokens: number;
  readonly attemptTimeoutMs: number;
  readonly enabled: boolean;
}

export interface GatewayModelPlan {
  readonly model: string;
  readonly card: GatewayCardPlan;
}

export interface GatewayKeyPlan {
  readonly keyId: string;
  readonly organizationId: string;
  readonly settings: GatewayKeySettings;
  /** Virtual ms after its issue at which the key expires (`expiresAt`, docs/gateway.md "Keys"); absent: never. */
  readonly expiresAfterMs?: number;
}

/** A team (docs/gateway.md "Teams") its organization's keys may name. */
export interface GatewayTeamPlan {
  readonly teamId: string;
  readonly organizationId: string;
  readonly settings: GatewayTeamSettings;
}

/** How the simulated upstream answers one call (gateway-upstream.ts). */
export type UpstreamKind =
  | 'ok'
  | 'over-report'
  | 'malformed-usage'
  | 'error-status'
  | 'error-mid-stream'
  | 'no-usage'
  | 'timeout'
  | 'timeout-after-usage'
  | 'caller-disconnect'
  | 'crash-mid-call';

export interface GatewayCallPlan {
  readonly tag: string;
  readonly keyId: string;
  readonly organizationId: string;
  /** What the caller presents: its key, a revoked or unknown one made up, or text that is no key. */
  readonly presented: 'key' | 'unknown-key' | 'malformed';
  readonly facts: MessagesBodyFacts;
  readonly upstream: UpstreamKind;
  /** Admitted and settled by the second process's own GatewayCalls (its own repository and caches). */
  readonly bySecondProcess: boolean;
  /** Upstream's answer takes this long, in virtual ms (a timeout takes the call's whole time bound). */
  readonly latencyMs: number;
  /** Seeds the usage upstream reports. */
  readonly usageSeed: number;
  /** One of several calls on one key at one instant. */
  readonly inBurst: boolean;
}

export type GatewayAction =
  | { readonly kind: 'gateway-call'; readonly atMs: number; readonly plan: GatewayCallPlan }
  | { readonly kind: 'gateway-key-change'; readonly atMs: number; readonly key: GatewayKeyPlan; readonly settings: GatewayKeySettings }
  | { readonly kind: 'gateway-key-revoke'; readonly atMs: number; readonly key: GatewayKeyPlan }
  /** A new secret for the key; the one before works `graceSeconds` more (docs/gateway.md "Keys"). */
  | { readonly kind: 'gateway-key-rotate'; readonly atMs: number; readonly key: GatewayKeyPlan; readonly graceSeconds: number }
  | { readonly kind: 'gateway-price'; readonly atMs: number; readonly model: string; readonly card: GatewayCardPlan };

export interface GatewayPlan {
  /** Organizations that make gateway calls only: no operation runs there and no credits are taken back. */
  readonly organizations: readonly GatewayOrganizationPlan[];
  readonly models: readonly GatewayModelPlan[];
  readonly keys: readonly GatewayKeyPlan[];
  /** Created before the keys; drawn from a stream of their own, so the other draws stay as they were. */
  readonly teams: readonly GatewayTeamPlan[];
}

/** A model no rate card version names (a call to it is refused 404). */
export const UNPRICED_GATEWAY_MODEL = 'claude-sim-unpriced';
const MODELS = ['claude-sim-a', 'claude-sim-b', 'claude-sim-c'] as const;
/** Share of a wave's gateway calls made by the second process, in percent. */
const SECOND_PROCESS_CALL_PERCENT = 25;
/** Share of waves with a burst of calls on one key at one instant, in percent. */
const BURST_WAVE_PERCENT = 60;
const UPSTREAM_WEIGHTS: Readonly<Record<UpstreamKind, number>> = {
  ok: 30,
  'over-report': 6,
  'malformed-usage': 4,
  'error-status': 10,
  'error-mid-stream': 7,
  'no-usage': 5,
  timeout: 4,
  'timeout-after-usage': 4,
  'caller-disconnect': 7,
  'crash-mid-call': 4,
};

/** A rate card version: token rates in credits per million, drawn so holds land near the keys' limits. */
export function drawGatewayCard(prng: Prng, model: string, enabled = true): GatewayCardPlan {
  const scale = prng.pick([1, 2, 5]);
  const base = {
    inputPerMTok: 30_000 * scale,
    outputPerMTok: 150_000 * scale,
    cacheWritePerMTok: 37_500 * scale,
    cacheWrite1hPerMTok: 60_000 * scale,
    cacheReadPerMTok: 3_000 * scale,
    webSearchPerThousand: prng.pick([0, 1_000_000]),
  };
  const long = prng.chance(40) ? { longContext: { thresholdInputTokens: 20_000, inputPerMTok: 60_000 * scale, outputPerMTok: 225_000 * scale, cacheWritePerMTok: 75_000 * scale, cacheWrite1hPerMTok: 120_000 * scale, cacheReadPerMTok: 6_000 * scale } } : {};
  const fast = model !== MODELS[0] && prng.chance(60) ? { fast: { ...base, inputPerMTok: base.inputPerMTok * 2, outputPerMTok: base.outputPerMTok * 2 } } : {};
  const geo = prng.chance(50) ? { inferenceGeo: { us: prng.pick([10_000, 11_000, 15_000]) } } : {};
  const searches = prng.chance(30) ? { webSearchMaxUsesDefault: prng.int(0, 4) } : {};
  return {
    prices: { ...base, ...long, ...fast, ...geo, ...searches },
    maxOutputTokens: prng.pick([4_096, 8_192, 32_000]),
    attemptTimeoutMs: prng.pick([5_000, 30_000, 120_000]),
    enabled,
  };
}

function drawKeySettings(prng: Prng, name: string): GatewayKeySettings {
  const models = prng.chance(20) ? [...new Set([prng.pick(MODELS), prng.pick(MODELS)])].sort() : undefined;
  const maxOutputTokens = prng.chance(20) ? prng.pick([2_048, 6_000]) : undefined;
  const spendLimit: SpendLimit | undefined = prng.chance(65)
    ? { credits: prng.pick([0, 8_000, 30_000, 30_000, 120_000, 600_000]), period: prng.pick(['day', 'day', 'month', 'month', 'total'] as const) }
    : undefined;
  return { name, ...(models === undefined ? {} : { models }), ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }), ...(spendLimit === undefined ? {} : { spendLimit }) };
}

/** The rate card, the gateway-only organizations and every organization's keys. */
export function planGateway(root: Prng, organizations: readonly GatewayOrganizationPlan[], namespace: string): GatewayPlan {
  const prng = root.fork('gateway');
  const own: GatewayOrganizationPlan[] = [];
  for (let index = 0, count = prng.int(1, 2); index < count; index++) {
    own.push({ id: `${namespace}gw-org-${index}`, initialCredits: prng.pick([50_000, 150_000, 150_000, 2_000_000]), maxRunning: prng.int(2, 8) });
  }
  const models = MODELS.map((model) => ({ model, card: drawGatewayCard(prng.fork(`card-${model}`), model) }));
  const keys: GatewayKeyPlan[] = [];
  for (const organization of [...own, ...organizations]) {
    const count = organization.id.includes('gw-org-') ? prng.int(2, 4) : prng.int(0, 2);
    for (let index = 0; index < count; index++) {
      const keyId = `${organization.id}-key-${index}`;
      keys.push({ keyId, organizationId: organization.id, settings: drawKeySettings(prng, `key ${index} of ${organization.id}`) });
    }
  }
  const teams = planTeams(root.fork('gateway-teams'), [...own, ...organizations]);
  const teamed = keys.map((key) => withTeam(key, teams, root.fork(`team-of-${key.keyId}`)));
  return { organizations: own, models, keys: teamed.map((key) => withRateLimits(key, root.fork(`rate-limits-of-${key.keyId}`))), teams };
}

/**
 * Some keys without a spend limit get rate limits (docs/gateway.md "Rate limits") and some an expiry,
 * from a stream of their own so the other draws stay as they were. Limits are tight enough to be met by bursts (a few calls in
 * flight, a few per minute, tokens near one or two calls' worst case, some below one call's).
 */
function withRateLimits(key: GatewayKeyPlan, prng: Prng): GatewayKeyPlan {
  // Keys limited by money stay as they were: their spend-limit refusals are what other checks meet.
  if (key.settings.spendLimit !== undefined) return key;
  const limits = {
    ...(prng.chance(35) ? { maxConcurrent: prng.int(1, 3) } : {}),
    ...(prng.chance(35) ? { requestsPerMinute: prng.int(2, 6) } : {}),
    ...(prng.chance(35) ? { tokensPerMinute: prng.pick([8_000, 30_000, 120_000]) } : {}),
  };
  const expiry = prng.chance(10) ? { expiresAfterMs: prng.pick([300_000, 1_800_000]) } : {};
  return { ...key, settings: { ...key.settings, ...limits }, ...expiry };
}

/** A key's rate limits, which a change keeps (the planned change draws the rest anew). */
export function rateLimitsOf(settings: GatewayKeySettings): Pick<GatewayKeySettings, 'maxConcurrent' | 'requestsPerMinute' | 'tokensPerMinute'> {
  const { maxConcurrent, requestsPerMinute, tokensPerMinute } = settings;
  return { ...(maxConcurrent === undefined ? {} : { maxConcurrent }), ...(requestsPerMinute === undefined ? {} : { requestsPerMinute }), ...(tokensPerMinute === undefined ? {} : { tokensPerMinute }) };
}

/** One or two teams per organization, with limits near the keys' (some weekly) and alerts. */
function planTeams(prng: Prng, organizations: readonly GatewayOrganizationPlan[]): GatewayTeamPlan[] {
  const teams: GatewayTeamPlan[] = [];
  for (const organization of organizations) {
    for (let index = 0, count = prng.int(1, 2); index < count; index++) {
      const spendLimit: SpendLimit | undefined = prng.chance(80)
        ? { credits: prng.pick([8_000, 60_000, 200_000, 600_000, 2_000_000]), period: prng.pick(['day', 'week', 'week', 'month', 'total'] as const) }
        : undefined;
      const alertAt = spendLimit !== undefined && prng.chance(70) ? { alertAt: [prng.pick([1, 10, 25]), 50, 90] } : {};
      teams.push({ teamId: `${organization.id}-team-${index}`, organizationId: organization.id, settings: { name: `team ${index} of ${organization.id}`, ...(spendLimit === undefined ? {} : { spendLimit }), ...alertAt } });
    }
  }
  return teams;
}

/** The key in one of its organization's teams, one time in two. */
function withTeam(key: GatewayKeyPlan, teams: readonly GatewayTeamPlan[], prng: Prng): GatewayKeyPlan {
  const own = teams.filter((team) => team.organizationId === key.organizationId);
  if (own.length === 0 || !prng.chance(50)) return key;
  return { ...key, settings: { ...key.settings, teamId: prng.pick(own).teamId } };
}

function drawFacts(prng: Prng, tag: string): MessagesBodyFacts {
  const model = prng.chance(4) ? UNPRICED_GATEWAY_MODEL : prng.pick(MODELS);
  const searches = prng.chance(20) ? [prng.chance(50) ? undefined : prng.int(0, 3)] : [];
  // Drawn on a stream of its own, so the draws of every other fact (and call) stay as they were.
  const fetchPrng = prng.fork(`web-fetch-${tag}`);
  const fetches = fetchPrng.chance(10)
    ? [{ ...(fetchPrng.chance(50) ? {} : { maxUses: fetchPrng.int(1, 3) }), ...(fetchPrng.chance(50) ? {} : { maxContentTokens: fetchPrng.pick([500, 5_000]) }) }]
    : [];
  return {
    bodyBytes: prng.pick([40, 900, 6_000, 30_000]),
    model,
    // Now and then past every cap (400), else within the smaller ones or near the cards' own.
    maxTokens: prng.chance(4) ? 64_000 : prng.pick([16, 256, 1_024, 1_024, 4_096]),
    stream: prng.chance(60),
    imageBlocks: prng.chance(15) ? prng.int(1, 2) : 0,
    documentBlocks: prng.chance(4) ? 1 : 0,
    webSearchMaxUses: searches,
    webFetches: fetches,
    codeExecutionTools: [],
    mcpServers: 0,
    definedTools: searches.length + fetches.length,
    ...(prng.chance(20) ? { speed: 'fast' } : {}),
    ...(prng.chance(25) ? { inferenceGeo: 'us' } : {}),
  };
}

function drawCall(prng: Prng, tag: string, key: GatewayKeyPlan, inBurst = false): GatewayCallPlan {
  const presented = prng.chance(3) ? 'malformed' : prng.chance(3) ? 'unknown-key' : 'key';
  const upstream = prng.weighted(UPSTREAM_WEIGHTS);
  return {
    tag,
    keyId: key.keyId,
    organizationId: key.organizationId,
    presented,
    facts: drawFacts(prng, tag),
    upstream,
    bySecondProcess: prng.chance(SECOND_PROCESS_CALL_PERCENT),
    latencyMs: prng.pick([0, 250, 1_000, 4_000]),
    usageSeed: prng.int(0, 2 ** 31),
    inBurst,
  };
}

/** One wave's gateway work: single calls, perhaps a burst on one key, key changes and rate card changes. */
export function planGatewayWave(wavePrng: Prng, index: number, plan: GatewayPlan): GatewayAction[] {
  if (plan.keys.length === 0) return [];
  const prng = wavePrng.fork('gateway');
  const at = (): number => prng.int(0, WAVE_SPREAD_MS / WAVE_GRID_MS) * WAVE_GRID_MS;
  const actions: GatewayAction[] = [];
  let calls = 0;
  const tag = (): string => `g${index}.${calls++}`;
  for (let n = 0, count = prng.int(3, 10); n < count; n++) actions.push({ kind: 'gateway-call', atMs: at(), plan: drawCall(prng, tag(), prng.pick(plan.keys)) });
  if (prng.chance(BURST_WAVE_PERCENT)) {
    // Concurrent calls on one key at one instant, from both processes: only the account's one decision
    // at its expected revision keeps them within the key's limit and the organization's credits.
    const key = prng.pick(plan.keys);
    const atMs = at();
    for (let n = 0, count = prng.int(3, 12); n < count; n++) actions.push({ kind: 'gateway-call', atMs, plan: drawCall(prng, tag(), key, true) });
  }
  if (prng.chance(35)) {
    const key = prng.pick(plan.keys);
    // A change keeps the key in its team: the settings are whole, and a key's team is planned once.
    const teamId = key.settings.teamId === undefined ? {} : { teamId: key.settings.teamId };
    actions.push({ kind: 'gateway-key-change', atMs: at(), key, settings: { ...drawKeySettings(prng, `${key.settings.name} (changed in wave ${index})`), ...teamId, ...rateLimitsOf(key.settings) } });
  }
  if (prng.chance(15)) actions.push({ kind: 'gateway-key-revoke', atMs: at(), key: prng.pick(plan.keys) });
  if (prng.chance(30)) {
    const model = prng.pick(MODELS);
    actions.push({ kind: 'gateway-price', atMs: at(), model, card: drawGatewayCard(prng.fork(`card-w${index}`), model, !prng.chance(15)) });
  }
  // From a stream of its own, so the other draws stay as they were.
  const rotations = wavePrng.fork('gateway-rotations');
  if (rotations.chance(20)) {
    const atMs = rotations.int(0, WAVE_SPREAD_MS / WAVE_GRID_MS) * WAVE_GRID_MS;
    actions.push({ kind: 'gateway-key-rotate', atMs, key: rotations.pick(plan.keys), graceSeconds: rotations.pick([0, 5, 60]) });
  }
  return actions;
}
