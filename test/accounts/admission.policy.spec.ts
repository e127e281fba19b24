import { accountDecider } from '../../src/accounts/account.decider';
import { AccountState } from '../../src/accounts/account.state';
import { admit, decideAdmission, refusalOf } from '../../src/accounts/admission.policy';
import type { Publication } from '../../src/catalog/operation.events';
import { replay } from '../../src/domain/decider';
import { granted, holdPlaced, settingsChanged } from './account.fixtures';

const publication = (overrides: Partial<Publication> = {}): Publication => ({
  version: 3,
  routing: { provider: 'scripted', model: 'scripted-1' },
  limits: { maxTurns: 4, maxToolCalls: 8, totalTimeMs: 60_000, attemptTimeoutMs: 20_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 3 },
  prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 },
  creditHold: 500,
  enabled: true,
  publishedAt: '2025-01-01T00:00:00.000Z',
  ...overrides,
});

const account = (...events: Parameters<typeof accountDecider.evolve>[1][]): AccountState => replay(accountDecider, events);

describe('docs/lifecycle.md admission, in order: access, credits, slot', () => {
  it('admits when the switch is on, the hold fits and a slot is free', () => {
    expect(decideAdmission(account(granted(1_000)), publication())).toEqual({ admitted: true });
  });

  it('refuses ai_disabled first, whatever else is wrong, and says nothing about the catalog', () => {
    const off = account(settingsChanged(false, 10));
    expect(decideAdmission(off, undefined)).toEqual({ admitted: false, reason: 'ai_disabled', figures: { aiEnabled: false } });
    expect(decideAdmission(off, publication({ enabled: false }))).toMatchObject({ reason: 'ai_disabled' });
  });

  it('refuses unknown_operation for an operation never published', () => {
    expect(decideAdmission(account(granted(1_000)), undefined)).toEqual({
      admitted: false,
      reason: 'unknown_operation',
      figures: { publishedVersions: 0 },
    });
  });

  it('refuses operation_disabled, naming the version in force, before looking at credits', () => {
    expect(decideAdmission(account(), publication({ enabled: false }))).toEqual({
      admitted: false,
      reason: 'operation_disabled',
      figures: { version: 3, enabled: false },
    });
  });

  it('refuses insufficient_credits when available < creditHold, before looking at slots', () => {
    const full = account(granted(1_000), settingsChanged(true, 1), holdPlaced('inv-1', 501));
    expect(decideAdmission(full, publication())).toEqual({
      admitted: false,
      reason: 'insufficient_credits',
      figures: { available: 499, creditHold: 500 },
    });
  });

  it('admits a hold of exactly what is available: the rule is strict less-than', () => {
    expect(decideAdmission(account(granted(500)), publication())).toEqual({ admitted: true });
  });

  it('refuses no_running_slot when running >= maxRunning', () => {
    const busy = account(granted(10_000), settingsChanged(true, 2), holdPlaced('inv-1', 500), holdPlaced('inv-2', 500));
    expect(decideAdmission(busy, publication())).toEqual({
      admitted: false,
      reason: 'no_running_slot',
      figures: { running: 2, maxRunning: 2 },
    });
  });

  it('admits into the last free slot', () => {
    const one = account(granted(10_000), settingsChanged(true, 2), holdPlaced('inv-1', 500));
    expect(decideAdmission(one, publication())).toEqual({ admitted: true });
  });

  it("checks the account alone with admit(), in the same order", () => {
    expect(admit(account(settingsChanged(false, 1)), { creditHold: 1 })).toMatchObject({ reason: 'ai_disabled' });
    expect(admit(account(), { creditHold: 1 })).toMatchObject({ reason: 'insufficient_credits' });
    expect(admit(account(), { creditHold: 0 })).toEqual({ admitted: true });
  });

  it('gives the refusal to record without the admitted flag', () => {
    const decision = decideAdmission(account(), publication());
    if (decision.admitted) throw new Error('expected a refusal');
    expect(refusalOf(decision)).toEqual({ reason: 'insufficient_credits', figures: { available: 0, creditHold: 500 } });
  });
});
