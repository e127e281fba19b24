import { DEFAULT_MAX_RUNNING, MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_OVERRUN_CREDITS, MAX_LEDGER_ENTRY_CREDITS, MAX_RUNNING_LIMIT } from '../../src/accounts/account.bounds';
import { accountDecider } from '../../src/accounts/account.decider';
import { AccountState, availableCredits, balanceOf, ledgerEntryFor } from '../../src/accounts/account.state';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { IdempotencyConflictError, ValidationError } from '../../src/domain/domain.errors';
import { deciderSpec } from '../support/decider-spec';
import {
  adjust,
  adjusted,
  changeSettings,
  grant,
  granted,
  holdPlaced,
  holdSettled,
  placeHold,
  settingsChanged,
  settleHold,
} from './account.fixtures';

const spec = deciderSpec(accountDecider);

describe('docs/lifecycle.md available = granted + adjustments − charged − held, derived and never stored', () => {
  it('derives every balance figure from grants, adjustments, holds and charges', () => {
    const state = spec
      .given([granted(1_000), adjusted(-100), holdPlaced('inv-1', 300), holdPlaced('inv-2', 200), holdSettled('inv-1', 300, 250)])
      .state();
    expect(balanceOf(state)).toEqual({ granted: 1_000, adjustments: -100, held: 200, charged: 250, available: 450, running: 1 });
  });

  it('keeps no `available` in the state or in any event, so it cannot drift from its parts', () => {
    const events = [granted(1_000), holdPlaced('inv-1', 300), holdSettled('inv-1', 300, 250)];
    const state = spec.given(events).state();
    expect(Object.keys(state)).not.toContain('available');
    for (const event of events) expect(Object.keys(event.data)).not.toContain('available');
  });

  it('goes below zero only when a settlement charges more than its hold, and then refuses new holds', () => {
    const given = [granted(500), holdPlaced('inv-1', 500), holdSettled('inv-1', 500, 620)];
    expect(availableCredits(spec.given(given).state())).toBe(-120);
    spec
      .given(given)
      .when(placeHold('inv-2', 0))
      .thenThrows(AdmissionRefusedError, { refusal: { reason: 'insufficient_credits', figures: { available: -120, creditHold: 0 } } });
  });
});

describe('docs/lifecycle.md grants and adjustments: an idempotency key returns the first result and writes nothing new', () => {
  it('grants credits', () => {
    spec.given([]).when(grant(1_000)).then([granted(1_000)]);
  });

  it('writes nothing for a repeated grant, and the first result can be read back', () => {
    const state = spec.given([granted(1_000)]).when(grant(1_000)).thenNothing();
    expect(ledgerEntryFor(state, 'grant-1')).toEqual({ kind: 'grant', credits: 1_000, reason: 'welcome credits', at: '2025-01-01T00:00:00.000Z' });
    expect(balanceOf(state).granted).toBe(1_000);
  });

  it('refuses the same key with another amount as a conflict, rather than guessing which one was meant', () => {
    spec
      .given([granted(1_000)])
      .when(grant(2_000))
      .thenThrows(IdempotencyConflictError, { code: 'idempotency_conflict', key: 'grant-1' });
  });

  it('refuses the same key with another reason as a conflict', () => {
    spec.given([granted(1_000)]).when(grant(1_000, 'grant-1', 'other')).thenThrows(IdempotencyConflictError);
  });

  it('refuses a grant key reused for an adjustment: keys share one space per account', () => {
    spec.given([granted(1_000)]).when(adjust(1_000, 'grant-1', 'welcome credits')).thenThrows(IdempotencyConflictError);
  });

  it('accepts a second grant under a new key', () => {
    const state = spec.given([granted(1_000)]).when(grant(500, 'grant-2')).then([granted(500, 'grant-2')]);
    expect(balanceOf(state).granted).toBe(1_500);
  });

  it.each([
    ['no idempotency key', { idempotencyKey: undefined }, 'idempotencyKey'],
    ['a blank idempotency key', { idempotencyKey: '  ' }, 'idempotencyKey'],
    ['zero credits', { credits: 0 }, 'credits'],
    ['negative credits', { credits: -5 }, 'credits'],
    ['fractional credits', { credits: 10.5 }, 'credits'],
    ['credits past MAX_LEDGER_ENTRY_CREDITS', { credits: MAX_LEDGER_ENTRY_CREDITS + 1 }, 'credits'],
    ['no reason', { reason: '' }, 'reason'],
    ['a time that is not ISO-8601', { grantedAt: '01/01/2025' }, 'grantedAt'],
  ])('refuses a grant with %s, naming the field (docs/http.md)', (_name, override, field) => {
    const command = grant(100);
    spec
      .given([])
      .when({ ...command, data: { ...command.data, ...override } } as never)
      .thenThrows(ValidationError, { field });
  });

  it('adjusts either way', () => {
    const state = spec.given([granted(1_000)]).when(adjust(-300)).then([adjusted(-300)]);
    expect(balanceOf(state)).toMatchObject({ adjustments: -300, available: 700 });
  });

  it('writes nothing for a repeated adjustment', () => {
    spec.given([adjusted(-300)]).when(adjust(-300)).thenNothing();
  });

  it('refuses a zero adjustment, which would record nothing', () => {
    spec.given([]).when(adjust(0)).thenThrows(ValidationError, { field: 'credits' });
  });

  it('refuses a grant that would take the totals past exact integers', () => {
    // A total this large is reached only after ~9,000 maximal grants; one recorded event stands in for them.
    spec
      .given([granted(Number.MAX_SAFE_INTEGER - 10, 'earlier')])
      .when(grant(100, 'one-more'))
      .thenThrows(ValidationError, { field: 'credits' });
  });
});

