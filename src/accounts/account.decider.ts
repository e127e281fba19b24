/**
 * The credit account decider (docs/lifecycle.md "Settlement and the account"). Grants and adjustments
 * are idempotent by key; holds and their settlements name their invocation, so each is placed and
 * settled at most once however often a command is retried or replayed.
 */
import { MAX_CREDIT_HOLD_CREDITS, MAX_MODEL_NAME_CHARS } from '../catalog/publication.validation';
import type { SnapshotCodec } from '../aggregates/aggregate-snapshots';
import type { Decider } from '../domain/decider';
import { IdempotencyConflictError, IllegalTransitionError, ValidationError } from '../domain/domain.errors';
import { FieldChecks, MAX_REASON_CHARS } from '../domain/field-checks';
import { MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_MODELS, MAX_HOLD_OVERRUN_CREDITS, MAX_HOLD_REQUESTS, MAX_LEDGER_ENTRY_CREDITS, MAX_RUNNING_LIMIT } from './account.bounds';
import type {
  AccountCommand,
  AdjustCredits,
  ChangeGatewayKey,
  ChangeSettings,
  GrantCredits,
  IssueGatewayKey,
  PlaceHold,
  RecordGatewayRejections,
  RevokeGatewayKey,
  RotateGatewayKey,
  SetAlertThresholds,
  SettleHold,
} from './account.commands';
import { HOLD_SETTLERS, type AccountEvent, type CreditThresholdCrossed, type HoldGatewayKey } from './account.events';
import {
  AccountState,
  AccountTotals,
  alertFiguresOf,
  availableCredits,
  committedCredits,
  evolveAccount,
  heldCredits,
  initialAccountState,
  LedgerEntry,
  totalsAreExact,
} from './account.state';
import {
  ALERT_THRESHOLD_KINDS,
  isPast,
  MAX_ALERT_THRESHOLDS,
  MAX_USED_SHARE_PERCENT,
  thresholdKey,
  usedPercentFloor,
  type AlertThreshold,
} from './credit-alerts';
import { accountSnapshot } from './account.snapshot';
import { assertKnownTeam, decideTeamCommand, teamHoldOf, withBudgetAlerts } from './gateway-teams.decider';
import { admit, AdmissionRefusedError, refusalOf, totalsBoundRefusal } from './admission.policy';
import {
  GATEWAY_REJECTION_REASONS,
  keyAllowsModel,
  keyExpiry,
  minuteOf,
  readGraceSeconds,
  MAX_GATEWAY_KEYS_PER_ORGANIZATION,
  countedPeriod,
  readKeyHash,
  readKeySettings,
  UnknownGatewayKeyError,
  type GatewayKey,
  type GatewayRejectionCounts,
} from './gateway-keys';
import { isoToMs } from '../domain/field-checks';

/**
 * - GrantCredits / AdjustCredits → CreditsGranted / CreditsAdjusted; a repeated key with the same
 *   kind, credits and reason emits nothing (read the first result with `ledgerEntryFor`); the same key
 *   for anything else is an IdempotencyConflictError.
 * - ChangeSettings → OrganizationSettingsChanged, or nothing when both settings already hold.
 * - PlaceHold → HoldPlaced; nothing if the invocation already has this hold open (a conflict if with
 *   other credits); AdmissionRefusedError when the account would refuse it.
 * - SettleHold → HoldSettled; nothing when the invocation has no open hold (settled already, or never
 *   held, e.g. a request that stopped at estimated).
 * - SetAlertThresholds → AlertThresholdsSet, or nothing when the same thresholds are already set.
 * - Team commands and budget alerts: gateway-teams.decider.ts.
 * - An adjustment or a settlement that takes a figure past an alert threshold not already crossed is
 *   followed, in the same append, by one CreditThresholdCrossed per threshold it crossed
 *   (README.md "Credit alerts").
 */
export function decideAccount(command: AccountCommand, state: AccountState): AccountEvent[] {
  switch (command.type) {
    case 'GrantCredits':
      return grant(command, state);
    case 'AdjustCredits':
      return adjust(command, state);
    case 'ChangeSettings':
      return changeSettings(command, state);
    case 'PlaceHold':
      return placeHold(command, state);
    case 'SettleHold':
      return settleHold(command, state);
    case 'SetAlertThresholds':
      return setAlertThresholds(command, state);
    case 'IssueGatewayKey':
      return issueGatewayKey(command, state);
    case 'ChangeGatewayKey':
      return changeGatewayKey(command, state);
    case 'RotateGatewayKey':
      return rotateGatewayKey(command, state);
    case 'RevokeGatewayKey':
      return revokeGatewayKey(command, state);
    case 'RecordGatewayRejections':
      return recordGatewayRejections(command, state);
    case 'CreateGatewayTeam':
    case 'ChangeGatewayTeam':
    case 'DeleteGatewayTeam':
      return decideTeamCommand(command, state);
    default:
      throw ValidationError.of('type', `unknown account command ${(command as { type: unknown }).type}`);
  }
}

