/**
 * Gateway keys in the account stream (docs/gateway.md): a key's spend limit is decided in the same
 * PlaceHold as the organization's credits and slots, so it is as atomic as they are.
 */
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountCommand } from '../../src/accounts/account.commands';
import type { AccountEvent, GatewayKeyIssued, HoldPlaced } from '../../src/accounts/account.events';
import { accountSnapshot } from '../../src/accounts/account.snapshot';
import { keySpend } from '../../src/accounts/account.state';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { UnknownGatewayKeyError } from '../../src/accounts/gateway-keys';
import { IdempotencyConflictError, ValidationError } from '../../src/domain/domain.errors';
import { deciderSpec } from '../support/decider-spec';
import { granted } from './account.fixtures';

const spec = deciderSpec<AccountCommand, AccountEvent, ReturnType<typeof accountDecider.initialState>>(accountDecider);
const HASH = 'a'.repeat(64);
const DAY1 = '2026-12-01T10:00:00.000Z';
const DAY2 = '2026-12-02T00:00:00.000Z';

const issued = (settings: Partial<GatewayKeyIssued['data']> = {}): GatewayKeyIssued => ({
  type: 'GatewayKeyIssued',
  data: { keyId: 'key-1', keyHash: HASH, name: 'ci-bot', spendLimit: { credits: 1_000, period: 'day' }, issuedAt: DAY1, ...settings },
});
const hold = (invocationId: string, credits: number, at = DAY1): AccountCommand => ({
  type: 'PlaceHold',
  data: { invocationId, credits, placedAt: at, gatewayKey: { keyId: 'key-1', period: 'ignored: the decider takes the key’s own' } },
});
const held = (invocationId: string, credits: number, period = '2026-12-01', at = DAY1): HoldPlaced => ({
  type: 'HoldPlaced',
  data: { invocationId, credits, placedAt: at, gatewayKey: { keyId: 'key-1', period } },
});
const settled = (invocationId: string, heldCredits: number, chargedCredits: number): AccountEvent => ({
  type: 'HoldSettled',
  data: { invocationId, heldCredits, chargedCredits, settledAt: DAY1 },
});

describe('gateway keys are issued, changed and revoked as account events, holding only the key’s hash', () => {
  it('issues a key with its settings and hash; repeating the same issue writes nothing, another key under its id is refused', () => {
    const command: AccountCommand = { type: 'IssueGatewayKey', data: { keyId: 'key-1', keyHash: HASH, name: 'ci-bot', models: ['m-b', 'm-a'], issuedAt: DAY1 } };
    spec.given([granted(10)]).when(command).then([{ type: 'GatewayKeyIssued', data: { keyId: 'key-1', keyHash: HASH, name: 'ci-bot', models: ['m-a', 'm-b'], issuedAt: DAY1 } }]);
    spec.given([granted(10), issued()]).when(command).thenNothing();
    spec.given([granted(10), issued()]).when({ ...command, data: { ...command.data, keyHash: 'b'.repeat(64) } } as AccountCommand).thenThrows(IdempotencyConflictError);
  });

  it('refuses a hash that is not a SHA-256, a blank name and a limit period it does not know, naming each field', () => {
    const command = { type: 'IssueGatewayKey', data: { keyId: 'key-1', keyHash: 'secret', name: ' ', spendLimit: { credits: 5, period: 'fortnight' }, issuedAt: DAY1 } } as unknown as AccountCommand;
    const error = spec.given([]).when(command).thenThrows(ValidationError);
    expect(error.issues.map((issue) => issue.field)).toEqual(['keyHash', 'name', 'spendLimit.period']);
  });

  it('records rejections before admission (issue 31) per key and reason, adds them up, leaves out a key it does not have, and survives a snapshot', () => {
    const command = (counts: Record<string, unknown>, keyId = 'key-1'): AccountCommand =>
      ({ type: 'RecordGatewayRejections', data: { rejections: [{ keyId, counts }, { keyId: 'no-such-key', counts: { invalid_body: 1 } }], from: DAY1, to: DAY1 } }) as AccountCommand;
    const first = { type: 'GatewayCallsRejected', data: { keyId: 'key-1', counts: { model_not_on_rate_card: 3, invalid_body: 1 }, from: DAY1, to: DAY1 } } as const;
    spec.given([granted(10), issued()]).when(command({ model_not_on_rate_card: 3, invalid_body: 1 })).then([first]);
    const state = spec.given([granted(10), issued(), first]).when(command({ model_not_on_rate_card: 2 })).then([
      { type: 'GatewayCallsRejected', data: { keyId: 'key-1', counts: { model_not_on_rate_card: 2 }, from: DAY1, to: DAY1 } },
    ]);
    expect(state.gatewayKeys.get('key-1')?.rejections).toEqual({ model_not_on_rate_card: 5, invalid_body: 1 });
    expect(accountSnapshot.decode(JSON.parse(JSON.stringify(accountSnapshot.encode(state)))).gatewayKeys.get('key-1')?.rejections).toEqual({ model_not_on_rate_card: 5, invalid_body: 1 });
    const error = spec.given([granted(10), issued()]).when(command({ max_tokens_over_cap: 0 })).thenThrows(ValidationError);
    expect(error.issues.map((issue) => issue.field)).toEqual(['rejections.0.counts.max_tokens_over_cap']);
  });

  it('replaces the settings whole on a change (a limit left out is gone), and revokes once', () => {
    const state = spec
      .given([granted(10), issued()])
      .when({ type: 'ChangeGatewayKey', data: { keyId: 'key-1', name: 'renamed', changedAt: DAY1 } })
      .then([{ type: 'GatewayKeyChanged', data: { keyId: 'key-1', name: 'renamed', changedAt: DAY1 } }]);
    expect(state.gatewayKeys.get('key-1')).toMatchObject({ name: 'renamed', keyHash: HASH });
    expect(state.gatewayKeys.get('key-1')?.spendLimit).toBeUndefined();
    const revoked = { type: 'GatewayKeyRevoked', data: { keyId: 'key-1', revokedAt: DAY1 } } as const;
    spec.given([granted(10), issued()]).when({ type: 'RevokeGatewayKey', data: { keyId: 'key-1', revokedAt: DAY1 } }).then([revoked]);
    spec.given([granted(10), issued(), revoked]).when({ type: 'RevokeGatewayKey', data: { keyId: 'key-1', revokedAt: DAY1 } }).thenNothing();
    spec.given([granted(10), issued(), revoked]).when({ type: 'ChangeGatewayKey', data: { keyId: 'key-1', name: 'x', changedAt: DAY1 } }).thenThrows(UnknownGatewayKeyError);
    spec.given([granted(10)]).when({ type: 'RevokeGatewayKey', data: { keyId: 'nope', revokedAt: DAY1 } }).thenThrows(UnknownGatewayKeyError);
  });
});