describe('docs/http.md no account total may leave the exact-integer range (MAX_ACCOUNT_TOTAL_CREDITS)', () => {
  // 9,007 grants of MAX_LEDGER_ENTRY_CREDITS, the most the range allows; one recorded event stands in
  // for them (the HTTP test makes the same total and is refused the same way).
  const fullGrants = [granted(9_007 * MAX_LEDGER_ENTRY_CREDITS, 'earlier')];

  it('refuses the adjustment that used to pass after 9,007 maximal grants, naming credits (the fuzzing’s off-by-one)', () => {
    spec.given(fullGrants).when(grant(MAX_LEDGER_ENTRY_CREDITS, 'grant-9007')).thenThrows(ValidationError, { field: 'credits' });
    spec.given(fullGrants).when(adjust(MAX_LEDGER_ENTRY_CREDITS, 'adjust-up')).thenThrows(ValidationError, { field: 'credits' });
  });

  it('accepts a negative adjustment as large: taking credits back never leaves the range', () => {
    spec
      .given(fullGrants)
      .when(adjust(-MAX_LEDGER_ENTRY_CREDITS, 'adjust-down'))
      .then([adjusted(-MAX_LEDGER_ENTRY_CREDITS, 'adjust-down')]);
  });

  it('places a hold and settles it past the hold on an account granted exactly the bound', () => {
    const full = [granted(MAX_ACCOUNT_TOTAL_CREDITS, 'all')];
    spec.given(full).when(placeHold('inv-1', 5_000)).then([holdPlaced('inv-1', 5_000)]);
    const settled = spec.given([...full, holdPlaced('inv-1', 5_000)]).when(settleHold('inv-1', 5_000 + MAX_HOLD_OVERRUN_CREDITS)).then([holdSettled('inv-1', 5_000, 5_000 + MAX_HOLD_OVERRUN_CREDITS)]);
    expect(balanceOf(settled).available).toBe(MAX_ACCOUNT_TOTAL_CREDITS - 5_000 - MAX_HOLD_OVERRUN_CREDITS);
  });

  it('refuses a hold with ledger_totals_bound, not as bad input, once the hold and its settlement room no longer fit beside what was charged', () => {
    // Everything granted was charged but the last 2,000 credits' worth of room: one event pair stands for the invocations.
    const charged = MAX_ACCOUNT_TOTAL_CREDITS - MAX_HOLD_OVERRUN_CREDITS - 1_000;
    const history = [granted(MAX_ACCOUNT_TOTAL_CREDITS, 'all'), holdPlaced('inv-0', charged), holdSettled('inv-0', charged, charged)];
    spec.given(history).when(placeHold('inv-1', 1_000)).then([holdPlaced('inv-1', 1_000)]);
    spec.given(history).when(placeHold('inv-1', 1_001)).thenThrows(AdmissionRefusedError, (error) =>
      expect(error.refusal).toEqual({
        reason: 'ledger_totals_bound',
        figures: { committedCredits: charged, creditHold: 1_001, overrunRoomCredits: MAX_HOLD_OVERRUN_CREDITS, maxTotalCredits: MAX_ACCOUNT_TOTAL_CREDITS },
      }),
    );
  });

  it('refuses only the negative adjustment that would take available past the range below zero, room for running settlements kept', () => {
    const deep = [adjusted(-(MAX_ACCOUNT_TOTAL_CREDITS - 10), 'deep')];
    spec.given(deep).when(adjust(-10, 'to-the-bound')).then([adjusted(-10, 'to-the-bound')]);
    spec.given(deep).when(adjust(-11, 'past-the-bound')).thenThrows(ValidationError, { field: 'credits' });
    // With a hold open, its settlement's room is kept too: refused while adjustments alone would still fit.
    const running = [granted(1_000), holdPlaced('inv-1', 1_000), adjusted(-(MAX_ACCOUNT_TOTAL_CREDITS - MAX_HOLD_OVERRUN_CREDITS - 10), 'deep')];
    spec.given(running).when(adjust(-10, 'to-the-room')).then([adjusted(-10, 'to-the-room')]);
    spec.given(running).when(adjust(-11, 'into-the-room')).thenThrows(ValidationError, { field: 'credits' });
    spec.given(running).when(settleHold('inv-1', 1_000 + MAX_HOLD_OVERRUN_CREDITS)).then([holdSettled('inv-1', 1_000, 1_000 + MAX_HOLD_OVERRUN_CREDITS)]);
  });

  it('keeps every figure of such an account exact: available is the exact difference', () => {
    const state = spec.given([...fullGrants, holdPlaced('inv-1', 43), holdSettled('inv-1', 43, 43)]).state();
    expect(balanceOf(state).available).toBe(9_007 * MAX_LEDGER_ENTRY_CREDITS - 43);
    expect(Number.isSafeInteger(balanceOf(state).available)).toBe(true);
  });
});