export const accountDecider: Decider<AccountCommand, AccountEvent, AccountState> & { readonly snapshot: SnapshotCodec<AccountState> } = {
  decide: decideAccount,
  evolve: evolveAccount,
  initialState: initialAccountState,
  snapshot: accountSnapshot,
};

function grant({ data }: GrantCredits, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const credits = checks.integer('credits', data.credits, { min: 1, max: MAX_LEDGER_ENTRY_CREDITS, unit: 'credits' });
  const reason = checks.text('reason', data.reason, MAX_REASON_CHARS);
  const idempotencyKey = checks.idempotencyKey('idempotencyKey', data.idempotencyKey);
  const grantedAt = checks.instant('grantedAt', data.grantedAt);
  checks.throwIfAny();
  if (isRepeat(state, idempotencyKey, { kind: 'grant', credits, reason })) return [];
  assertExact('credits', state, { granted: state.granted + credits });
  return [{ type: 'CreditsGranted', data: { credits, reason, idempotencyKey, grantedAt } }];
}

function adjust({ data }: AdjustCredits, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const credits = checks.integer('credits', data.credits, {
    min: -MAX_LEDGER_ENTRY_CREDITS,
    max: MAX_LEDGER_ENTRY_CREDITS,
    unit: 'credits',
  });
  if (credits === 0) checks.add('credits', 'must not be zero');
  const reason = checks.text('reason', data.reason, MAX_REASON_CHARS);
  const idempotencyKey = checks.idempotencyKey('idempotencyKey', data.idempotencyKey);
  const adjustedAt = checks.instant('adjustedAt', data.adjustedAt);
  checks.throwIfAny();
  if (isRepeat(state, idempotencyKey, { kind: 'adjustment', credits, reason })) return [];
  assertExact('credits', state, { adjustments: state.adjustments + credits });
  if (credits < 0) assertRoomBelow(state, credits);
  return withCrossings(state, [{ type: 'CreditsAdjusted', data: { credits, reason, idempotencyKey, adjustedAt } }], {
    cause: { kind: 'adjustment', idempotencyKey },
    at: adjustedAt,
  });
}

function changeSettings({ data }: ChangeSettings, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  if (data.aiEnabled === undefined && data.maxRunning === undefined) {
    checks.add('settings', 'name aiEnabled, maxRunning or both');
  }
  const aiEnabled = data.aiEnabled === undefined ? state.aiEnabled : checks.boolean('aiEnabled', data.aiEnabled);
  const maxRunning =
    data.maxRunning === undefined
      ? state.maxRunning
      : checks.integer('maxRunning', data.maxRunning, { min: 1, max: MAX_RUNNING_LIMIT, unit: 'running invocations' });
  const changedAt = checks.instant('changedAt', data.changedAt);
  checks.throwIfAny();
  // Nothing changes: a repeated PUT writes nothing. A new account still records its first settings.
  if (state.exists && aiEnabled === state.aiEnabled && maxRunning === state.maxRunning) return [];
  return [{ type: 'OrganizationSettingsChanged', data: { aiEnabled, maxRunning, changedAt } }];
}

