/**
 * Teams, weeks and budget alerts in the account stream (docs/gateway.md "Teams", "Periods", "Budget
 * alerts"): a gateway hold is decided against the organization's credits, its key's team and its key
 * in one PlaceHold; a settlement that reaches an `alertAt` threshold records it in the same append.
 */
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountCommand } from '../../src/accounts/account.commands';
import type { AccountEvent, GatewayBudgetThresholdCrossed, GatewayKeyIssued, GatewayTeamCreated, HoldPlaced } from '../../src/accounts/account.events';
import { accountSnapshot } from '../../src/accounts/account.snapshot';
import { teamSpend } from '../../src/accounts/account.state';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { isoWeekOf, periodOf } from '../../src/accounts/gateway-keys';
import { MAX_GATEWAY_TEAMS_PER_ORGANIZATION, UnknownGatewayTeamError } from '../../src/accounts/gateway-teams';
import { IllegalTransitionError, ValidationError } from '../../src/domain/domain.errors';
import { isoWeekName } from '../../src/simulation/gateway-audit';
import { deciderSpec } from '../support/decider-spec';
import { granted } from './account.fixtures';

const spec = deciderSpec<AccountCommand, AccountEvent, ReturnType<typeof accountDecider.initialState>>(accountDecider);
const HASH = 'a'.repeat(64);
/** A Thursday, in ISO week 2026-W49. */
const THU = '2026-12-03T10:00:00.000Z';
/** The Monday after: week 2026-W50 starts at 00:00 UTC. */
const MON = '2026-12-07T00:00:00.000Z';

const team = (settings: Partial<GatewayTeamCreated['data']> = {}): GatewayTeamCreated => ({
  type: 'GatewayTeamCreated',
  data: { teamId: 'team-1', name: 'platform', spendLimit: { credits: 1_000, period: 'week' }, createdAt: THU, ...settings },
});
const key = (keyId: string, settings: Partial<GatewayKeyIssued['data']> = {}): GatewayKeyIssued => ({
  type: 'GatewayKeyIssued',
  data: { keyId, keyHash: keyId === 'key-1' ? HASH : 'b'.repeat(64), name: keyId, teamId: 'team-1', issuedAt: THU, ...settings },
});
const hold = (invocationId: string, credits: number, keyId = 'key-1', at = THU): AccountCommand => ({
  type: 'PlaceHold',
  data: { invocationId, credits, placedAt: at, gatewayKey: { keyId, period: 'ignored' } },
});
const held = (invocationId: string, credits: number, keyId = 'key-1', teamPeriod = '2026-W49', at = THU): HoldPlaced => ({
  type: 'HoldPlaced',
  data: { invocationId, credits, placedAt: at, gatewayKey: { keyId, period: 'total', team: { teamId: 'team-1', period: teamPeriod } } },
});
const settled = (invocationId: string, heldCredits: number, chargedCredits: number, at = THU): AccountEvent => ({
  type: 'HoldSettled',
  data: { invocationId, heldCredits, chargedCredits, settledAt: at },
});
const settle = (invocationId: string, chargeCredits: number, at = THU): AccountCommand => ({ type: 'SettleHold', data: { invocationId, chargeCredits, settledAt: at } });

describe('periods: an ISO week from Monday 00:00 UTC, named like 2026-W49', () => {
  it('names the week by the year of its Thursday, across year ends', () => {
    expect(isoWeekOf('2026-12-03T10:00:00.000Z')).toBe('2026-W49');
    expect(isoWeekOf('2026-12-06T23:59:59.999Z')).toBe('2026-W49');
    expect(isoWeekOf('2026-12-07T00:00:00.000Z')).toBe('2026-W50');
    // 2027-01-01 is a Friday: still 2026's last week; 2024-12-30 is a Monday: 2025's first.
    expect(isoWeekOf('2027-01-01T12:00:00.000Z')).toBe('2026-W53');
    expect(isoWeekOf('2024-12-30T00:00:00.000Z')).toBe('2025-W01');
    expect(isoWeekOf('2021-01-03T00:00:00.000Z')).toBe('2020-W53');
    expect(periodOf('week', THU)).toBe('2026-W49');
  });

  it('agrees, on every day from 1999 to 2101, with the simulator audit’s own computation (week 1 holds 4 January)', () => {
    for (let day = Date.UTC(1999, 0, 1); day <= Date.UTC(2101, 11, 31); day += 86_400_000) {
      const at = new Date(day).toISOString();
      if (isoWeekOf(at) !== isoWeekName(at)) throw new Error(`${at}: ${isoWeekOf(at)} ≠ ${isoWeekName(at)}`);
    }
  });

  it('accepts `week` as a key’s limit period and counts its hold in the ISO week', () => {
    const weekly = key('key-1', { teamId: undefined, spendLimit: { credits: 500, period: 'week' } });
    const { teamId: _t, ...data } = weekly.data;
    spec.given([granted(10_000), { ...weekly, data }]).when(hold('a', 500)).then([{ type: 'HoldPlaced', data: { invocationId: 'a', credits: 500, placedAt: THU, gatewayKey: { keyId: 'key-1', period: '2026-W49' } } }]);
  });
});

