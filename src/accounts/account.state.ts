/**
 * State of a credit account and the figures derived from it. The state grows with grants and
 * adjustments (operator actions, kept for idempotency) and with holds in flight, never with the number
 * of invocations an account has seen: a settled hold leaves nothing behind, so admission costs the
 * same on a young stream and an old one.
 *
 * Nor does a call's work on it grow with the account's size (bench/README.md "The account's maps"):
 * - its maps are persistent (immutable.js's, read as a StateMap): the state after an event shares
 *   every entry it did not change with the state before, so a hold placed or settled costs O(log n) in
 *   the holds in flight and the keys held, where a copy of each map cost O(n) (an account at
 *   MAX_GATEWAY_KEYS_PER_ORGANIZATION keys copied a thousand keys several times a call). The maps that
 *   are listed keep their insertion order, as a native Map does, so they list in the same order;
 * - the sums admission reads from the holds in flight are kept with them (HeldFigures), so a decision
 *   no longer walks every open hold.
 */
import { Map as ImmutableMap, OrderedMap } from 'immutable';
import { DEFAULT_MAX_RUNNING, MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_OVERRUN_CREDITS } from './account.bounds';
import type { AccountEvent, HoldGatewayKey } from './account.events';
import { isPast, thresholdKey, type AlertFigures, type AlertThreshold } from './credit-alerts';
import { withAlertSent } from './budget-alerts';
import { keySpendAt, withRejections, type GatewayKey } from './gateway-keys';
import type { GatewayTeam } from './gateway-teams';

/**
 * How the state's maps are read: a ReadonlyMap's reading methods, which both a native Map and the
 * persistent map evolve keeps offer (no `forEach`: immutable.js's stops at a callback returning false).
 */
export interface StateMap<K, V> extends Iterable<[K, V]> {
  readonly size: number;
  get(key: K): V | undefined;
  has(key: K): boolean;
  keys(): IterableIterator<K>;
  values(): IterableIterator<V>;
  entries(): IterableIterator<[K, V]>;
}

/** A hold not yet settled. */
export interface OpenHold {
  readonly credits: number;
  /** ISO-8601; lets a reconciler find holds older than a threshold. */
  readonly placedAt: string;
  /** A gateway call's key and the period its hold counts in. */
  readonly gatewayKey?: HoldGatewayKey;
}

/** The first result of an idempotency key, returned again when the key is repeated. */
export interface LedgerEntry {
  readonly kind: 'grant' | 'adjustment';
  readonly credits: number;
  readonly reason: string;
  readonly at: string;
}

export interface AccountState {
  /** False until the stream has an event: an organization nobody has granted to or configured. */
  readonly exists: boolean;
  readonly granted: number;
  /** Sum of adjustments; may be negative. */
  readonly adjustments: number;
  readonly charged: number;
  readonly aiEnabled: boolean;
  readonly maxRunning: number;
  /** invocationId → its open hold. One entry per running invocation. */
  readonly openHolds: StateMap<string, OpenHold>;
  /** idempotencyKey → the grant or adjustment it produced. */
  readonly ledgerEntries: StateMap<string, LedgerEntry>;
  /** The credit alert thresholds in force (README.md "Credit alerts"), at most MAX_ALERT_THRESHOLDS. */
  readonly alertThresholds: readonly AlertThreshold[];
  /**
   * Keys (thresholdKey) of the thresholds whose crossing was recorded and whose figure is still past
   * them: no second CreditThresholdCrossed until the figure has come back.
   */
  readonly crossedThresholds: ReadonlySet<string>;
  /** keyId → the organization's gateway keys (docs/gateway.md), revoked ones included. */
  readonly gatewayKeys: StateMap<string, GatewayKey>;
  /** SHA-256 of a key → its keyId, to find the key a gateway call presents. */
  readonly gatewayKeyHashes: StateMap<string, string>;
  /** teamId → the organization's gateway teams (docs/gateway.md "Teams"); a deleted team is gone. */
  readonly gatewayTeams: StateMap<string, GatewayTeam>;
  /** What `openHolds` holds, kept as each hold is placed and settled (never snapshotted: derived again on load). */
  readonly held: HeldFigures;
}