function placeHold({ data }: PlaceHold, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const invocationId = checks.id('invocationId', data.invocationId);
  const credits = checks.integer('credits', data.credits, { min: 0, max: MAX_CREDIT_HOLD_CREDITS, unit: 'credits' });
  const placedAt = checks.instant('placedAt', data.placedAt);
  checks.throwIfAny();
  const open = state.openHolds.get(invocationId);
  if (open !== undefined) {
    // Checked before admission: the hold itself fills a slot, and its retry must not be refused for it.
    if (open.credits === credits) return [];
    throw new IdempotencyConflictError(invocationId, `invocation ${invocationId} already holds ${open.credits} credits`);
  }
  const gatewayKey = data.gatewayKey === undefined ? undefined : liveKeyHold(state, data.gatewayKey, placedAt, data.gatewayCall);
  const admission = admit(state, { creditHold: credits, at: placedAt, ...(gatewayKey === undefined ? {} : { gatewayKey }) });
  if (!admission.admitted) throw new AdmissionRefusedError(refusalOf(admission));
  // Admitted holds always fit (admission kept room for them); a log already past the range refuses
  // the hold as the bound does, never as bad input after the invocation was estimated.
  const next = { granted: state.granted, adjustments: state.adjustments, charged: state.charged, held: heldCredits(state) + credits };
  if (!totalsAreExact(next)) throw new AdmissionRefusedError(refusalOf(totalsBoundRefusal(committedCredits(state), credits)));
  return [{ type: 'HoldPlaced', data: { invocationId, credits, placedAt, ...(gatewayKey === undefined ? {} : { gatewayKey }) } }];
}

function settleHold({ data }: SettleHold, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const invocationId = checks.id('invocationId', data.invocationId);
  const chargeCredits = checks.integer('chargeCredits', data.chargeCredits, {
    min: 0,
    max: Number.MAX_SAFE_INTEGER,
    unit: 'credits',
  });
  const settledAt = checks.instant('settledAt', data.settledAt);
  const settledBy = data.by === undefined ? undefined : checks.oneOf('by', data.by, HOLD_SETTLERS);
  const reportedTokens = data.reportedTokens === undefined ? undefined : checks.integer('reportedTokens', data.reportedTokens, { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'tokens' });
  checks.throwIfAny();
  const open = state.openHolds.get(invocationId);
  if (open === undefined) return [];
  assertExact('chargeCredits', state, { charged: state.charged + chargeCredits, held: heldCredits(state) - open.credits });
  // Only a gateway hold that counted tokens is trued up by them.
  const trueUp = reportedTokens === undefined || open.gatewayKey?.tokens === undefined ? {} : { reportedTokens };
  const settled: AccountEvent = {
    type: 'HoldSettled',
    data: { invocationId, heldCredits: open.credits, chargedCredits: chargeCredits, settledAt, ...(settledBy === undefined ? {} : { settledBy }), ...trueUp },
  };
  const events = withCrossings(state, [settled], {
    cause: { kind: 'settlement', invocationId },
    at: settledAt,
  });
  return withBudgetAlerts(state, events, invocationId, settledAt);
}

function setAlertThresholds({ data }: SetAlertThresholds, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const thresholds: AlertThreshold[] = [];
  if (!Array.isArray(data.thresholds)) checks.add('thresholds', 'must be an array');
  else if (data.thresholds.length > MAX_ALERT_THRESHOLDS) checks.add('thresholds', `must hold at most ${MAX_ALERT_THRESHOLDS} thresholds`);
  else {
    const seen = new Set<string>();
    data.thresholds.forEach((raw, index) => {
      const field = `thresholds.${index}`;
      const item = checks.object(field, raw);
      const kind = checks.oneOf(`${field}.kind`, item.kind, ALERT_THRESHOLD_KINDS);
      const amountField = kind === 'available_below' ? 'credits' : 'percent';
      const threshold: AlertThreshold | undefined =
        kind === 'available_below'
          ? { kind, credits: checks.integer(`${field}.credits`, item.credits, { min: 0, max: MAX_LEDGER_ENTRY_CREDITS, unit: 'credits' }) }
          : kind === 'used_share_above'
            ? { kind, percent: checks.integer(`${field}.percent`, item.percent, { min: 1, max: MAX_USED_SHARE_PERCENT, unit: 'percent' }) }
            : undefined;
      if (threshold === undefined) return;
      const extra = Object.keys(item).find((key) => key !== 'kind' && key !== amountField);
      if (extra !== undefined) checks.add(`${field}.${extra}`, `is not a field of a ${kind} threshold`);
      const key = thresholdKey(threshold);
      if (seen.has(key)) checks.add(field, 'repeats an earlier threshold');
      seen.add(key);
      thresholds.push(threshold);
    });
  }
  const setAt = checks.instant('setAt', data.setAt);
  checks.throwIfAny();
  // Alerts belong to an account someone funded or configured; setting them never creates one.
  if (!state.exists) throw new IllegalTransitionError('no account', 'SetAlertThresholds');
  const same =
    thresholds.length === state.alertThresholds.length &&
    thresholds.every((threshold, index) => thresholdKey(threshold) === thresholdKey(state.alertThresholds[index]!));
  if (same) return [];
  return [{ type: 'AlertThresholdsSet', data: { thresholds, setAt } }];
}