describe('docs/lifecycle.md organization settings: the aiEnabled switch and maxRunning slots', () => {
  it(`starts an account with AI enabled and DEFAULT_MAX_RUNNING (${DEFAULT_MAX_RUNNING}) slots`, () => {
    const state = spec.given([]).state();
    expect(state).toMatchObject({ exists: false, aiEnabled: true, maxRunning: DEFAULT_MAX_RUNNING });
  });

  it('records both settings as they are after the change', () => {
    const state = spec.given([]).when(changeSettings({ maxRunning: 3 })).then([settingsChanged(true, 3)]);
    expect(state).toMatchObject({ exists: true, aiEnabled: true, maxRunning: 3 });
  });

  it('records the first settings of a new account even when they equal the defaults, so the account exists', () => {
    spec.given([]).when(changeSettings({ aiEnabled: true })).then([settingsChanged(true, DEFAULT_MAX_RUNNING)]);
  });

  it('writes nothing when the settings already hold (a repeated PUT)', () => {
    spec.given([settingsChanged(false, 3)]).when(changeSettings({ aiEnabled: false, maxRunning: 3 })).thenNothing();
  });

  it.each([
    ['no setting at all', {}, 'settings'],
    ['zero slots', { maxRunning: 0 }, 'maxRunning'],
    ['slots past MAX_RUNNING_LIMIT', { maxRunning: MAX_RUNNING_LIMIT + 1 }, 'maxRunning'],
    ['a switch given as text', { aiEnabled: 'no' as unknown as boolean }, 'aiEnabled'],
  ])('refuses %s, naming the field', (_name, settings, field) => {
    spec.given([]).when(changeSettings(settings)).thenThrows(ValidationError, { field });
  });
});

describe('docs/lifecycle.md holds name their invocation: each is placed at most once and settled at most once', () => {
  it('records who settled a hold when it was not the invocation’s own run: the sweep or recovery (issue 24)', () => {
    spec
      .given([granted(1_000), holdPlaced('inv-1', 300)])
      .when({ ...settleHold('inv-1', 250), data: { ...settleHold('inv-1', 250).data, by: 'recovery' } })
      .then([{ type: 'HoldSettled', data: { ...holdSettled('inv-1', 300, 250).data, settledBy: 'recovery' } }]);
    spec
      .given([granted(1_000), holdPlaced('inv-1', 300)])
      .when({ ...settleHold('inv-1', 250), data: { ...settleHold('inv-1', 250).data, by: 'runtime' as never } })
      .thenThrows(ValidationError, { field: 'by' });
  });

  it('writes nothing when recovery settles a hold another instance already released', () => {
    spec
      .given([granted(1_000), holdPlaced('inv-1', 300), holdSettled('inv-1', 300, 250)])
      .when({ ...settleHold('inv-1', 250), data: { ...settleHold('inv-1', 250).data, by: 'recovery' } })
      .thenNothing();
  });

  it('places a hold, which takes a slot', () => {
    const state = spec.given([granted(1_000)]).when(placeHold('inv-1', 300)).then([holdPlaced('inv-1', 300)]);
    expect(balanceOf(state)).toMatchObject({ held: 300, running: 1, available: 700 });
  });

  it('writes nothing for a hold already open, even when that hold filled the last slot', () => {
    spec.given([granted(1_000), settingsChanged(true, 1), holdPlaced('inv-1', 300)]).when(placeHold('inv-1', 300)).thenNothing();
  });

  it('refuses a second hold for the same invocation with other credits', () => {
    spec.given([granted(1_000), holdPlaced('inv-1', 300)]).when(placeHold('inv-1', 400)).thenThrows(IdempotencyConflictError, { key: 'inv-1' });
  });

  it('settles a hold: releases it and its slot, and charges', () => {
    const state = spec
      .given([granted(1_000), holdPlaced('inv-1', 300)])
      .when(settleHold('inv-1', 120))
      .then([holdSettled('inv-1', 300, 120)]);
    expect(balanceOf(state)).toEqual({ granted: 1_000, adjustments: 0, held: 0, charged: 120, available: 880, running: 0 });
  });

  it('releases a hold charging nothing (transitions 12 and 13)', () => {
    spec.given([granted(1_000), holdPlaced('inv-1', 300)]).when(settleHold('inv-1', 0)).then([holdSettled('inv-1', 300, 0)]);
  });

  it('writes nothing when settling a hold already settled, so a replayed settlement never charges twice', () => {
    spec.given([granted(1_000), holdPlaced('inv-1', 300), holdSettled('inv-1', 300, 120)]).when(settleHold('inv-1', 120)).thenNothing();
  });

  it('writes nothing when settling an invocation that never held (one that stopped at estimated)', () => {
    spec.given([granted(1_000)]).when(settleHold('inv-9', 0)).thenNothing();
  });

  it.each([
    ['a fractional charge', settleHold('inv-1', 1.5), 'chargeCredits'],
    ['a negative charge', settleHold('inv-1', -1), 'chargeCredits'],
    ['a negative hold', placeHold('inv-2', -1), 'credits'],
    ['an invocation id with a space', placeHold('inv 2', 1), 'invocationId'],
  ])('refuses %s, naming the field', (_name, command, field) => {
    spec.given([granted(1_000), holdPlaced('inv-1', 300)]).when(command).thenThrows(ValidationError, { field });
  });
});

