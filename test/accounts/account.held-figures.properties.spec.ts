/**
 * The figures admission reads from the holds in flight (the account's credits held, each key's calls
 * in flight and its credits held by period, each team's) are kept as holds are placed and settled,
 * not walked from the open holds at each decision (src/accounts/account.state.ts "HeldFigures"). Here
 * they are checked against a walk of the open holds, written again here, after every event of any
 * sequence, and after a snapshot's round trip.
 */
import fc from 'fast-check';
import type { AccountEvent, HoldGatewayKey } from '../../src/accounts/account.events';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountSnapshot } from '../../src/accounts/account.snapshot';
import { availableCredits, heldCredits, keyCallsInFlight, keyHoldsByPeriod, teamHoldsByPeriod, type AccountState } from '../../src/accounts/account.state';

const AT = '2026-12-05T10:00:00.000Z';
const invocation = fc.integer({ min: 0, max: 9 }).map((n) => `inv-${n}`);
const period = fc.constantFrom('2026-12-05', '2026-12-06', 'total');
const gatewayKey: fc.Arbitrary<HoldGatewayKey | undefined> = fc.option(
  fc.record(
    { keyId: fc.constantFrom('key-1', 'key-2', 'key-3'), period, team: fc.option(fc.record({ teamId: fc.constantFrom('team-1', 'team-2'), period }), { nil: undefined }) },
    { requiredKeys: ['keyId', 'period'] },
  ),
  { nil: undefined },
);

/** Any log an account stream may hold: holds placed (again, too) and settled (unknown ones, too), among grants. */
const event: fc.Arbitrary<AccountEvent> = fc.oneof(
  fc.tuple(invocation, fc.integer({ min: 0, max: 500 }), gatewayKey).map(([invocationId, credits, key]): AccountEvent => ({
    type: 'HoldPlaced',
    data: { invocationId, credits, placedAt: AT, ...(key === undefined || key.team === undefined ? (key === undefined ? {} : { gatewayKey: { keyId: key.keyId, period: key.period } }) : { gatewayKey: key }) },
  })),
  fc.tuple(invocation, fc.integer({ min: 0, max: 500 })).map(([invocationId, chargedCredits]): AccountEvent => ({ type: 'HoldSettled', data: { invocationId, heldCredits: 0, chargedCredits, settledAt: AT } })),
  fc.integer({ min: 1, max: 1_000 }).map((credits): AccountEvent => ({ type: 'CreditsGranted', data: { credits, reason: 'r', idempotencyKey: `grant-${credits}`, grantedAt: AT } })),
);

/** The figures by a walk of the open holds, as admission read them before they were kept. */
function walked(state: AccountState) {
  let credits = 0;
  const byKey = new Map<string, { count: number; byPeriod: Map<string, number> }>();
  const byTeam = new Map<string, { count: number; byPeriod: Map<string, number> }>();
  const count = (map: typeof byKey, id: string, inPeriod: string, held: number) => {
    const entry = map.get(id) ?? { count: 0, byPeriod: new Map<string, number>() };
    entry.count += 1;
    entry.byPeriod.set(inPeriod, (entry.byPeriod.get(inPeriod) ?? 0) + held);
    map.set(id, entry);
  };
  for (const hold of state.openHolds.values()) {
    credits += hold.credits;
    if (hold.gatewayKey !== undefined) count(byKey, hold.gatewayKey.keyId, hold.gatewayKey.period, hold.credits);
    if (hold.gatewayKey?.team !== undefined) count(byTeam, hold.gatewayKey.team.teamId, hold.gatewayKey.team.period, hold.credits);
  }
  const plain = (map: typeof byKey) =>
    Object.fromEntries([...map].map(([id, entry]) => [id, { count: entry.count, byPeriod: Object.fromEntries([...entry.byPeriod].filter(([, held]) => held !== 0)) }]));
  return { credits, byKey: plain(byKey), byTeam: plain(byTeam) };
}

/** The kept figures, read as admission reads them. */
function kept(state: AccountState) {
  const ids = (map: ReadonlyMap<string, unknown> | { keys(): Iterable<string> }) => [...map.keys()];
  const byKey = Object.fromEntries(ids(state.held.byKey).map((keyId) => [keyId, { count: keyCallsInFlight(state, keyId), byPeriod: Object.fromEntries(keyHoldsByPeriod(state, keyId)) }]));
  const byTeam = Object.fromEntries(ids(state.held.byTeam).map((teamId) => [teamId, { count: state.held.byTeam.get(teamId)!.count, byPeriod: Object.fromEntries(teamHoldsByPeriod(state, teamId)) }]));
  return { credits: heldCredits(state), byKey, byTeam };
}

describe('available = granted + adjustments − charged − held, a key\'s and a team\'s spend limit and a key\'s calls in flight read figures kept with the holds (docs/lifecycle.md "Settlement and the account", docs/gateway.md "Rate limits")', () => {
  it('equal a walk of the open holds after every event of any sequence, and after a snapshot of the account is read back (property)', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 80 }), (events) => {
        let state = accountDecider.initialState();
        for (const next of events) {
          state = accountDecider.evolve(state, next);
          expect(kept(state)).toEqual(walked(state));
        }
        const decoded = accountSnapshot.decode(JSON.parse(JSON.stringify(accountSnapshot.encode(state))));
        expect(kept(decoded)).toEqual(walked(state));
        expect(availableCredits(decoded)).toBe(availableCredits(state));
      }),
      { numRuns: 400 },
    );
  });

  it('forget a key and a team once their last call settles, so the figures grow with the calls in flight and no further', () => {
    const hold = (invocationId: string): AccountEvent => ({
      type: 'HoldPlaced',
      data: { invocationId, credits: 7, placedAt: AT, gatewayKey: { keyId: 'key-1', period: 'total', team: { teamId: 'team-1', period: '2026-12' } } },
    });
    const settled = (invocationId: string): AccountEvent => ({ type: 'HoldSettled', data: { invocationId, heldCredits: 7, chargedCredits: 3, settledAt: AT } });
    const during = [hold('a'), hold('b'), settled('a')].reduce(accountDecider.evolve, accountDecider.initialState());
    expect(kept(during)).toEqual({ credits: 7, byKey: { 'key-1': { count: 1, byPeriod: { total: 7 } } }, byTeam: { 'team-1': { count: 1, byPeriod: { '2026-12': 7 } } } });
    const after = accountDecider.evolve(during, settled('b'));
    expect({ held: kept(after), keys: after.held.byKey.size, teams: after.held.byTeam.size }).toEqual({ held: { credits: 0, byKey: {}, byTeam: {} }, keys: 0, teams: 0 });
  });
});