/**
 * `events` followed by a CreditThresholdCrossed for each threshold they take past that was not
 * already recorded as crossed (once per crossing; evolve forgets a crossing once its figure is back).
 */
function withCrossings(
  state: AccountState,
  events: AccountEvent[],
  { cause, at }: { readonly cause: CreditThresholdCrossed['data']['cause']; readonly at: string },
): AccountEvent[] {
  if (state.alertThresholds.length === 0) return events;
  const after = events.reduce(evolveAccount, state);
  const figures = alertFiguresOf(after);
  const usedPercent = usedPercentFloor(figures);
  for (const threshold of after.alertThresholds) {
    if (after.crossedThresholds.has(thresholdKey(threshold)) || !isPast(threshold, figures)) continue;
    events.push({
      type: 'CreditThresholdCrossed',
      data: { threshold, ...figures, ...(usedPercent === undefined ? {} : { usedPercent }), cause, crossedAt: at },
    });
  }
  return events;
}

/** True for a repeat of the key's first request; throws when the key was used for another one. */
function isRepeat(state: AccountState, key: string, request: Omit<LedgerEntry, 'at'>): boolean {
  const first = state.ledgerEntries.get(key);
  if (first === undefined) return false;
  if (first.kind === request.kind && first.credits === request.credits && first.reason === request.reason) return true;
  throw new IdempotencyConflictError(
    key,
    `idempotency key ${key} was used for a ${first.kind} of ${first.credits} credits (${JSON.stringify(first.reason)})`,
  );
}

/**
 * Totals stay exact integers (docs/lifecycle.md "The exact-integer range"): refuse a change that would
 * take any figure, or any partial sum of `available`, past ±MAX_ACCOUNT_TOTAL_CREDITS. Writes nothing;
 * names the field that would.
 */
function assertExact(field: string, state: AccountState, change: Partial<AccountTotals>): void {
  const next: AccountTotals = { granted: state.granted, adjustments: state.adjustments, charged: state.charged, held: heldCredits(state), ...change };
  if (!totalsAreExact(next)) {
    throw ValidationError.of(field, `would take the account's totals past ${MAX_ACCOUNT_TOTAL_CREDITS} credits, the exact-integer range`);
  }
}

/**
 * A negative adjustment keeps, below `available`, the room each running invocation's settlement may
 * charge past its hold, so that settlement still fits the range. Refuses only an adjustment that takes
 * the account about 9 × 10^15 credits into debt: one that takes back no more than was credited
 * (granted + adjustments stays ≥ 0) always fits (docs/lifecycle.md).
 */
function assertRoomBelow(state: AccountState, credits: number): void {
  const room = state.openHolds.size * MAX_HOLD_OVERRUN_CREDITS;
  if (availableCredits(state) + credits - room < -MAX_ACCOUNT_TOTAL_CREDITS) {
    throw ValidationError.of('credits', `would take available credits past -${MAX_ACCOUNT_TOTAL_CREDITS}, the exact-integer range, with room for the running settlements`);
  }
}

/**
 * The key a gateway hold counts against, with the period taken from the key's own limit at `placedAt`
 * (the caller's period is not trusted). A revoked or unknown key admits nothing; nor does a key that
 * no longer allows the call's model or `max_tokens`, or whose `tokensPerMinute` is below the call's
 * worst case, decided here on the same state as the credits.
 */