/**
 * The sums admission reads from the holds in flight, kept with them so a decision reads each in O(1)
 * instead of walking every open hold (an account may have MAX_RUNNING_LIMIT in flight). Always equal to
 * heldFiguresOf(openHolds): the property test in test/accounts/account.held-figures.properties.spec.ts
 * says so after any sequence of events.
 */
export interface HeldFigures {
  /** Credits the open holds hold. */
  readonly credits: number;
  /** keyId → its calls in flight and their credits by the key's period each counts in; only keys with one. */
  readonly byKey: StateMap<string, HoldsInFlight>;
  /** teamId → the same for the calls of its keys, by the team's period each counts in. */
  readonly byTeam: StateMap<string, HoldsInFlight>;
}

/** A key's or a team's holds in flight. */
export interface HoldsInFlight {
  readonly count: number;
  /** period → credits held in it; only periods holding credits (one or two: holds made before and after a period began). */
  readonly creditsByPeriod: ReadonlyMap<string, number>;
}

const NO_HOLDS: HoldsInFlight = { count: 0, creditsByPeriod: new Map() };
const NOTHING_HELD: HeldFigures = { credits: 0, byKey: ImmutableMap(), byTeam: ImmutableMap() };

/** A new organization may use AI and run DEFAULT_MAX_RUNNING invocations at once. */
export function initialAccountState(): AccountState {
  return {
    exists: false,
    granted: 0,
    adjustments: 0,
    charged: 0,
    aiEnabled: true,
    maxRunning: DEFAULT_MAX_RUNNING,
    openHolds: OrderedMap(),
    ledgerEntries: OrderedMap(),
    alertThresholds: [],
    crossedThresholds: new Set(),
    gatewayKeys: OrderedMap(),
    gatewayKeyHashes: ImmutableMap(),
    gatewayTeams: OrderedMap(),
    held: NOTHING_HELD,
  };
}

/** The held figures of a set of open holds, walked once (a snapshot's, or a reference to check the kept ones against). */
export function heldFiguresOf(openHolds: StateMap<string, OpenHold>): HeldFigures {
  let held = NOTHING_HELD;
  for (const hold of openHolds.values()) held = withHeld(held, hold, 1);
  return held;
}

/** `held` with `hold` added (`sign` 1) or taken away (-1). */
function withHeld(held: HeldFigures, hold: OpenHold, sign: 1 | -1): HeldFigures {
  const credits = held.credits + sign * hold.credits;
  const key = hold.gatewayKey;
  if (key === undefined) return { ...held, credits };
  const byKey = withHoldsInFlight(persistentIndex(held.byKey), key.keyId, key.period, sign * hold.credits, sign);
  const byTeam = key.team === undefined ? held.byTeam : withHoldsInFlight(persistentIndex(held.byTeam), key.team.teamId, key.team.period, sign * hold.credits, sign);
  return { credits, byKey, byTeam };
}

function withHoldsInFlight(map: ImmutableMap<string, HoldsInFlight>, id: string, period: string, credits: number, count: 1 | -1): ImmutableMap<string, HoldsInFlight> {
  const before = map.get(id) ?? NO_HOLDS;
  if (before.count + count === 0) return map.delete(id);
  const creditsByPeriod = new Map(before.creditsByPeriod);
  const inPeriod = (creditsByPeriod.get(period) ?? 0) + credits;
  // Only periods that hold credits are kept, so the figures stay as small as the holds in flight.
  if (inPeriod === 0) creditsByPeriod.delete(period);
  else creditsByPeriod.set(period, inPeriod);
  return map.set(id, { count: before.count + count, creditsByPeriod });
}

/**
 * A state's map as the persistent map evolve changes: itself when it is one (every state evolve and
 * the snapshot make), else a persistent copy of it, once (a state built by hand).
 */
function persistentMap<K, V>(map: StateMap<K, V>): OrderedMap<K, V> {
  return OrderedMap.isOrderedMap(map) ? (map as OrderedMap<K, V>) : OrderedMap(map);
}

/** As persistentMap, for a map that is only looked up, never listed (`gatewayKeyHashes`): its order is not kept. */
function persistentIndex<K, V>(map: StateMap<K, V>): ImmutableMap<K, V> {
  return ImmutableMap.isMap(map) ? (map as ImmutableMap<K, V>) : ImmutableMap(map);
}