describe('teams are created, changed and deleted as account events (docs/gateway.md "Teams")', () => {
  it('creates a team with a weekly limit and alerts; a retry with the same settings writes nothing', () => {
    const command: AccountCommand = { type: 'CreateGatewayTeam', data: { teamId: 'team-1', name: 'platform', spendLimit: { credits: 1_000, period: 'week' }, alertAt: [80, 50, 80], createdAt: THU } };
    spec.given([granted(10)]).when(command).then([team({ alertAt: [50, 80] })]);
    spec.given([granted(10), team({ alertAt: [50, 80] })]).when(command).thenNothing();
    spec.given([]).when(command).thenThrows(IllegalTransitionError);
  });

  it('refuses bad settings naming each field: a blank name, an unknown period, a percentage out of 1–100, alertAt without a limit', () => {
    const bad = { type: 'CreateGatewayTeam', data: { teamId: 'team-1', name: ' ', spendLimit: { credits: 5, period: 'fortnight' }, alertAt: [0, 101], createdAt: THU } } as unknown as AccountCommand;
    expect(spec.given([granted(10)]).when(bad).thenThrows(ValidationError).issues.map((issue) => issue.field)).toEqual(['name', 'spendLimit.period', 'alertAt.0', 'alertAt.1']);
    const unlimited = { type: 'CreateGatewayTeam', data: { teamId: 'team-1', name: 'x', alertAt: [50], createdAt: THU } } as unknown as AccountCommand;
    expect(spec.given([granted(10)]).when(unlimited).thenThrows(ValidationError).field).toBe('alertAt');
  });

  it(`refuses a team past ${MAX_GATEWAY_TEAMS_PER_ORGANIZATION} in one organization, naming teamId`, () => {
    const teams = Array.from({ length: MAX_GATEWAY_TEAMS_PER_ORGANIZATION }, (_, index) => team({ teamId: `team-${index}` }));
    const command: AccountCommand = { type: 'CreateGatewayTeam', data: { teamId: 'one-more', name: 'x', createdAt: THU } };
    expect(spec.given([granted(10), ...teams]).when(command).thenThrows(ValidationError).field).toBe('teamId');
  });

  it('a key naming a team the organization does not have is refused naming teamId, on issue and on change', () => {
    const issue: AccountCommand = { type: 'IssueGatewayKey', data: { keyId: 'key-1', keyHash: HASH, name: 'k', teamId: 'no-such-team', issuedAt: THU } };
    expect(spec.given([granted(10)]).when(issue).thenThrows(ValidationError).field).toBe('teamId');
    const change: AccountCommand = { type: 'ChangeGatewayKey', data: { keyId: 'key-1', name: 'k', teamId: 'no-such-team', changedAt: THU } };
    expect(spec.given([granted(10), team(), key('key-1')]).when(change).thenThrows(ValidationError).field).toBe('teamId');
    // A change that leaves teamId out takes the key out of its team.
    const state = spec.given([granted(10), team(), key('key-1')]).when({ type: 'ChangeGatewayKey', data: { keyId: 'key-1', name: 'k', changedAt: THU } }).then([
      { type: 'GatewayKeyChanged', data: { keyId: 'key-1', name: 'k', changedAt: THU } },
    ]);
    expect(state.gatewayKeys.get('key-1')?.teamId).toBeUndefined();
  });

  it('replaces a team’s settings whole; an unknown team is UnknownGatewayTeamError (404)', () => {
    const state = spec.given([granted(10), team({ alertAt: [50] })]).when({ type: 'ChangeGatewayTeam', data: { teamId: 'team-1', name: 'renamed', changedAt: THU } }).then([
      { type: 'GatewayTeamChanged', data: { teamId: 'team-1', name: 'renamed', changedAt: THU } },
    ]);
    expect(state.gatewayTeams.get('team-1')).toMatchObject({ name: 'renamed', spentInPeriod: 0 });
    expect(state.gatewayTeams.get('team-1')?.spendLimit).toBeUndefined();
    spec.given([granted(10)]).when({ type: 'ChangeGatewayTeam', data: { teamId: 'nope', name: 'x', changedAt: THU } }).thenThrows(UnknownGatewayTeamError);
  });

  it('refuses to delete a team a live key names (409), deletes it once its keys are revoked, and its open holds settle without it', () => {
    const deletion: AccountCommand = { type: 'DeleteGatewayTeam', data: { teamId: 'team-1', deletedAt: THU } };
    const error = spec.given([granted(10_000), team(), key('key-1')]).when(deletion).thenThrows(IllegalTransitionError);
    expect(error.message).toContain('key-1');
    const revoked: AccountEvent = { type: 'GatewayKeyRevoked', data: { keyId: 'key-1', revokedAt: THU } };
    const gone: AccountEvent = { type: 'GatewayTeamDeleted', data: { teamId: 'team-1', deletedAt: THU } };
    spec.given([granted(10_000), team(), key('key-1'), held('a', 100), revoked]).when(deletion).then([gone]);
    const state = spec.given([granted(10_000), team(), key('key-1'), held('a', 100), revoked, gone]).when(settle('a', 40)).then([settled('a', 100, 40)]);
    expect(state.gatewayTeams.size).toBe(0);
    expect(state.charged).toBe(40);
    spec.given([granted(10_000)]).when(deletion).thenThrows(UnknownGatewayTeamError);
  });
});