function liveKeyHold(state: AccountState, asked: HoldGatewayKey, placedAt: string, call: PlaceHold['data']['gatewayCall']): HoldGatewayKey {
  const key = state.gatewayKeys.get(asked.keyId);
  if (key === undefined || key.revokedAt !== undefined) throw new UnknownGatewayKeyError(asked.keyId);
  const timed = call === undefined ? {} : keyCallAt(key, call, placedAt);
  if (call !== undefined) {
    const checks = new FieldChecks();
    const models = callModels(checks, call);
    const maxTokens = checks.integer('gatewayCall.maxTokens', call.maxTokens, { min: 1, max: Number.MAX_SAFE_INTEGER, unit: 'tokens' });
    checks.throwIfAny();
    const refusedModel = models.find((model) => !keyAllowsModel(key, model));
    if (refusedModel !== undefined) throw new AdmissionRefusedError({ reason: 'key_model_not_allowed', figures: { keyId: key.keyId, model: refusedModel } });
    if (key.maxOutputTokens !== undefined && maxTokens > key.maxOutputTokens) {
      throw new AdmissionRefusedError({ reason: 'key_max_tokens', figures: { keyId: key.keyId, maxTokens, maxOutputTokens: key.maxOutputTokens } });
    }
    // Over the limit on its own (it fell since the key check): refused as never admissible, not as a full minute.
    if (key.tokensPerMinute !== undefined && timed.tokens !== undefined && timed.tokens > key.tokensPerMinute) {
      throw new AdmissionRefusedError({ reason: 'key_worst_case_tokens', figures: { keyId: key.keyId, maxTokens, worstCaseTokens: timed.tokens, tokensPerMinute: key.tokensPerMinute } });
    }
  }
  const team = teamHoldOf(state, key, placedAt);
  return { keyId: key.keyId, period: countedPeriod(key, placedAt), ...(team === undefined ? {} : { team }), ...timed };
}

/** The call's model, then every other model a Message Batch's requests name: each must be allowed by the key. */
function callModels(checks: FieldChecks, call: NonNullable<PlaceHold['data']['gatewayCall']>): string[] {
  const models = [checks.text('gatewayCall.model', call.model, MAX_MODEL_NAME_CHARS)];
  if (call.models === undefined) return models;
  if (!Array.isArray(call.models) || call.models.length > MAX_HOLD_MODELS) {
    checks.add('gatewayCall.models', `must be a list of at most ${MAX_HOLD_MODELS} models`);
    return models;
  }
  call.models.forEach((model, index) => models.push(checks.text(`gatewayCall.models.${index}`, model, MAX_MODEL_NAME_CHARS)));
  return models;
}

/**
 * A gateway call's key as time sees it at `placedAt` (docs/gateway.md "Keys"): the secret presented
 * must still open the key (not expired, not rotated away past its grace), decided here so a key
 * expiring between the key check and the hold holds nothing. Then the call's worst-case tokens and
 * the UTC minute they count in, for the key's rate limits (admission.policy.ts, keyRateRefusal).
 */
function keyCallAt(key: GatewayKey, call: NonNullable<PlaceHold['data']['gatewayCall']>, placedAt: string): { readonly tokens?: number; readonly minute?: string; readonly requests?: number } {
  const checks = new FieldChecks();
  const keyHash = call.keyHash === undefined ? undefined : readKeyHash(checks, call.keyHash);
  const tokens = call.tokens === undefined ? undefined : checks.integer('gatewayCall.tokens', call.tokens, { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'tokens' });
  const requests = call.requests === undefined ? undefined : checks.integer('gatewayCall.requests', call.requests, { min: 1, max: MAX_HOLD_REQUESTS, unit: 'requests' });
  checks.throwIfAny();
  if (keyHash !== undefined && keyHash !== key.keyHash && keyHash !== key.previousKeyHash) {
    // Found by the key check, gone now: rotated away twice since, so its grace ended at the latest rotation.
    if (key.rotatedAt === undefined) throw new UnknownGatewayKeyError(key.keyId);
    throw new AdmissionRefusedError({ reason: 'key_expired', figures: { keyId: key.keyId, expiredAt: key.rotatedAt, rotated: true } });
  }
  const expired = keyExpiry(key, keyHash ?? key.keyHash, placedAt);
  if (expired !== undefined) throw new AdmissionRefusedError({ reason: 'key_expired', figures: { keyId: key.keyId, ...expired } });
  if (tokens === undefined) return {};
  // Minutes only move forward: an instance whose clock is behind counts in the key's latest minute.
  const minute = minuteOf(placedAt);
  const latest = key.rateMinute?.minute;
  return { tokens, minute: latest !== undefined && latest > minute ? latest : minute, ...(requests === undefined ? {} : { requests }) };
}

function issueGatewayKey({ data }: IssueGatewayKey, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const keyId = checks.id('keyId', data.keyId);
  const keyHash = readKeyHash(checks, data.keyHash);
  const settings = readKeySettings(checks, data as unknown as Record<string, unknown>, String(data.issuedAt));
  const issuedAt = checks.instant('issuedAt', data.issuedAt);
  checks.throwIfAny();
  const existing = state.gatewayKeys.get(keyId);
  // A retried issue of the same key (same id and hash) writes nothing; another key under its id is refused.
  if (existing !== undefined) {
    if (existing.keyHash === keyHash) return [];
    throw new IdempotencyConflictError(keyId, `gateway key ${keyId} exists already`);
  }
  assertKnownTeam(state, settings.teamId);
  if (state.gatewayKeys.size >= MAX_GATEWAY_KEYS_PER_ORGANIZATION) {
    throw ValidationError.of('keyId', `the organization holds ${MAX_GATEWAY_KEYS_PER_ORGANIZATION} keys, the most it may`);
  }
  return [{ type: 'GatewayKeyIssued', data: { keyId, keyHash, ...settings, issuedAt } }];
}