describe('docs/lifecycle.md PlaceHold refuses what admission refuses, so the account never over-commits', () => {
  it('refuses a hold while the organization switch is off', () => {
    spec
      .given([granted(1_000), settingsChanged(false, 10)])
      .when(placeHold('inv-1', 100))
      .thenThrows(AdmissionRefusedError, { code: 'admission_refused', refusal: { reason: 'ai_disabled', figures: { aiEnabled: false } } });
  });

  it('refuses a hold larger than what is available', () => {
    spec
      .given([granted(1_000), holdPlaced('inv-1', 501)])
      .when(placeHold('inv-2', 500))
      .thenThrows(AdmissionRefusedError, { refusal: { reason: 'insufficient_credits', figures: { available: 499, creditHold: 500 } } });
  });

  it('places a hold of exactly what is available', () => {
    spec.given([granted(1_000), holdPlaced('inv-1', 500)]).when(placeHold('inv-2', 500)).then([holdPlaced('inv-2', 500)]);
  });

  it('refuses a hold when every running slot is taken', () => {
    spec
      .given([granted(1_000), settingsChanged(true, 2), holdPlaced('inv-1', 1), holdPlaced('inv-2', 1)])
      .when(placeHold('inv-3', 1))
      .thenThrows(AdmissionRefusedError, { refusal: { reason: 'no_running_slot', figures: { running: 2, maxRunning: 2 } } });
  });

  it('keeps holds placed before maxRunning was lowered, and admits no new one until running drops below it', () => {
    const given = [granted(1_000), holdPlaced('inv-1', 1), holdPlaced('inv-2', 1), settingsChanged(true, 1)];
    expect(balanceOf(spec.given(given).state()).running).toBe(2);
    spec.given(given).when(placeHold('inv-3', 1)).thenThrows(AdmissionRefusedError, { refusal: { reason: 'no_running_slot' } });
  });
});

describe('docs/lifecycle.md the account state is bounded by holds in flight, not by history', () => {
  function cycles(count: number): AccountState {
    let state = spec.given([granted(1_000_000_000), settingsChanged(true, 10)]).state();
    for (let i = 0; i < count; i++) {
      for (const command of [placeHold(`inv-${i}`, 50), settleHold(`inv-${i}`, 7)]) {
        for (const event of accountDecider.decide(command, state)) state = accountDecider.evolve(state, event);
      }
    }
    return state;
  }

  const size = (state: AccountState): number =>
    JSON.stringify({ ...state, openHolds: [...state.openHolds], ledgerEntries: [...state.ledgerEntries] }).length;

  it('is the same size after 10,000 hold/settle cycles as after 10, give or take the digits of its totals', () => {
    const young = cycles(10);
    const old = cycles(10_000);
    expect(old.openHolds.size).toBe(0);
    expect(old.ledgerEntries.size).toBe(young.ledgerEntries.size);
    expect(Object.keys(old)).toEqual(Object.keys(young));
    expect(size(old) - size(young)).toBeLessThanOrEqual(8);
    expect(balanceOf(old)).toMatchObject({ charged: 70_000, held: 0, running: 0 });
  });
});
