/**
 * On a server store the simulated process's read models follow the log through a subscription the
 * pump does not see, so a wait for them holds the pump (ProbedProjectionRunner, src/simulation/ledger-node.ts).
 * A process that dies hears nothing more from its subscription: a wait of its own (a sweep's first
 * step) must end with the process, or it holds the pump for ever. On PostgreSQL that hang ended runs
 * with `simulator.restart` ("the dead process still had 1 command(s) running after 1000000 event-loop
 * turns") or `liveness.work-finishes` (seeds 2 and 10 of 12-seed runs; src/simulation/README.md).
 */
import { ALL_PROJECTIONS } from '../../projections';
import type { EventStore } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import { openReadModelStore } from '../../src/projection-runner';
import { ActivityProbe } from '../../src/simulation/event-loop-pump';
import { FaultyEventStore, ProcessGoneError } from '../../src/simulation/faulty-event-store';
import { ProbedProjectionRunner } from '../../src/simulation/ledger-node';
import { NO_STORE_FAULTS } from '../support/no-store-faults';

describe('the simulator on a server store: a dead process\'s wait for its own read models', () => {
  let inner: EventStore;

  beforeEach(async () => {
    inner = await openEventStore('sqlite::memory:');
  });

  afterEach(() => inner.close());

  it('ends when the process dies, and lets the pump go, instead of holding it for ever (simulator.restart on PostgreSQL seeds 2 and 10)', async () => {
    const probe = new ActivityProbe();
    const store = new FaultyEventStore(inner, NO_STORE_FAULTS, probe);
    const readModels = openReadModelStore({ path: ':memory:' });
    const runner = new ProbedProjectionRunner({ eventStore: store, store: readModels, projections: ALL_PROJECTIONS, liveBatchIntervalMs: 0 }, probe, store.goneSignal);
    try {
      // A position the log has not reached: the runner waits for it, holding the pump.
      const waiting = runner.waitFor(1_000n).then(
        () => 'reached',
        (error: unknown) => error,
      );
      await new Promise((resolve) => setImmediate(resolve));
      expect(probe.busy).toBe(true);
      store.die();
      expect(await waiting).toBeInstanceOf(ProcessGoneError);
      expect(probe.busy).toBe(false);
    } finally {
      await runner.stop();
      readModels.close();
    }
  });
});
