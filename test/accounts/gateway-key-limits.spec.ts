/**
 * A gateway key's lifetime (`expiresAt`, rotation with a grace) and its rate limits (`maxConcurrent`,
 * `requestsPerMinute`, `tokensPerMinute`), decided in the same PlaceHold as the organization's credits
 * and the key's spend limit (docs/gateway.md "Keys", "Rate limits"), so no instance can cross them.
 */
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountCommand } from '../../src/accounts/account.commands';
import type { AccountEvent, GatewayKeyIssued, HoldPlaced } from '../../src/accounts/account.events';
import { accountSnapshot } from '../../src/accounts/account.snapshot';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { KEY_CONCURRENCY_RETRY_AFTER_SECONDS, MAX_GATEWAY_KEY_ROTATION_GRACE_SECONDS, UnknownGatewayKeyError } from '../../src/accounts/gateway-keys';
import { IdempotencyConflictError, ValidationError } from '../../src/domain/domain.errors';
import { deciderSpec } from '../support/decider-spec';
import { changeSettings, granted } from './account.fixtures';

const spec = deciderSpec<AccountCommand, AccountEvent, ReturnType<typeof accountDecider.initialState>>(accountDecider);
const OLD = 'a'.repeat(64);
const NEW = 'b'.repeat(64);
const NEWER = 'c'.repeat(64);
const T0 = '2026-12-03T10:00:00.000Z';
const T0_45 = '2026-12-03T10:00:45.000Z';
const T1 = '2026-12-03T10:01:00.000Z';
const LATER = '2026-12-03T12:00:00.000Z';

const issued = (settings: Partial<GatewayKeyIssued['data']> = {}): GatewayKeyIssued => ({
  type: 'GatewayKeyIssued',
  data: { keyId: 'key-1', keyHash: OLD, name: 'ci-bot', issuedAt: T0, ...settings },
});
/** A gateway call's PlaceHold, as GatewayCalls sends it: the secret's hash and the call's worst-case tokens. */
const call = (invocationId: string, { at = T0, tokens = 100, keyHash = OLD, credits = 1 }: { at?: string; tokens?: number; keyHash?: string; credits?: number } = {}): AccountCommand => ({
  type: 'PlaceHold',
  data: { invocationId, credits, placedAt: at, gatewayKey: { keyId: 'key-1', period: '' }, gatewayCall: { model: 'm', maxTokens: 10, tokens, keyHash } },
});
const held = (invocationId: string, { at = T0, tokens = 100, minute = at.slice(0, 16), credits = 1 }: { at?: string; tokens?: number; minute?: string; credits?: number } = {}): HoldPlaced => ({
  type: 'HoldPlaced',
  data: { invocationId, credits, placedAt: at, gatewayKey: { keyId: 'key-1', period: 'total', tokens, minute } },
});
const settle = (invocationId: string, reportedTokens?: number, at = T0): AccountCommand => ({
  type: 'SettleHold',
  data: { invocationId, chargeCredits: 1, settledAt: at, ...(reportedTokens === undefined ? {} : { reportedTokens }) },
});
const settled = (invocationId: string, reportedTokens?: number, at = T0): AccountEvent => ({
  type: 'HoldSettled',
  data: { invocationId, heldCredits: 1, chargedCredits: 1, settledAt: at, ...(reportedTokens === undefined ? {} : { reportedTokens }) },
});
const rotated = (keyHash: string, previousValidUntil: string, rotatedAt = T0): AccountEvent => ({ type: 'GatewayKeyRotated', data: { keyId: 'key-1', keyHash, previousValidUntil, rotatedAt } });
const refusalOf = (given: AccountEvent[], command: AccountCommand) => spec.given(given).when(command).thenThrows(AdmissionRefusedError).refusal;

