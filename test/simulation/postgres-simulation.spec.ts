import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { runSimulation, type AppendTamper } from '../../src/simulation/simulator';
import { PostgresTestServer } from '../support/postgres-server';

// Every store call is a round trip to a real server; a scenario takes 10–60 s on 2 loaded cores.
jest.setTimeout(600_000);

/** Seeds run on PostgreSQL in CI (src/simulation/README.md says how to run more). */
const POSTGRES_SEEDS = [1, 2] as const;
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

describe('issue 32: the simulator\'s two processes sharing one PostgreSQL log', () => {
  it.each(POSTGRES_SEEDS)(
    'seed %i: the node and the second process (each with its own repository, recovery and lease) on one fresh PostgreSQL database pass every audit, the lease audit included',
    async (seed) => {
      const store = await server!.createDatabase(`sim_seed_${seed}`);
      const result = await runSimulation({ seed, invocations: POSTGRES_INVOCATIONS, store, namespace: '' });
      if (result.report !== undefined) throw new Error(result.report);
      expect(result.violation).toBeUndefined();
      expect(result.tally.total('restart.')).toBeGreaterThan(0);
      expect(result.tally.total('gateway.')).toBeGreaterThan(0);
    },
  );

  it('catches a deliberately broken settlement on PostgreSQL as on SQLite: a hold settled twice', async () => {
    const store = await server!.createDatabase('sim_broken');
    const result = await runSimulation({ seed: 3, invocations: 30, store, namespace: '', tamper: chargeTwice });
    expect(result.violation?.invariant).toBe('account.hold-settled-once');
  });
});