function changeGatewayKey({ data }: ChangeGatewayKey, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const keyId = checks.id('keyId', data.keyId);
  const settings = readKeySettings(checks, data as unknown as Record<string, unknown>, String(data.changedAt));
  const changedAt = checks.instant('changedAt', data.changedAt);
  checks.throwIfAny();
  const key = state.gatewayKeys.get(keyId);
  if (key === undefined || key.revokedAt !== undefined) throw new UnknownGatewayKeyError(keyId);
  assertKnownTeam(state, settings.teamId);
  return [{ type: 'GatewayKeyChanged', data: { keyId, ...settings, changedAt } }];
}

/**
 * A new secret for a live key: its hash replaces the key's, and the hash before stays valid until
 * `rotatedAt + graceSeconds` (a secret rotated away earlier is forgotten: one grace at a time). A
 * retried rotation to the same hash writes nothing; a hash another key has is refused.
 */
function rotateGatewayKey({ data }: RotateGatewayKey, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const keyId = checks.id('keyId', data.keyId);
  const keyHash = readKeyHash(checks, data.keyHash);
  const graceSeconds = readGraceSeconds(checks, data.graceSeconds);
  const rotatedAt = checks.instant('rotatedAt', data.rotatedAt);
  checks.throwIfAny();
  const key = state.gatewayKeys.get(keyId);
  if (key === undefined || key.revokedAt !== undefined) throw new UnknownGatewayKeyError(keyId);
  if (key.keyHash === keyHash) return [];
  if (state.gatewayKeyHashes.has(keyHash)) throw new IdempotencyConflictError(keyId, `the new secret's hash belongs to a gateway key already`);
  const previousValidUntil = new Date(isoToMs(rotatedAt) + graceSeconds * 1_000).toISOString();
  return [{ type: 'GatewayKeyRotated', data: { keyId, keyHash, previousValidUntil, rotatedAt } }];
}

function revokeGatewayKey({ data }: RevokeGatewayKey, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const keyId = checks.id('keyId', data.keyId);
  const revokedAt = checks.instant('revokedAt', data.revokedAt);
  checks.throwIfAny();
  const key = state.gatewayKeys.get(keyId);
  if (key === undefined) throw new UnknownGatewayKeyError(keyId);
  if (key.revokedAt !== undefined) return [];
  return [{ type: 'GatewayKeyRevoked', data: { keyId, revokedAt } }];
}

/**
 * One GatewayCallsRejected per key with a count; a key the account does not have (never the case for
 * counts the gateway kept, keys are never deleted) is left out rather than refusing the others.
 */
function recordGatewayRejections({ data }: RecordGatewayRejections, state: AccountState): AccountEvent[] {
  const checks = new FieldChecks();
  const from = checks.instant('from', data.from);
  const to = checks.instant('to', data.to);
  const entries = Array.isArray(data.rejections) ? data.rejections : [];
  if (!Array.isArray(data.rejections)) checks.add('rejections', 'must be a list');
  const rejections = entries.map((entry, index) => {
    const keyId = checks.id(`rejections.${index}.keyId`, entry?.keyId);
    const counts: Partial<Record<(typeof GATEWAY_REJECTION_REASONS)[number], number>> = {};
    for (const reason of GATEWAY_REJECTION_REASONS) {
      const count = entry?.counts?.[reason];
      if (count !== undefined) counts[reason] = checks.integer(`rejections.${index}.counts.${reason}`, count, { min: 1, max: Number.MAX_SAFE_INTEGER, unit: 'calls' });
    }
    return { keyId, counts: counts as GatewayRejectionCounts };
  });
  checks.throwIfAny();
  return rejections
    .filter(({ keyId, counts }) => state.gatewayKeys.has(keyId) && Object.keys(counts).length > 0)
    .map(({ keyId, counts }) => ({ type: 'GatewayCallsRejected', data: { keyId, counts, from, to } }));
}
