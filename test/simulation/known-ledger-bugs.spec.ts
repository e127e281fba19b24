import { runSimulation } from '../../src/simulation/simulator';

const TIMEOUT_MS = 60_000;

/** Bugs the simulator found in the ledger, kept as regressions by the seed that found them. */
describe('issue 8: ledger bugs the simulator found stay fixed', () => {
  it(
    'seed 1 × 100: a sweep no longer settles a dispatched request whose conversation still runs, because the conversation’s time budget starts at the recorded dispatch',
    async () => {
      const result = await runSimulation({ seed: 1, invocations: 100 });
      expect(result.violation).toBeUndefined();
    },
    TIMEOUT_MS,
  );
});