/** Credits a key's open holds hold, by the period each counts in (only periods holding credits). */
export function keyHoldsByPeriod(state: AccountState, keyId: string): ReadonlyMap<string, number> {
  return (state.held.byKey.get(keyId) ?? NO_HOLDS).creditsByPeriod;
}

/** A key's calls in flight. */
export function keyCallsInFlight(state: AccountState, keyId: string): number {
  return (state.held.byKey.get(keyId) ?? NO_HOLDS).count;
}

/** A key's spend and holds in the period that contains `at` (ISO-8601). */
export function keySpend(state: AccountState, key: GatewayKey, at: string): { readonly period: string; readonly spent: number; readonly held: number } {
  return keySpendAt(key, keyHoldsByPeriod(state, key.keyId), at);
}

/** Credits the open holds of a team's keys hold, by the team's period each counts in (only periods holding credits). */
export function teamHoldsByPeriod(state: AccountState, teamId: string): ReadonlyMap<string, number> {
  return (state.held.byTeam.get(teamId) ?? NO_HOLDS).creditsByPeriod;
}

/** A team's spend and holds in the period that contains `at` (ISO-8601). */
export function teamSpend(state: AccountState, team: GatewayTeam, at: string): { readonly period: string; readonly spent: number; readonly held: number } {
  return keySpendAt(team, teamHoldsByPeriod(state, team.teamId), at);
}

/** The figures credit alerts are read against. */
export function alertFiguresOf(state: AccountState): AlertFigures {
  return { available: availableCredits(state), charged: state.charged, grantedCredits: state.granted + state.adjustments };
}

/** Credits held by open holds. */
export function heldCredits(state: AccountState): number {
  return state.held.credits;
}

/** Running slots taken: one per open hold. */
export function runningCount(state: AccountState): number {
  return state.openHolds.size;
}

/**
 * `granted + adjustments − charged − held` (docs/lifecycle.md "Settlement and the account"). Below zero
 * only after a settlement charged more than its hold, or a negative adjustment.
 */
export function availableOf(figures: Pick<Balance, 'granted' | 'adjustments' | 'charged'>, held: number): number {
  return figures.granted + figures.adjustments - figures.charged - held;
}

/** The account's available credits (availableOf with its open holds). */
export function availableCredits(state: AccountState): number {
  return availableOf(state, heldCredits(state));
}

/** The account's figures as they would stand after a change. */
export interface AccountTotals {
  readonly granted: number;
  readonly adjustments: number;
  readonly charged: number;
  readonly held: number;
}

/**
 * True while every figure and every partial sum of `available` (as availableOf adds them) is an exact
 * integer within ±MAX_ACCOUNT_TOTAL_CREDITS. Each operand is checked before it is added to, and a sum of
 * two safe integers whose exact value leaves the range rounds to a value outside it, so the float
 * arithmetic cannot hide an inexact total.
 */
export function totalsAreExact({ granted, adjustments, charged, held }: AccountTotals): boolean {
  if (![granted, adjustments, charged, held].every(isExactCredits)) return false;
  const credited = granted + adjustments;
  if (!isExactCredits(credited)) return false;
  const afterCharges = credited - charged;
  return isExactCredits(afterCharges) && isExactCredits(afterCharges - held);
}

function isExactCredits(value: number): boolean {
  return Number.isSafeInteger(value) && Math.abs(value) <= MAX_ACCOUNT_TOTAL_CREDITS;
}

/**
 * Credits committed against MAX_ACCOUNT_TOTAL_CREDITS: what was charged, what is held, and the room
 * each running invocation keeps for its settlement to pass its hold (MAX_HOLD_OVERRUN_CREDITS).
 * Admission keeps `committed + hold + room` within the bound, so every settlement fits (lifecycle.md).
 */
export function committedCredits(state: AccountState): number {
  return state.charged + heldCredits(state) + runningCount(state) * MAX_HOLD_OVERRUN_CREDITS;
}

/** The balance read of docs/http.md, `GET /v1/organizations/:organizationId/balance`. */
export interface Balance {
  readonly granted: number;
  readonly adjustments: number;
  readonly held: number;
  readonly charged: number;
  readonly available: number;
  readonly running: number;
}