describe('a gateway hold is decided against the organization, its team and its key at once', () => {
  const given = [granted(10_000), team(), key('key-1'), key('key-2')];

  it('records the team and the team’s ISO week on the hold', () => {
    spec.given(given).when(hold('a', 300)).then([held('a', 300)]);
  });

  it('refuses team_spend_limit when the team’s keys together would pass its limit, with the figures, though each key and the organization have room', () => {
    spec
      .given([...given, held('a', 300), settled('a', 300, 200), held('b', 500, 'key-2')])
      .when(hold('c', 301))
      .thenThrows(AdmissionRefusedError, (error) =>
        expect(error.refusal).toEqual({
          reason: 'team_spend_limit',
          figures: { teamId: 'team-1', teamName: 'platform', keyId: 'key-1', limitCredits: 1_000, period: 'week', periodStart: '2026-W49', spentCredits: 200, heldCredits: 500, creditHold: 301 },
        }),
      );
    spec.given([...given, held('a', 300), settled('a', 300, 200), held('b', 500, 'key-2')]).when(hold('c', 300)).then([held('c', 300)]);
  });

  it('checks the organization’s credits first, then the team, then the key', () => {
    const refusal = (events: AccountEvent[], command: AccountCommand) => spec.given(events).when(command).thenThrows(AdmissionRefusedError).refusal.reason;
    expect(refusal([granted(100), team(), key('key-1', { spendLimit: { credits: 10, period: 'day' } })], hold('a', 500))).toBe('insufficient_credits');
    expect(refusal([granted(10_000), team(), key('key-1', { spendLimit: { credits: 10, period: 'day' } })], hold('a', 2_000))).toBe('team_spend_limit');
    expect(refusal([granted(10_000), team(), key('key-1', { spendLimit: { credits: 10, period: 'day' } })], hold('a', 500))).toBe('key_spend_limit');
  });

  it('starts a new week on Monday 00:00 UTC: the last week’s spend no longer counts', () => {
    const state = spec.given([...given, held('a', 900), settled('a', 900, 900)]).when(hold('b', 1_000, 'key-1', MON)).then([held('b', 1_000, 'key-1', '2026-W50', MON)]);
    expect(teamSpend(state, state.gatewayTeams.get('team-1')!, MON)).toEqual({ period: '2026-W50', spent: 0, held: 1_000 });
  });

  it('keeps a hold and its charge with the team it was placed under when its key changes team, and survives a snapshot', () => {
    const other = team({ teamId: 'team-2', name: 'research' });
    const moved: AccountEvent = { type: 'GatewayKeyChanged', data: { keyId: 'key-1', name: 'key-1', teamId: 'team-2', changedAt: THU } };
    const state = spec.given([...given, other, held('a', 300), moved]).when(settle('a', 250)).then([settled('a', 300, 250)]);
    const decoded = accountSnapshot.decode(JSON.parse(JSON.stringify(accountSnapshot.encode(state))));
    expect(teamSpend(decoded, decoded.gatewayTeams.get('team-1')!, THU)).toEqual({ period: '2026-W49', spent: 250, held: 0 });
    expect(decoded.gatewayTeams.get('team-2')?.spentInPeriod).toBe(0);
  });
});

