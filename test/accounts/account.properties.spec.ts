import fc from 'fast-check';
import type { AccountCommand } from '../../src/accounts/account.commands';
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountEvent } from '../../src/accounts/account.events';
import { AccountState, availableCredits, balanceOf, runningCount } from '../../src/accounts/account.state';
import { DomainError } from '../../src/domain/domain.errors';
import { changeSettings, grant, placeHold, settleHold } from './account.fixtures';

const invocation = fc.integer({ min: 0, max: 15 }).map((n) => `inv-${n}`);

/** Grants, holds and settlements in any order, for a handful of invocations that retry freely. */
const command = (settlementCharge: (hold: number) => fc.Arbitrary<number>): fc.Arbitrary<AccountCommand> =>
  fc.oneof(
    fc.integer({ min: 1, max: 2_000 }).map((credits) => grant(credits, `grant-${credits}`)),
    fc.tuple(invocation, fc.integer({ min: 0, max: 800 })).map(([id, credits]) => placeHold(id, credits)),
    fc.tuple(invocation, fc.integer({ min: 0, max: 800 })).chain(([id, hold]) => settlementCharge(hold).map((charge) => settleHold(id, charge))),
  );

interface Step {
  readonly before: AccountState;
  readonly events: readonly AccountEvent[];
  readonly after: AccountState;
}

/** Runs commands as the command handler would: a refused command writes nothing, the run goes on. */
function run(
  commands: readonly AccountCommand[],
  start: AccountState,
  adapt: (command: AccountCommand, state: AccountState) => AccountCommand = (command) => command,
): Step[] {
  const steps: Step[] = [];
  let state = start;
  for (const original of commands) {
    const cmd = adapt(original, state);
    let events: readonly AccountEvent[] = [];
    try {
      events = accountDecider.decide(cmd, state);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
    }
    const after = events.reduce(accountDecider.evolve, state);
    steps.push({ before: state, events, after });
    state = after;
  }
  return steps;
}

const withSlots = (maxRunning: number): AccountState =>
  [changeSettings({ maxRunning })].reduce(
    (state, cmd) => accountDecider.decide(cmd, state).reduce(accountDecider.evolve, state),
    accountDecider.initialState(),
  );

describe('docs/lifecycle.md concurrent admissions never over-commit credits or slots (property)', () => {
  it('places a hold only when it fits what was available and a slot was free, whatever the order of commands', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(command((hold) => fc.integer({ min: 0, max: 2 * hold + 10 })), { maxLength: 120 }),
        (maxRunning, commands) => {
          for (const { before, events, after } of run(commands, withSlots(maxRunning))) {
            for (const event of events) {
              if (event.type !== 'HoldPlaced') continue;
              expect(before.aiEnabled).toBe(true);
              expect(availableCredits(before)).toBeGreaterThanOrEqual(event.data.credits);
              expect(runningCount(before)).toBeLessThan(before.maxRunning);
            }
            expect(runningCount(after)).toBeLessThanOrEqual(maxRunning);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps held within granted − charged at every step when no settlement charges past its hold', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.array(command((hold) => fc.integer({ min: 0, max: hold })), { maxLength: 120 }),
        (maxRunning, commands) => {
          // Each settlement charges at most its own hold: the crossing turn is the only way past it.
          const withinHold = (cmd: AccountCommand, state: AccountState): AccountCommand =>
            cmd.type === 'SettleHold'
              ? settleHold(cmd.data.invocationId, Math.min(cmd.data.chargeCredits, state.openHolds.get(cmd.data.invocationId)?.credits ?? 0))
              : cmd;
          for (const { after } of run(commands, withSlots(maxRunning), withinHold)) {
            const balance = balanceOf(after);
            expect(balance.held).toBeLessThanOrEqual(balance.granted + balance.adjustments - balance.charged);
            expect(balance.available).toBeGreaterThanOrEqual(0);
            expect(balance.running).toBeLessThanOrEqual(maxRunning);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('places and settles each invocation’s hold at most once per opening, however often commands repeat', () => {
    fc.assert(
      fc.property(fc.array(command((hold) => fc.integer({ min: 0, max: hold })), { maxLength: 150 }), (commands) => {
        const open = new Set<string>();
        for (const { events, after } of run(commands, withSlots(6))) {
          for (const event of events) {
            if (event.type === 'HoldPlaced') {
              expect(open.has(event.data.invocationId)).toBe(false);
              open.add(event.data.invocationId);
            }
            if (event.type === 'HoldSettled') {
              expect(open.has(event.data.invocationId)).toBe(true);
              open.delete(event.data.invocationId);
            }
          }
          expect(new Set(after.openHolds.keys())).toEqual(open);
        }
      }),
      { numRuns: 300 },
    );
  });
});