export function balanceOf(state: AccountState): Balance {
  const held = heldCredits(state);
  return {
    granted: state.granted,
    adjustments: state.adjustments,
    held,
    charged: state.charged,
    available: availableOf(state, held),
    running: runningCount(state),
  };
}

/** What an idempotency key produced first, if it was used on this account. */
export function ledgerEntryFor(state: AccountState, idempotencyKey: string): LedgerEntry | undefined {
  return state.ledgerEntries.get(idempotencyKey);
}

export function evolveAccount(state: AccountState, event: AccountEvent): AccountState {
  const next = applyAccountEvent(state, event);
  return next.crossedThresholds.size === 0 ? next : withUncrossed(next);
}

/**
 * Forgets a recorded crossing once its figure is no longer past the threshold (a grant, a released
 * hold, a positive adjustment), so the next crossing is recorded again.
 */
function withUncrossed(state: AccountState): AccountState {
  const figures = alertFiguresOf(state);
  let crossed: Set<string> | undefined;
  for (const threshold of state.alertThresholds) {
    const key = thresholdKey(threshold);
    if (state.crossedThresholds.has(key) && !isPast(threshold, figures)) (crossed ??= new Set(state.crossedThresholds)).delete(key);
  }
  return crossed === undefined ? state : { ...state, crossedThresholds: crossed };
}

/** The data of the account event of type `T`. */
type AccountEventData<T extends AccountEvent['type']> = Extract<AccountEvent, { type: T }>['data'];

function applyAccountEvent(state: AccountState, event: AccountEvent): AccountState {
  switch (event.type) {
    case 'CreditsGranted': {
      const { credits, reason, idempotencyKey, grantedAt } = event.data;
      const ledgerEntries = withEntry(state.ledgerEntries, idempotencyKey, { kind: 'grant', credits, reason, at: grantedAt });
      return { ...state, exists: true, granted: state.granted + credits, ledgerEntries };
    }
    case 'CreditsAdjusted': {
      const { credits, reason, idempotencyKey, adjustedAt } = event.data;
      const ledgerEntries = withEntry(state.ledgerEntries, idempotencyKey, { kind: 'adjustment', credits, reason, at: adjustedAt });
      return { ...state, exists: true, adjustments: state.adjustments + credits, ledgerEntries };
    }
    case 'OrganizationSettingsChanged':
      return { ...state, exists: true, aiEnabled: event.data.aiEnabled, maxRunning: event.data.maxRunning };
    case 'HoldPlaced':
      return withHoldPlaced(state, event.data);
    case 'HoldSettled':
      return withHoldSettled(state, event.data);
    case 'GatewayKeyIssued':
      return withKeyIssued(state, event.data);
    case 'GatewayKeyChanged':
      return withKeyChanged(state, event.data);
    case 'GatewayKeyRotated':
      return withKeyRotated(state, event.data);
    case 'GatewayKeyRevoked': {
      const key = state.gatewayKeys.get(event.data.keyId);
      return key === undefined ? state : withKey(state, { ...key, revokedAt: event.data.revokedAt });
    }
    case 'GatewayCallsRejected': {
      const key = state.gatewayKeys.get(event.data.keyId);
      return key === undefined ? state : withKey(state, withRejections(key, event.data.counts));
    }
    case 'GatewayTeamCreated':
    case 'GatewayTeamChanged':
    case 'GatewayTeamDeleted':
    case 'GatewayBudgetThresholdCrossed':
      return withTeamEvent(state, event);
    case 'AlertThresholdsSet': {
      // A threshold kept from the list before keeps its recorded crossing; a new one starts uncrossed.
      const keys = new Set(event.data.thresholds.map(thresholdKey));
      const crossedThresholds = new Set([...state.crossedThresholds].filter((key) => keys.has(key)));
      return { ...state, alertThresholds: event.data.thresholds, crossedThresholds };
    }
    case 'CreditThresholdCrossed': {
      const crossedThresholds = new Set(state.crossedThresholds);
      crossedThresholds.add(thresholdKey(event.data.threshold));
      return { ...state, crossedThresholds };
    }
    default:
      // An event type this version does not know (written by a newer one) changes nothing here.
      return state;
  }
}

