/**
 * Field-by-field checks of what the runtime and the admission step report to an invocation: attempt
 * records, conversation figures and refusals. Each names the bad field; the decider (transitions,
 * charges) stays in invocation.decider.ts.
 */
import { spendLimitLeft, type AdmissionRefusal, type KeyRateFigures, type KeyWorstCaseTokensFigures, type KeySpendFigures, type LedgerTotalsBoundFigures } from '../accounts/admission.policy';
import { KEY_RATE_LIMITS, SPEND_PERIODS } from '../accounts/gateway-keys';
import { MAX_GATEWAY_TEAM_NAME_CHARS } from '../accounts/gateway-teams';
import { MAX_CREDIT_HOLD_CREDITS, MAX_MODEL_NAME_CHARS } from '../catalog/publication.validation';
import { FieldChecks } from '../domain/field-checks';
import type { AttemptRecord, ConversationLimits } from '../runtime/conversation.types';
import { FAULT_CLASSES } from '../runtime/faults';
import { PRICE_KINDS } from '../runtime/price-kinds';
import type { Usage, UsageCounts } from '../runtime/provider.port';
import { usageCovers, usageEquals } from '../runtime/usage';
import type { CompleteInvocation, FailInvocation } from './invocation.commands';
import { ConversationFigures, MAX_RETAINED_ATTEMPTS } from './invocation.events';
import type { InvocationState } from './invocation.state';

/** Longest provider request id kept on an attempt record, in characters. */
export const MAX_PROVIDER_REQUEST_ID_CHARS = 200;

/** Longest name of a malformed usage field kept on an attempt record (`server_tool_use.web_search_requests`), in characters. */
export const MAX_MALFORMED_USAGE_FIELD_CHARS = 64;

const ATTEMPT_CLASSIFICATIONS = ['ok', ...FAULT_CLASSES] as const;

/**
 * An attempt record read field by field and rebuilt: nothing else (no prompt, no message) can ride
 * along into the event. Turn and retry are bounded by the invocation's own limits.
 */
export function readAttempt(data: AttemptRecord, limits: ConversationLimits): AttemptRecord {
  const checks = new FieldChecks();
  const input = data as unknown as Record<string, unknown>;
  const turn = checks.integer('turn', input.turn, { min: 1, max: limits.maxTurns, unit: 'turns' });
  const retry = checks.integer('retry', input.retry, { min: 0, max: limits.maxAttemptsPerTurn - 1, unit: 'retries' });
  // Half the safe range each, so startedAtMs + durationMs stays exact.
  const ms = (field: string): number =>
    checks.integer(field, input[field], { min: 0, max: Math.floor(Number.MAX_SAFE_INTEGER / 2), unit: 'ms' });
  const startedAtMs = ms('startedAtMs');
  const durationMs = ms('durationMs');
  const waitBeforeMs = ms('waitBeforeMs');
  const classification = checks.oneOf('classification', input.classification, ATTEMPT_CLASSIFICATIONS);
  const timedOut = checks.boolean('timedOut', input.timedOut);
  const httpStatus =
    input.httpStatus === undefined ? undefined : checks.integer('httpStatus', input.httpStatus, { min: 100, max: 599, unit: 'status' });
  const providerRequestId =
    input.providerRequestId === undefined
      ? undefined
      : checks.text('providerRequestId', input.providerRequestId, MAX_PROVIDER_REQUEST_ID_CHARS);
  const model = checks.text('model', input.model, MAX_MODEL_NAME_CHARS);
  const usage = input.usage === undefined ? undefined : readUsage(checks, 'usage', input.usage);
  const malformedUsage = input.malformedUsage === undefined ? undefined : checks.text('malformedUsage', input.malformedUsage, MAX_MALFORMED_USAGE_FIELD_CHARS);
  // Malformed usage is unknown usage: nothing of it is kept to price.
  if (malformedUsage !== undefined && usage !== undefined) checks.add('usage', 'must be absent when malformedUsage names a field');
  const priceCredits = checks.integer('priceCredits', input.priceCredits, { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'credits' });
  checks.throwIfAny();
  return {
    turn,
    retry,
    startedAtMs,
    durationMs,
    waitBeforeMs,
    classification,
    timedOut,
    ...(httpStatus === undefined ? {} : { httpStatus }),
    ...(providerRequestId === undefined ? {} : { providerRequestId }),
    model,
    ...(usage === undefined ? {} : { usage }),
    ...(malformedUsage === undefined ? {} : { malformedUsage }),
    priceCredits,
  };
}

/**
 * The refusal to record, checked against what the invocation copied at estimate time: a refusal must
 * be the one `decideAdmission` gives for that publication, so an explanation never contradicts it.
 */