describe('a gateway key expires at its expiresAt, decided by the hold too (docs/gateway.md "Keys")', () => {
  it('refuses an expiresAt that is not in the future at issue or change, naming expiresAt', () => {
    const issue = (expiresAt: unknown): AccountCommand => ({ type: 'IssueGatewayKey', data: { keyId: 'key-1', keyHash: OLD, name: 'ci-bot', expiresAt, issuedAt: T0 } }) as AccountCommand;
    for (const bad of [T0, '2026-12-03T09:59:59.999Z', 'tomorrow', 12]) {
      expect(spec.given([granted(10)]).when(issue(bad)).thenThrows(ValidationError).issues.map((issue) => issue.field)).toEqual(['expiresAt']);
    }
    spec.given([granted(10)]).when(issue(T1)).then([{ ...issued(), data: { ...issued().data, expiresAt: T1 } }]);
    const change = { type: 'ChangeGatewayKey', data: { keyId: 'key-1', name: 'ci-bot', expiresAt: T0, changedAt: T0_45 } } as AccountCommand;
    expect(spec.given([granted(10), issued()]).when(change).thenThrows(ValidationError).issues.map((issue) => issue.field)).toEqual(['expiresAt']);
  });

  it('holds a call up to the instant before expiresAt and refuses it from that instant as key_expired, with nothing held (STATE-PFM-LLM-001 transition 1)', () => {
    const given = [granted(10_000), issued({ expiresAt: T1 })];
    spec.given(given).when(call('a', { at: '2026-12-03T10:00:59.999Z' })).then([held('a', { at: '2026-12-03T10:00:59.999Z' })]);
    expect(refusalOf(given, call('b', { at: T1 }))).toEqual({ reason: 'key_expired', figures: { keyId: 'key-1', expiredAt: T1, rotated: false } });
  });

  it('lets a change remove the expiry: the settings are whole', () => {
    const state = spec
      .given([granted(10_000), issued({ expiresAt: T1 })])
      .when({ type: 'ChangeGatewayKey', data: { keyId: 'key-1', name: 'ci-bot', changedAt: T0 } })
      .then([{ type: 'GatewayKeyChanged', data: { keyId: 'key-1', name: 'ci-bot', changedAt: T0 } }]);
    expect(state.gatewayKeys.get('key-1')?.expiresAt).toBeUndefined();
  });
});

describe('a rotation gives a key a new secret; the old one works until its grace ends, decided at the account stream by time', () => {
  const rotate = (keyHash: string, graceSeconds: unknown, rotatedAt = T0): AccountCommand =>
    ({ type: 'RotateGatewayKey', data: { keyId: 'key-1', keyHash, graceSeconds, rotatedAt } }) as AccountCommand;

  it('records the new hash and when the old secret stops; a retried rotation writes nothing; the grace is bounded and named', () => {
    spec.given([granted(10), issued()]).when(rotate(NEW, 60)).then([rotated(NEW, T1)]);
    spec.given([granted(10), issued(), rotated(NEW, T1)]).when(rotate(NEW, 60)).thenNothing();
    for (const bad of [-1, MAX_GATEWAY_KEY_ROTATION_GRACE_SECONDS + 1, 1.5, '60']) {
      expect(spec.given([granted(10), issued()]).when(rotate(NEW, bad)).thenThrows(ValidationError).issues.map((issue) => issue.field)).toEqual(['graceSeconds']);
    }
    spec.given([granted(10), issued(), { type: 'GatewayKeyRevoked', data: { keyId: 'key-1', revokedAt: T0 } }]).when(rotate(NEW, 60)).thenThrows(UnknownGatewayKeyError);
    spec.given([granted(10), issued(), issued({ keyId: 'key-2', keyHash: NEW })]).when(rotate(NEW, 60)).thenThrows(IdempotencyConflictError);
  });

  it('keeps the key’s id, spend, limits and minute: only the secret changes', () => {
    const before = spec.given([granted(10_000), issued({ tokensPerMinute: 500 }), held('a')]).state();
    const after = spec.given([granted(10_000), issued({ tokensPerMinute: 500 }), held('a'), rotated(NEW, T1)]).state();
    const { keyHash: _h, previousKeyHash: _p, previousKeyValidUntil: _v, rotatedAt: _r, ...kept } = after.gatewayKeys.get('key-1')!;
    const { keyHash: _h0, ...was } = before.gatewayKeys.get('key-1')!;
    expect(kept).toEqual(was);
    expect(new Map(after.gatewayKeyHashes)).toEqual(new Map([[OLD, 'key-1'], [NEW, 'key-1']]));
  });

  it('holds a call by the old secret until the grace ends, refuses it from then as key_expired (rotated), and holds the new secret throughout', () => {
    const given = [granted(10_000), issued(), rotated(NEW, T1)];
    spec.given(given).when(call('a', { at: T0_45, keyHash: OLD })).then([held('a', { at: T0_45 })]);
    expect(refusalOf(given, call('b', { at: T1, keyHash: OLD }))).toEqual({ reason: 'key_expired', figures: { keyId: 'key-1', expiredAt: T1, rotated: true } });
    spec.given(given).when(call('c', { at: LATER, keyHash: NEW })).then([held('c', { at: LATER })]);
  });

  it('forgets a secret rotated away twice: one grace at a time, so the state stays one old hash per key, and a call by it is refused as expired at the second rotation', () => {
    const twice = [granted(10_000), issued(), rotated(NEW, LATER), rotated(NEWER, LATER, T0_45)];
    expect(refusalOf(twice, call('a', { keyHash: OLD }))).toEqual({ reason: 'key_expired', figures: { keyId: 'key-1', expiredAt: T0_45, rotated: true } });
    // A hash the key never had is no key of this organization's.
    spec.given([granted(10_000), issued()]).when(call('z', { keyHash: NEWER })).thenThrows(UnknownGatewayKeyError);
    spec.given(twice).when(call('b', { keyHash: NEW })).then([held('b')]);
    const state = spec.given(twice).state();
    expect(new Map(state.gatewayKeyHashes)).toEqual(new Map([[NEW, 'key-1'], [NEWER, 'key-1']]));
    // A snapshot finds the secret in its grace too.
    expect(accountSnapshot.decode(JSON.parse(JSON.stringify(accountSnapshot.encode(state))))).toEqual(state);
  });
});