function withHoldPlaced(state: AccountState, { invocationId, credits, placedAt, gatewayKey }: AccountEventData<'HoldPlaced'>): AccountState {
  const hold: OpenHold = { credits, placedAt, ...(gatewayKey === undefined ? {} : { gatewayKey }) };
  const replaced = state.openHolds.get(invocationId);
  const held = withHeld(replaced === undefined ? state.held : withHeld(state.held, replaced, -1), hold, 1);
  const next = { ...state, exists: true, openHolds: persistentMap(state.openHolds).set(invocationId, hold), held };
  if (gatewayKey === undefined) return next;
  const keyed = withKeyMinute(withKeyPeriod(next, gatewayKey.keyId, gatewayKey.period), gatewayKey, gatewayKey.requests ?? 1, gatewayKey.tokens ?? 0);
  return gatewayKey.team === undefined ? keyed : withTeamPeriod(keyed, gatewayKey.team.teamId, gatewayKey.team.period);
}

function withHoldSettled(state: AccountState, { invocationId, chargedCredits, reportedTokens }: AccountEventData<'HoldSettled'>): AccountState {
  const open = state.openHolds.get(invocationId);
  const openHolds = persistentMap(state.openHolds).delete(invocationId);
  const held = open === undefined ? state.held : withHeld(state.held, open, -1);
  const next = { ...state, exists: true, charged: state.charged + chargedCredits, openHolds, held };
  if (open?.gatewayKey === undefined) return next;
  const spent = withKeySpent(next, open.gatewayKey.keyId, open.gatewayKey.period, chargedCredits);
  const team = open.gatewayKey.team;
  const keyed = team === undefined ? spent : withTeamSpent(spent, team.teamId, team.period, chargedCredits);
  // Trued up: the minute counts the tokens the usage reported instead of the worst case held.
  return reportedTokens === undefined || open.gatewayKey.tokens === undefined ? keyed : withKeyMinute(keyed, open.gatewayKey, 0, reportedTokens - open.gatewayKey.tokens);
}

/**
 * Adds `requests` and `tokens` to the key's count of the hold's minute: a later minute replaces the
 * one kept (minutes only move forward), an earlier one is gone and changes nothing.
 */
function withKeyMinute(state: AccountState, hold: HoldGatewayKey, requests: number, tokens: number): AccountState {
  const key = state.gatewayKeys.get(hold.keyId);
  if (key === undefined || hold.minute === undefined) return state;
  const current = key.rateMinute;
  if (current !== undefined && current.minute > hold.minute) return state;
  const base = current?.minute === hold.minute ? current : { minute: hold.minute, requests: 0, tokens: 0 };
  return withKey(state, { ...key, rateMinute: { minute: hold.minute, requests: base.requests + requests, tokens: Math.max(0, base.tokens + tokens) } });
}

/** The key's new secret; the one before stays findable until its grace ends, the one before that is forgotten. */
function withKeyRotated(state: AccountState, { keyId, keyHash, previousValidUntil, rotatedAt }: AccountEventData<'GatewayKeyRotated'>): AccountState {
  const key = state.gatewayKeys.get(keyId);
  if (key === undefined) return state;
  const kept = key.previousKeyHash === undefined ? persistentIndex(state.gatewayKeyHashes) : persistentIndex(state.gatewayKeyHashes).delete(key.previousKeyHash);
  const gatewayKeyHashes = kept.set(keyHash, keyId);
  return { ...withKey(state, { ...key, keyHash, previousKeyHash: key.keyHash, previousKeyValidUntil: previousValidUntil, rotatedAt }), gatewayKeyHashes };
}

function withKeyIssued(state: AccountState, { keyId, keyHash, issuedAt, ...settings }: AccountEventData<'GatewayKeyIssued'>): AccountState {
  const gatewayKeys = persistentMap(state.gatewayKeys).set(keyId, { ...settings, keyId, keyHash, issuedAt, spentInPeriod: 0 });
  const gatewayKeyHashes = persistentIndex(state.gatewayKeyHashes).set(keyHash, keyId);
  return { ...state, exists: true, gatewayKeys, gatewayKeyHashes };
}