export function refusalFromState(
  checks: FieldChecks,
  reason: AdmissionRefusal['reason'],
  figures: Record<string, unknown>,
  state: InvocationState,
): AdmissionRefusal {
  const publication = state.publication;
  const published = publication === null ? 'the operation was never published' : `version ${publication.version} was in force`;
  switch (reason) {
    case 'ai_disabled':
      if (figures.aiEnabled !== false) checks.add('figures.aiEnabled', 'must be false');
      return { reason, figures: { aiEnabled: false } };
    case 'unknown_operation':
      if (publication !== null) checks.add('reason', `${published}: the operation is known`);
      return { reason, figures: { publishedVersions: 0 } };
    case 'operation_disabled':
      if (publication === null || publication.enabled) checks.add('reason', `${published}, and it is not disabled`);
      return { reason, figures: { version: publication?.version ?? 0, enabled: false } };
    case 'insufficient_credits': {
      if (publication === null || !publication.enabled) checks.add('reason', `${published}: it is refused for access first`);
      const available = checks.integer('figures.available', figures.available, {
        min: Number.MIN_SAFE_INTEGER,
        max: Number.MAX_SAFE_INTEGER,
        unit: 'credits',
      });
      const creditHold = checks.integer('figures.creditHold', figures.creditHold, { min: 0, max: MAX_CREDIT_HOLD_CREDITS, unit: 'credits' });
      if (checks.ok && creditHold !== state.estimate) checks.add('figures.creditHold', `the estimate is ${state.estimate} credits`);
      if (checks.ok && available >= creditHold) checks.add('figures.available', 'covers the hold: nothing to refuse');
      return { reason, figures: { available, creditHold } };
    }
    case 'no_running_slot': {
      if (publication === null || !publication.enabled) checks.add('reason', `${published}: it is refused for access first`);
      const running = checks.integer('figures.running', figures.running, { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'running invocations' });
      const maxRunning = checks.integer('figures.maxRunning', figures.maxRunning, { min: 1, max: Number.MAX_SAFE_INTEGER, unit: 'running invocations' });
      if (checks.ok && running < maxRunning) checks.add('figures.running', 'leaves a slot free: nothing to refuse');
      return { reason, figures: { running, maxRunning } };
    }
    case 'ledger_totals_bound':
      if (publication === null || !publication.enabled) checks.add('reason', `${published}: it is refused for access first`);
      return { reason, figures: totalsBoundFigures(checks, figures, state.estimate) };
    case 'key_spend_limit':
      return { reason, figures: readKeySpendFigures(checks, figures, state) };
    case 'team_spend_limit': {
      const teamId = checks.id('figures.teamId', figures.teamId);
      const teamName = checks.text('figures.teamName', figures.teamName, MAX_GATEWAY_TEAM_NAME_CHARS);
      return { reason, figures: { ...readKeySpendFigures(checks, figures, state), teamId, teamName } };
    }
    case 'key_revoked':
    case 'key_model_not_allowed':
    case 'key_max_tokens':
    case 'key_expired':
      return keyAccessRefusal(checks, reason, figures);
    case 'key_rate_limit':
      return { reason, figures: readKeyRateFigures(checks, figures) };
    case 'key_worst_case_tokens':
      return { reason, figures: readWorstCaseTokensFigures(checks, figures) };
  }
}

/** A gateway call's access refusal for its key, changed since its key check (docs/gateway.md "Admission"). */
function keyAccessRefusal(checks: FieldChecks, reason: 'key_revoked' | 'key_model_not_allowed' | 'key_max_tokens' | 'key_expired', figures: Record<string, unknown>): AdmissionRefusal {
  switch (reason) {
    case 'key_revoked': {
      const keyId = checks.id('figures.keyId', figures.keyId);
      return { reason, figures: { keyId } };
    }
    case 'key_model_not_allowed': {
      const keyId = checks.id('figures.keyId', figures.keyId);
      return { reason, figures: { keyId, model: checks.text('figures.model', figures.model, MAX_MODEL_NAME_CHARS) } };
    }
    case 'key_max_tokens': {
      const keyId = checks.id('figures.keyId', figures.keyId);
      const maxTokens = checks.integer('figures.maxTokens', figures.maxTokens, { min: 1, max: Number.MAX_SAFE_INTEGER, unit: 'tokens' });
      const maxOutputTokens = checks.integer('figures.maxOutputTokens', figures.maxOutputTokens, { min: 1, max: Number.MAX_SAFE_INTEGER, unit: 'tokens' });
      if (checks.ok && maxTokens <= maxOutputTokens) checks.add('figures.maxTokens', 'is within the cap: nothing to refuse');
      return { reason, figures: { keyId, maxTokens, maxOutputTokens } };
    }
    case 'key_expired': {
      const keyId = checks.id('figures.keyId', figures.keyId);
      return { reason, figures: { keyId, expiredAt: checks.instant('figures.expiredAt', figures.expiredAt), rotated: checks.boolean('figures.rotated', figures.rotated) } };
    }
  }
}

