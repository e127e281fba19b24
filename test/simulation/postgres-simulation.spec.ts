import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { runSimulation, type AppendTamper, type SimulationResult } from '../../src/simulation/simulator';
import { PostgresTestServer } from '../support/postgres-server';

// Every store call is a round trip to a real server; a scenario takes 10–60 s on 2 loaded cores.
jest.setTimeout(600_000);

/** Seeds run on PostgreSQL in CI (src/simulation/README.md says how to run more). */
const POSTGRES_SEEDS = [1, 2] as const;
/** The seed whose keyed first request is overtaken by its repeat from the other process (below). */
const SEED_WITH_OVERTAKEN_FIRST_REQUEST = 7;
/** Runs of seed 7 at most, each on a fresh database, for the overtaken order to occur once (see below). */
const OVERTAKEN_ORDER_RUNS = 3;
/** Invocations per seed: crashes, restarts, both recoveries, lease pauses and gateway bursts, lean enough for CI. */
const POSTGRES_INVOCATIONS = 30;

/** A broken settlement: every hold that charges something is settled twice (as in broken-build.spec.ts). */
const chargeTwice: AppendTamper = (_stream, events) =>
  events.flatMap((event): NewEvent[] => {
    const charged = (event.data as { chargedCredits?: number }).chargedCredits ?? 0;
    return event.type === 'HoldSettled' && charged > 0 ? [event, { ...event, id: randomUUID() }] : [event];
  });

let server: PostgresTestServer | undefined;

beforeAll(async () => {
  server = await PostgresTestServer.start();
});

afterAll(async () => {
  await server?.stop();
});

/** Runs one seed on a fresh database of the test server; fails with the simulator's report. */
async function passes(seed: number, database = `sim_seed_${seed}`): Promise<SimulationResult> {
  const store = await server!.createDatabase(database);
  const result = await runSimulation({ seed, invocations: POSTGRES_INVOCATIONS, store, namespace: '' });
  if (result.report !== undefined) throw new Error(result.report);
  expect(result.violation).toBeUndefined();
  return result;
}

describe('issue 32: the simulator\'s two processes sharing one PostgreSQL log', () => {
  it.each(POSTGRES_SEEDS)(
    'seed %i: the node and the second process (each with its own repository, recovery and lease) on one fresh PostgreSQL database pass every audit, the lease audit included',
    async (seed) => {
      const result = await passes(seed);
      expect(result.tally.total('restart.')).toBeGreaterThan(0);
      expect(result.tally.total('gateway.')).toBeGreaterThan(0);
    },
  );

  // Seed 7's i11 is sent by the second process and repeated by the node at the same instant. On
  // PostgreSQL the node's repeat reaches the log first, its reserve-and-dispatch loses its
  // acknowledgement (an injected fault), and the second process's request, now the repeat, waits
  // MAX_KEYED_REPEAT_WAIT_MS for a first that never settles: KeyedRequestInProgressError, which the
  // simulator explained only for the request it had planned as the repeat (on SQLite the first one sent
  // always wins, so it never met the other order).
  // Which of the two requests reaches the server first is decided by the two processes' real timing:
  // the node's repeat won in most runs, but in one CI run of four the second process's request came
  // first and the order under test did not occur. So the seed runs again, on a fresh database, until it
  // does (each run must pass every audit either way), at most OVERTAKEN_ORDER_RUNS times.
  it('seed 7: a keyed request overtaken by its repeat from the other process may end still waiting for it, as a repeat may (KeyedRequestInProgressError on key-i11)', async () => {
    let waitedInVain = 0;
    for (let run = 1; run <= OVERTAKEN_ORDER_RUNS && waitedInVain === 0; run++) {
      const result = await passes(SEED_WITH_OVERTAKEN_FIRST_REQUEST, `sim_seed_${SEED_WITH_OVERTAKEN_FIRST_REQUEST}_run_${run}`);
      waitedInVain = result.tally.total('error.KeyedRequestInProgressError');
    }
    expect(waitedInVain).toBeGreaterThan(0);
  });

  it('catches a deliberately broken settlement on PostgreSQL as on SQLite: a hold settled twice', async () => {
    const store = await server!.createDatabase('sim_broken');
    const result = await runSimulation({ seed: 3, invocations: 30, store, namespace: '', tamper: chargeTwice });
    expect(result.violation?.invariant).toBe('account.hold-settled-once');
  });
});