describe('a gateway hold counts against its key’s spend limit in the same decision as the credits', () => {
  it('places a hold that fits what the key spent and holds today, recording the key and the UTC day it counts in', () => {
    spec.given([granted(10_000), issued(), held('a', 300), settled('a', 300, 200)]).when(hold('b', 800)).then([held('b', 800)]);
  });

  it('refuses a hold one credit past what remains of the day’s limit, with the figures, though the organization has credits', () => {
    // 1,000 − 200 spent − 0 held = 800 remain < 801.
    spec
      .given([granted(10_000), issued(), held('a', 300), settled('a', 300, 200)])
      .when(hold('b', 801))
      .thenThrows(AdmissionRefusedError, (error) =>
        expect(error.refusal).toEqual({
          reason: 'key_spend_limit',
          figures: { keyId: 'key-1', limitCredits: 1_000, period: 'day', periodStart: '2026-12-01', spentCredits: 200, heldCredits: 0, creditHold: 801 },
        }),
      );
  });

  it('counts open holds as spent until they settle, so concurrent calls can never pass the limit together', () => {
    spec.given([granted(10_000), issued(), held('a', 600)]).when(hold('b', 401)).thenThrows(AdmissionRefusedError);
    spec.given([granted(10_000), issued(), held('a', 600)]).when(hold('b', 400)).then([held('b', 400)]);
  });

  it('starts a new UTC day at 0, and a hold of the day before that settles late does not count in the new day', () => {
    const state = spec.given([granted(10_000), issued(), held('a', 900), held('b', 1_000, '2026-12-02', DAY2), settled('a', 900, 900)]).state();
    expect(keySpend(state, state.gatewayKeys.get('key-1')!, DAY2)).toEqual({ period: '2026-12-02', spent: 0, held: 1_000 });
  });

  it('refuses a hold for a revoked or unknown key before anything is held: the gateway answers 401', () => {
    const revoked = { type: 'GatewayKeyRevoked', data: { keyId: 'key-1', revokedAt: DAY1 } } as const;
    spec.given([granted(10_000), issued(), revoked]).when(hold('b', 1)).thenThrows(UnknownGatewayKeyError);
    spec.given([granted(10_000)]).when(hold('b', 1)).thenThrows(UnknownGatewayKeyError);
  });

  it('refuses a hold whose call the key, as this decision sees it, no longer allows: its model, then its max_tokens (STATE-PFM-LLM-001 transition 1)', () => {
    const call = (model: string, maxTokens: number): AccountCommand => {
      const command = hold('b', 1) as Extract<AccountCommand, { type: 'PlaceHold' }>;
      return { ...command, data: { ...command.data, gatewayCall: { model, maxTokens } } };
    };
    const narrowed = { type: 'GatewayKeyChanged', data: { keyId: 'key-1', name: 'ci-bot', models: ['claude-haiku'], maxOutputTokens: 1_000, changedAt: DAY1 } } as const;
    const given = spec.given([granted(10_000), issued(), narrowed]);
    given.when(call('claude-sonnet', 10)).thenThrows(AdmissionRefusedError, (error) =>
      expect(error.refusal).toEqual({ reason: 'key_model_not_allowed', figures: { keyId: 'key-1', model: 'claude-sonnet' } }),
    );
    given.when(call('claude-haiku', 1_001)).thenThrows(AdmissionRefusedError, (error) =>
      expect(error.refusal).toEqual({ reason: 'key_max_tokens', figures: { keyId: 'key-1', maxTokens: 1_001, maxOutputTokens: 1_000 } }),
    );
    // Within the key's settings it is held (the change left no limit: the total counts), and the event carries nothing of the call.
    given.when(call('claude-haiku', 1_000)).then([held('b', 1, 'total')]);
    // A key with no models and no cap allows every call.
    spec.given([granted(10_000), issued()]).when(call('any-model', 100_000)).then([held('b', 1)]);
    spec.given([granted(10_000), issued()]).when(call('', 0)).thenThrows(ValidationError);
  });

  it('keeps the organization’s own refusals first: credits before the key’s limit', () => {
    spec
      .given([granted(100), issued()])
      .when(hold('b', 500))
      .thenThrows(AdmissionRefusedError, (error) => expect(error.refusal.reason).toBe('insufficient_credits'));
  });

  it('round-trips keys and their period counts through an account snapshot (codec version 3)', () => {
    const state = spec.given([granted(10_000), issued(), held('a', 300), settled('a', 300, 200)]).state();
    expect(accountSnapshot.decode(JSON.parse(JSON.stringify(accountSnapshot.encode(state))))).toEqual(state);
  });
});
