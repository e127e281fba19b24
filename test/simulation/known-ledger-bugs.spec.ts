import { runSimulation } from '../../src/simulation/simulator';

// A scenario with its gateway calls takes seconds alone; the bound leaves room for the full suite on a loaded machine.
const TIMEOUT_MS = 180_000;

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

describe('issue 23: gateway accounting bugs the simulator found stay fixed (docs/gateway.md)', () => {
  it(
    'seed 1 × 60: an upstream reporting more usage than the request could produce is charged its hold, not 40,341 credits on a 3,797-credit hold past its key’s limit',
    async () => {
      const result = await runSimulation({ seed: 1, invocations: 60 });
      expect(result.violation).toBeUndefined();
      expect(result.tally.get('observed.gateway-call-settled.transition-8.capped-at-its-hold')).toBeGreaterThan(0);
    },
    TIMEOUT_MS,
  );

  it(
    'seed 3 × 60: an instance admits at the rate card version priced on another instance since it first read the card, and honours a key’s allowlist changed there',
    async () => {
      // Before: the second process priced calls at claude-sim-b v1 eleven seconds after v2, and refused
      // a model the key's allowlist had allowed for minutes, because it never read either stream again.
      const result = await runSimulation({ seed: 3, invocations: 60 });
      expect(result.violation).toBeUndefined();
      expect(result.tally.get('gateway.call.by-second-process')).toBeGreaterThan(0);
    },
    TIMEOUT_MS,
  );
});