describe('a key’s rate limits are decided in the same PlaceHold as its credits (docs/gateway.md "Rate limits")', () => {
  it('maxConcurrent: refuses a call past the key’s calls in flight with retry-after KEY_CONCURRENCY_RETRY_AFTER_SECONDS, and admits again once one settles', () => {
    const given = [granted(10_000), issued({ maxConcurrent: 2 }), held('a'), held('b')];
    expect(refusalOf(given, call('c'))).toEqual({
      reason: 'key_rate_limit',
      figures: { keyId: 'key-1', limit: 'maxConcurrent', allowed: 2, counted: 2, asked: 1, retryAfterSeconds: KEY_CONCURRENCY_RETRY_AFTER_SECONDS },
    });
    spec.given([...given, settled('a')]).when(call('c')).then([held('c')]);
  });

  it('requestsPerMinute: counts calls admitted in the UTC minute, settled or not, and tells a refused call the seconds until the minute rolls', () => {
    const given = [granted(10_000), issued({ requestsPerMinute: 2 }), held('a'), held('b'), settled('a')];
    expect(refusalOf(given, call('c', { at: T0_45 }))).toEqual({
      reason: 'key_rate_limit',
      figures: { keyId: 'key-1', limit: 'requestsPerMinute', allowed: 2, counted: 2, asked: 1, minute: '2026-12-03T10:00', retryAfterSeconds: 15 },
    });
    spec.given(given).when(call('c', { at: T1 })).then([held('c', { at: T1 })]);
  });

  it('tokensPerMinute: each call holds its worst-case tokens in its minute; one token past the limit is refused, exactly the limit is admitted', () => {
    const given = [granted(10_000), issued({ tokensPerMinute: 1_000 }), held('a', { tokens: 600 })];
    expect(refusalOf(given, call('b', { tokens: 401, at: T0_45 }))).toEqual({
      reason: 'key_rate_limit',
      figures: { keyId: 'key-1', limit: 'tokensPerMinute', allowed: 1_000, counted: 600, asked: 401, minute: '2026-12-03T10:00', retryAfterSeconds: 15 },
    });
    spec.given(given).when(call('b', { tokens: 400 })).then([held('b', { tokens: 400 })]);
  });

  it('a call whose worst-case tokens alone pass the key’s tokensPerMinute is refused at the hold as key_worst_case_tokens (400, never admissible), not key_rate_limit (429, retried forever)', () => {
    const given = [granted(10_000), issued({ tokensPerMinute: 1_000 })];
    expect(refusalOf(given, call('a', { tokens: 1_001 }))).toEqual({
      reason: 'key_worst_case_tokens',
      figures: { keyId: 'key-1', maxTokens: 10, worstCaseTokens: 1_001, tokensPerMinute: 1_000 },
    });
    // Decided before the minute's count: a fuller minute still refuses it as never admissible.
    expect(refusalOf([...given, held('b', { tokens: 600 })], call('a', { tokens: 1_001 })).reason).toBe('key_worst_case_tokens');
    spec.given(given).when(call('a', { tokens: 1_000 })).then([held('a', { tokens: 1_000 })]);
  });

  it('tokensPerMinute: a settlement trues the minute up to the reported tokens; unknown usage keeps the worst case counted', () => {
    const given = [granted(10_000), issued({ tokensPerMinute: 1_000 }), held('a', { tokens: 600 })];
    spec.given(given).when(settle('a', 150)).then([settled('a', 150)]);
    spec.given([...given, settled('a', 150)]).when(call('b', { tokens: 850 })).then([held('b', { tokens: 850 })]);
    spec.given([...given, settled('a')]).when(call('b', { tokens: 401 })).thenThrows(AdmissionRefusedError);
    const state = spec.given([...given, settled('a', 150)]).state();
    expect(state.gatewayKeys.get('key-1')?.rateMinute).toEqual({ minute: '2026-12-03T10:00', requests: 1, tokens: 150 });
  });

  it('keeps only the key’s latest minute: a hold settled after its minute rolled changes nothing in the new one', () => {
    const state = spec.given([granted(10_000), issued({ tokensPerMinute: 1_000 }), held('a', { tokens: 600 }), held('b', { at: T1, tokens: 300 }), settled('a', 0, T1)]).state();
    expect(state.gatewayKeys.get('key-1')?.rateMinute).toEqual({ minute: '2026-12-03T10:01', requests: 1, tokens: 300 });
  });

  it('counts a call whose instance’s clock is behind in the key’s latest minute, never in one already gone', () => {
    const given = [granted(10_000), issued({ tokensPerMinute: 1_000 }), held('a', { at: T1, tokens: 900 })];
    expect(refusalOf(given, call('b', { at: T0_45, tokens: 101 }))).toMatchObject({ reason: 'key_rate_limit', figures: { limit: 'tokensPerMinute', counted: 900, minute: '2026-12-03T10:01' } });
    spec.given(given).when(call('b', { at: T0_45, tokens: 100 })).then([held('b', { at: T0_45, tokens: 100, minute: '2026-12-03T10:01' })]);
  });

  it('keeps the order: the organization’s credits and the key’s spend limit before its rate limits, its rate limits before the organization’s running slots', () => {
    expect(refusalOf([granted(0), issued({ maxConcurrent: 1 }), held('a', { credits: 0 })], call('b')).reason).toBe('insufficient_credits');
    expect(refusalOf([granted(100), issued({ maxConcurrent: 1, spendLimit: { credits: 0, period: 'day' } }), held('a', { credits: 0 })], call('b')).reason).toBe('key_spend_limit');
    expect(refusalOf([granted(100), changeSettingsEvent(1), issued({ maxConcurrent: 1 }), held('a')], call('b')).reason).toBe('key_rate_limit');
  });

  it('refuses a rate limit of 0 or past its bound, naming the field, and a change that leaves one out removes it', () => {
    const issue = (limits: Record<string, unknown>): AccountCommand => ({ type: 'IssueGatewayKey', data: { keyId: 'key-1', keyHash: OLD, name: 'ci-bot', ...limits, issuedAt: T0 } }) as AccountCommand;
    const fields = spec.given([granted(10)]).when(issue({ maxConcurrent: 0, requestsPerMinute: 2.5, tokensPerMinute: 1e13 })).thenThrows(ValidationError).issues.map((issue) => issue.field);
    expect(fields).toEqual(['maxConcurrent', 'requestsPerMinute', 'tokensPerMinute']);
    const state = spec.given([granted(10), issued({ maxConcurrent: 1, requestsPerMinute: 1, tokensPerMinute: 1 })]).when({ type: 'ChangeGatewayKey', data: { keyId: 'key-1', name: 'ci-bot', changedAt: T0 } }).then([
      { type: 'GatewayKeyChanged', data: { keyId: 'key-1', name: 'ci-bot', changedAt: T0 } },
    ]);
    expect(state.gatewayKeys.get('key-1')).not.toHaveProperty('maxConcurrent');
    expect(state.gatewayKeys.get('key-1')).not.toHaveProperty('tokensPerMinute');
  });
});

function changeSettingsEvent(maxRunning: number): AccountEvent {
  return accountDecider.decide(changeSettings({ maxRunning }), accountDecider.initialState())[0]!;
}