/** The figures of a `ledger_totals_bound` refusal: this hold and its room really do not fit beside what is committed. */
function totalsBoundFigures(checks: FieldChecks, figures: Record<string, unknown>, estimate: number): LedgerTotalsBoundFigures {
  const credits = (field: keyof LedgerTotalsBoundFigures): number =>
    checks.integer(`figures.${field}`, figures[field], { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'credits' });
  const committedCredits = credits('committedCredits');
  const creditHold = credits('creditHold');
  const overrunRoomCredits = credits('overrunRoomCredits');
  const maxTotalCredits = credits('maxTotalCredits');
  if (checks.ok && creditHold !== estimate) checks.add('figures.creditHold', `the estimate is ${estimate} credits`);
  // A sum past the bound reads as past it (rounding is monotonic): the figures must show the hold does not fit.
  if (checks.ok && committedCredits + creditHold + overrunRoomCredits <= maxTotalCredits) checks.add('figures.committedCredits', 'leaves room for the hold: nothing to refuse');
  return { committedCredits, creditHold, overrunRoomCredits, maxTotalCredits };
}

/** A key's (or a team's) limit figures: they must refuse the estimate (what remains of the limit is less than it). */
function readKeySpendFigures(checks: FieldChecks, figures: Record<string, unknown>, state: InvocationState): KeySpendFigures {
  const credits = (field: string): number => checks.integer(`figures.${field}`, figures[field], { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'credits' });
  const read: KeySpendFigures = {
    keyId: checks.id('figures.keyId', figures.keyId),
    limitCredits: credits('limitCredits'),
    period: checks.oneOf('figures.period', figures.period, SPEND_PERIODS),
    periodStart: checks.text('figures.periodStart', figures.periodStart, MAX_PERIOD_NAME_CHARS),
    spentCredits: credits('spentCredits'),
    heldCredits: credits('heldCredits'),
    creditHold: credits('creditHold'),
  };
  if (checks.ok && read.creditHold !== state.estimate) checks.add('figures.creditHold', `the estimate is ${state.estimate} credits`);
  if (checks.ok && spendLimitLeft(read) >= read.creditHold) checks.add('figures.limitCredits', 'covers the hold: nothing to refuse');
  return read;
}

/** A key rate limit's figures: they must refuse the call (`counted + asked > allowed`). */
function readKeyRateFigures(checks: FieldChecks, figures: Record<string, unknown>): KeyRateFigures {
  const count = (field: string, unit: string): number => checks.integer(`figures.${field}`, figures[field], { min: 0, max: Number.MAX_SAFE_INTEGER, unit });
  const limit = checks.oneOf('figures.limit', figures.limit, KEY_RATE_LIMITS);
  const unit = limit === 'tokensPerMinute' ? 'tokens' : 'calls';
  const read: KeyRateFigures = {
    keyId: checks.id('figures.keyId', figures.keyId),
    limit,
    allowed: count('allowed', unit),
    counted: count('counted', unit),
    asked: count('asked', unit),
    ...(figures.minute === undefined ? {} : { minute: checks.text('figures.minute', figures.minute, MAX_MINUTE_NAME_CHARS) }),
    retryAfterSeconds: count('retryAfterSeconds', 'seconds'),
  };
  if (checks.ok && read.counted + read.asked <= read.allowed) checks.add('figures.allowed', 'covers the call: nothing to refuse');
  return read;
}

/** A never-admissible call's figures: its worst case must be over the limit, and at least its max_tokens. */
function readWorstCaseTokensFigures(checks: FieldChecks, figures: Record<string, unknown>): KeyWorstCaseTokensFigures {
  const tokens = (field: string, min: number): number => checks.integer(`figures.${field}`, figures[field], { min, max: Number.MAX_SAFE_INTEGER, unit: 'tokens' });
  const read: KeyWorstCaseTokensFigures = {
    keyId: checks.id('figures.keyId', figures.keyId),
    maxTokens: tokens('maxTokens', 1),
    worstCaseTokens: tokens('worstCaseTokens', 1),
    tokensPerMinute: tokens('tokensPerMinute', 1),
  };
  if (checks.ok && read.worstCaseTokens < read.maxTokens) checks.add('figures.worstCaseTokens', 'is below max_tokens, which it includes');
  if (checks.ok && read.worstCaseTokens <= read.tokensPerMinute) checks.add('figures.tokensPerMinute', 'covers the call: nothing to refuse');
  return read;
}