describe('budget alerts: once per threshold per period, in the settlement’s own append (docs/gateway.md "Budget alerts")', () => {
  const crossed = (budget: GatewayBudgetThresholdCrossed['data']['budget'], percent: number, spentCredits: number, invocationId: string, extra: Partial<GatewayBudgetThresholdCrossed['data']> = {}): GatewayBudgetThresholdCrossed => ({
    type: 'GatewayBudgetThresholdCrossed',
    data: { budget, percent, period: 'week', periodStart: '2026-W49', limitCredits: 1_000, spentCredits, heldCredits: 0, invocationId, crossedAt: THU, ...extra },
  });
  const teamBudget = { kind: 'team', teamId: 'team-1', name: 'platform' } as const;
  const given = [granted(10_000), team({ alertAt: [50, 80] }), key('key-1')];

  it('records nothing below the first threshold, then the threshold the charge reached, naming the team, period, limit and spent', () => {
    spec.given([...given, held('a', 600)]).when(settle('a', 499)).then([settled('a', 600, 499)]);
    spec.given([...given, held('a', 600)]).when(settle('a', 500)).then([settled('a', 600, 500), crossed(teamBudget, 50, 500, 'a')]);
  });

  it('records every threshold one settlement passes, and none again in the same period', () => {
    const first = [...given, held('a', 900), settled('a', 900, 850), crossed(teamBudget, 50, 850, 'a'), crossed(teamBudget, 80, 850, 'a')];
    spec.given([...given, held('a', 900)]).when(settle('a', 850)).then([settled('a', 900, 850), crossed(teamBudget, 50, 850, 'a'), crossed(teamBudget, 80, 850, 'a')]);
    spec.given([...first, held('b', 100)]).when(settle('b', 100)).then([settled('b', 100, 100)]);
  });

  it('records them again in the next week, and for a key’s own alertAt beside its team’s', () => {
    const withKeyAlerts = [granted(10_000), team({ alertAt: [50] }), key('key-1', { spendLimit: { credits: 200, period: 'week' }, alertAt: [100] })];
    const keyHeld: HoldPlaced = { type: 'HoldPlaced', data: { invocationId: 'a', credits: 200, placedAt: THU, gatewayKey: { keyId: 'key-1', period: '2026-W49', team: { teamId: 'team-1', period: '2026-W49' } } } };
    spec.given([...withKeyAlerts, keyHeld]).when(settle('a', 200)).then([
      settled('a', 200, 200),
      crossed({ kind: 'key', keyId: 'key-1', name: 'key-1' }, 100, 200, 'a', { limitCredits: 200 }),
    ]);
    const lastWeek = [...given, held('a', 900), settled('a', 900, 600), crossed(teamBudget, 50, 600, 'a')];
    spec.given([...lastWeek, held('b', 500, 'key-1', '2026-W50', MON)]).when(settle('b', 500, MON)).then([
      settled('b', 500, 500, MON),
      crossed(teamBudget, 50, 500, 'b', { periodStart: '2026-W50', crossedAt: MON }),
    ]);
  });

  it('rejects alertAt on a key without a limit, naming alertAt, and more than the bound of percentages', () => {
    const issue = (settings: Record<string, unknown>) => ({ type: 'IssueGatewayKey', data: { keyId: 'key-9', keyHash: HASH, name: 'k', issuedAt: THU, ...settings } }) as unknown as AccountCommand;
    expect(spec.given([granted(10)]).when(issue({ alertAt: [50] })).thenThrows(ValidationError).field).toBe('alertAt');
    expect(spec.given([granted(10)]).when(issue({ spendLimit: { credits: 10, period: 'day' }, alertAt: Array.from({ length: 11 }, (_, i) => i + 1) })).thenThrows(ValidationError).field).toBe('alertAt');
  });
});

describe('a period’s count never goes back (docs/gateway.md "Periods")', () => {
  const SUN = '2026-12-06T23:59:59.000Z';
  const given = [granted(10_000), team(), key('key-1', { spendLimit: { credits: 1_000, period: 'week' } })];
  const inWeek = (invocationId: string, credits: number, period: string, at: string): HoldPlaced => ({
    type: 'HoldPlaced',
    data: { invocationId, credits, placedAt: at, gatewayKey: { keyId: 'key-1', period, team: { teamId: 'team-1', period } } },
  });

  it('a hold stamped in the week before (an instance whose clock runs behind) counts in the week the key and team already count, so their spend there is not forgotten', () => {
    // 600 spent in W50; a late instance's hold stamped Sunday (W49) must not reset W50's count.
    const spentInW50 = [...given, inWeek('a', 600, '2026-W50', MON), settled('a', 600, 600, MON)];
    const late = spec.given(spentInW50).when(hold('b', 100, 'key-1', SUN)).then([inWeek('b', 100, '2026-W50', SUN)]);
    expect(teamSpend(late, late.gatewayTeams.get('team-1')!, MON)).toEqual({ period: '2026-W50', spent: 600, held: 100 });
    // So W50 still has 1,000 − 600 − 100 = 300 left, for the key and for the team.
    spec.given([...spentInW50, inWeek('b', 100, '2026-W50', SUN)]).when(hold('c', 301, 'key-1', MON)).thenThrows(AdmissionRefusedError, (error) => expect(error.refusal.reason).toBe('team_spend_limit'));
  });
});
