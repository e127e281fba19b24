import { runSimulation } from '../../src/simulation/simulator';

/** Fixed seeds of the bounded run; each draws its own organizations, operations, faults and crashes. */
const SEEDS = [1, 2, 3, 4];
const INVOCATIONS = 60;
/** A scenario with its gateway calls takes a few seconds here; the bound leaves room for a loaded machine. */
const SCENARIO_TIMEOUT_MS = 180_000;

describe('issue 8: seeded scenarios attack the ledger with faults and load, and every invariant holds after every step', () => {
  it.each(SEEDS)(
    'seed %i: through provider faults, misbehaving tools and judges, repeats, concurrent sweeps, store conflicts, crashes and restarts',
    async (seed) => {
      const result = await runSimulation({ seed, invocations: INVOCATIONS });
      if (result.report !== undefined) throw new Error(result.report);
      expect(result.violation).toBeUndefined();
      expect(result.events).toBeGreaterThan(INVOCATIONS);
      expect(result.checks).toBeGreaterThan(INVOCATIONS);
    },
    SCENARIO_TIMEOUT_MS,
  );

  it(
    'replays a seed exactly, so a failure found once can be run again and again',
    async () => {
      const first = await runSimulation({ seed: 5, invocations: 40 });
      const second = await runSimulation({ seed: 5, invocations: 40 });
      expect(second.digest).toBe(first.digest);
      expect(second.tally.toJSON()).toEqual(first.tally.toJSON());
      expect(second.virtualMs).toBe(first.virtualMs);
      const other = await runSimulation({ seed: 6, invocations: 40 });
      expect(other.digest).not.toBe(first.digest);
    },
    SCENARIO_TIMEOUT_MS,
  );
});