/** Longest minute name a key rate limit's figures carry (`2026-12-03T20:44`), in characters. */
const MAX_MINUTE_NAME_CHARS = 16;

/** Longest period name a key limit's figures carry (`2026-12-01`, `2026-W49`, `2026-12`, `total`), in characters. */
const MAX_PERIOD_NAME_CHARS = 10;

/**
 * The loop's figures, checked against the publication's limits and the recorded attempts: with every
 * attempt recorded the totals must be exactly theirs; past MAX_RETAINED_ATTEMPTS they may only add to
 * them. This is what lets the charge rest on reported attempts alone.
 */
export function readReport(
  checks: FieldChecks,
  data: CompleteInvocation['data'] | FailInvocation['data'],
  state: InvocationState,
): ConversationFigures {
  const { limits } = state.publication!;
  const turnsUsed = checks.integer('turnsUsed', data.turnsUsed, { min: 0, max: limits.maxTurns, unit: 'turns' });
  const toolCallsUsed = checks.integer('toolCallsUsed', data.toolCallsUsed, { min: 0, max: limits.maxToolCalls, unit: 'tool calls' });
  const attemptCount = checks.integer('attemptCount', data.attemptCount, {
    min: 0,
    max: limits.maxTurns * limits.maxAttemptsPerTurn,
    unit: 'attempts',
  });
  const spentCredits = checks.integer('spentCredits', data.spentCredits, { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'credits' });
  const usageTotals = readUsage(checks, 'usageTotals', data.usageTotals);
  const usageReported = checks.boolean('usageReported', data.usageReported);
  const attemptsTruncated = attemptCount > MAX_RETAINED_ATTEMPTS;
  if (checks.ok) {
    const recorded = `${state.attemptsRecorded} recorded attempts`;
    if (!attemptsTruncated) {
      if (attemptCount !== state.attemptsRecorded) checks.add('attemptCount', `differs from the ${recorded}`);
      if (spentCredits !== state.spentCredits) checks.add('spentCredits', `the ${recorded} cost ${state.spentCredits} credits`);
      if (!usageEquals(usageTotals, state.usageTotals)) checks.add('usageTotals', `differs from the usage of the ${recorded}`);
      if (usageReported !== state.usageReported) checks.add('usageReported', `differs from the ${recorded}`);
    } else {
      if (state.attemptsRecorded < MAX_RETAINED_ATTEMPTS) checks.add('attemptCount', `only ${recorded}; every attempt up to ${MAX_RETAINED_ATTEMPTS} is recorded`);
      if (spentCredits < state.spentCredits) checks.add('spentCredits', `the ${recorded} alone cost ${state.spentCredits} credits`);
      if (!usageCovers(usageTotals, state.usageTotals)) checks.add('usageTotals', `is less than the usage of the ${recorded}`);
      if (state.usageReported && !usageReported) checks.add('usageReported', `the ${recorded} reported usage`);
    }
  }
  return { turnsUsed, toolCallsUsed, spentCredits, attemptCount, attemptsTruncated, usageTotals, usageReported };
}

/** Longest service tier name kept on an attempt's usage, in characters. */
export const MAX_SERVICE_TIER_CHARS = 64;

/** Longest speed or geography name kept on an attempt's usage, in characters. */
export const MAX_USAGE_MODE_CHARS = 64;

/** Usage counts (one per row of the price-kind table), each a non-negative integer, and the mode the provider named. */
export function readUsage(checks: FieldChecks, field: string, value: unknown): Usage {
  const usage = checks.object(field, value);
  const counts: Record<string, number> = {};
  for (const kind of PRICE_KINDS) {
    counts[kind.usage] = checks.integer(`${field}.${kind.usage}`, usage[kind.usage], { min: 0, max: Number.MAX_SAFE_INTEGER, unit: kind.unit });
  }
  const mode = (key: 'serviceTier' | 'speed' | 'inferenceGeo', maxChars: number): Partial<Usage> =>
    usage[key] === undefined ? {} : { [key]: checks.text(`${field}.${key}`, usage[key], maxChars) };
  return {
    ...(counts as UsageCounts),
    ...mode('serviceTier', MAX_SERVICE_TIER_CHARS),
    ...mode('speed', MAX_USAGE_MODE_CHARS),
    ...mode('inferenceGeo', MAX_USAGE_MODE_CHARS),
  };
}