function withKeyChanged(state: AccountState, { keyId, changedAt: _changedAt, ...settings }: AccountEventData<'GatewayKeyChanged'>): AccountState {
  const key = state.gatewayKeys.get(keyId);
  if (key === undefined) return state;
  // The settings are whole: a cap or a limit left out of the change is gone.
  const { models: _m, maxOutputTokens: _o, spendLimit: _l, alertAt: _a, teamId: _t, expiresAt: _e, maxConcurrent: _c, requestsPerMinute: _r, tokensPerMinute: _tpm, ...kept } = key;
  return withKey(state, { ...kept, ...settings });
}

function withKey(state: AccountState, key: GatewayKey): AccountState {
  return { ...state, gatewayKeys: persistentMap(state.gatewayKeys).set(key.keyId, key) };
}

/** A hold in a later period than the key counted starts that period's count at 0 (periods only move forward). */
function withKeyPeriod(state: AccountState, keyId: string, period: string): AccountState {
  const key = state.gatewayKeys.get(keyId);
  if (key === undefined || key.spendPeriod === period) return state;
  return withKey(state, { ...key, spendPeriod: period, spentInPeriod: 0 });
}

/** A settled gateway hold adds its charge to the key's period, when that period is still the key's. */
function withKeySpent(state: AccountState, keyId: string, period: string, charged: number): AccountState {
  const key = state.gatewayKeys.get(keyId);
  if (key === undefined || key.spendPeriod !== period) return state;
  return withKey(state, { ...key, spentInPeriod: key.spentInPeriod + charged });
}

/** Teams (docs/gateway.md "Teams") and the budget alerts of keys and teams. */
function withTeamEvent(
  state: AccountState,
  event: Extract<AccountEvent, { type: 'GatewayTeamCreated' | 'GatewayTeamChanged' | 'GatewayTeamDeleted' | 'GatewayBudgetThresholdCrossed' }>,
): AccountState {
  switch (event.type) {
    case 'GatewayTeamCreated': {
      const { createdAt, teamId, ...settings } = event.data;
      return withTeam({ ...state, exists: true }, { ...settings, teamId, createdAt, spentInPeriod: 0 });
    }
    case 'GatewayTeamChanged': {
      const { changedAt: _changedAt, teamId, ...settings } = event.data;
      const team = state.gatewayTeams.get(teamId);
      if (team === undefined) return state;
      // The settings are whole: a limit or alerts left out of the change are gone.
      const { spendLimit: _l, alertAt: _a, ...kept } = team;
      return withTeam(state, { ...kept, ...settings });
    }
    case 'GatewayTeamDeleted': {
      return { ...state, gatewayTeams: persistentMap(state.gatewayTeams).delete(event.data.teamId) };
    }
    case 'GatewayBudgetThresholdCrossed': {
      const { budget, periodStart, percent } = event.data;
      if (budget.kind === 'key') {
        const key = state.gatewayKeys.get(budget.keyId);
        return key === undefined ? state : withKey(state, { ...key, alertsSent: withAlertSent(key.alertsSent, periodStart, percent) });
      }
      const team = state.gatewayTeams.get(budget.teamId);
      return team === undefined ? state : withTeam(state, { ...team, alertsSent: withAlertSent(team.alertsSent, periodStart, percent) });
    }
  }
}

function withTeam(state: AccountState, team: GatewayTeam): AccountState {
  return { ...state, gatewayTeams: persistentMap(state.gatewayTeams).set(team.teamId, team) };
}

/** A hold in a later period than the team counted starts that period's count at 0. */
function withTeamPeriod(state: AccountState, teamId: string, period: string): AccountState {
  const team = state.gatewayTeams.get(teamId);
  if (team === undefined || team.spendPeriod === period) return state;
  return withTeam(state, { ...team, spendPeriod: period, spentInPeriod: 0 });
}

/** A settled hold adds its charge to its team's period, when the team still exists and still counts that period. */
function withTeamSpent(state: AccountState, teamId: string, period: string, charged: number): AccountState {
  const team = state.gatewayTeams.get(teamId);
  if (team === undefined || team.spendPeriod !== period) return state;
  return withTeam(state, { ...team, spentInPeriod: team.spentInPeriod + charged });
}

function withEntry(entries: StateMap<string, LedgerEntry>, key: string, entry: LedgerEntry): StateMap<string, LedgerEntry> {
  return persistentMap(entries).set(key, entry);
}
