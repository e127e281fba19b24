import { randomUUID } from 'node:crypto';
import { Pool } from 'pg';
import { accountDecider } from '../src/accounts/account.decider';
import { accountStreamName } from '../src/accounts/account.events';
import { AggregateRepository } from '../src/aggregates/aggregate.repository';
import type { NewEvent, RecordedEvent } from '../src/event-store/event-store.port';
import { openPostgresEventStore, POSTGRES_POSITION_INDEX_BITS, type PostgresEventStore } from '../src/event-store/postgres/postgres-event-store';
import { PostgresTestServer } from '../test/support/postgres-server';

/**
 * PostgreSQL store benchmark, against a real local server it starts (Debian's `postgresql`, fsync and
 * synchronous_commit on):
 * - single-event appends with an exact expected revision through the store, one writer and
 *   CONCURRENT_WRITERS writers on their own streams, beside raw one-row INSERTs through the same
 *   driver into a table of the same shape (the limit: one commit per event);
 * - a read of one READ_STREAM_EVENTS-event stream;
 * - a subscription's delay in another instance (its own pool and listener): from an append's
 *   acknowledgement to the handler, SUBSCRIPTION_SAMPLES appends apart;
 * - the hot-organization bound: HOT_INSTANCES instances (a store and a repository each) sending
 *   GrantCredits commands to one account stream, HOT_IN_FLIGHT in flight each.
 *
 * Run alone: `npm run bench -- postgres-store`.
 */

const APPENDS_PER_SCENARIO = 2_000;
const CONCURRENT_WRITERS = 16;
const READ_STREAM_EVENTS = 1_000;
const READS = 50;
const SUBSCRIPTION_SAMPLES = 200;
const HOT_INSTANCES = 3;
const HOT_IN_FLIGHT = 32;
const HOT_COMMANDS_PER_INSTANCE = 1_000;

const DATA = JSON.stringify({ invocationId: randomUUID(), credits: 1_234, model: 'claude-bench', note: 'a typical event of the ledger '.repeat(3) });
const METADATA = JSON.stringify({ schemaVersion: 1, correlationId: randomUUID() });

function event(): NewEvent {
  return { id: randomUUID(), type: 'Benchmarked', data: JSON.parse(DATA) as unknown, metadata: JSON.parse(METADATA) as NewEvent['metadata'] };
}

async function timed(work: () => Promise<void>): Promise<number> {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

async function writers(count: number, total: number, write: (writer: number, index: number) => Promise<void>): Promise<number> {
  const ms = await timed(async () => {
    await Promise.all(Array.from({ length: count }, async (_, writer) => {
      for (let index = 0; index < total / count; index++) await write(writer, index);
    }));
  });
  return Math.round((total / ms) * 1000);
}

async function rawInsertsPerSecond(pool: Pool, count: number): Promise<number> {
  const run = randomUUID();
  return writers(count, APPENDS_PER_SCENARIO, async (writer, index) => {
    await pool.query({
      name: 'raw_insert',
      text: 'INSERT INTO raw_events (stream_name, revision, event_id, type, data, metadata) VALUES ($1, $2, $3, $4, $5, $6)',
      values: [`raw-${run}-${writer}`, index, randomUUID(), 'Benchmarked', DATA, METADATA],
    });
  });
}

async function storeAppendsPerSecond(store: PostgresEventStore, count: number): Promise<number> {
  const run = randomUUID();
  return writers(count, APPENDS_PER_SCENARIO, async (writer, index) => {
    await store.append(`store-${run}-${writer}`, [event()], { expectedRevision: index === 0 ? 'no_stream' : BigInt(index - 1) });
  });
}

async function readStreamMs(store: PostgresEventStore): Promise<number> {
  const stream = `read-${randomUUID()}`;
  await store.append(stream, Array.from({ length: READ_STREAM_EVENTS }, event), { expectedRevision: 'no_stream' });
  const ms = await timed(async () => {
    for (let read = 0; read < READS; read++) await store.readStream(stream);
  });
  return Math.round((ms / READS) * 100) / 100;
}

/** Delays, in ms, from each append's acknowledgement on one instance to its delivery on another. */
async function subscriptionDelays(writer: PostgresEventStore, url: string): Promise<number[]> {
  const reader = await openPostgresEventStore({ connectionString: url });
  const acknowledged = new Map<string, number>();
  const delays: number[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const subscription = reader.subscribeToAll(
    (recorded: RecordedEvent) => {
      const at = acknowledged.get(recorded.id);
      if (at === undefined) return;
      delays.push(performance.now() - at);
      if (delays.length === SUBSCRIPTION_SAMPLES) done();
    },
    { after: await reader.headPosition() },
  );
  for (let sample = 0; sample < SUBSCRIPTION_SAMPLES; sample++) {
    const appended = event();
    await writer.append(`delay-${sample}`, [appended], { expectedRevision: 'no_stream' });
    acknowledged.set(appended.id, performance.now());
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await finished;
  await subscription.stop();
  await reader.close();
  return delays.sort((a, b) => a - b);
}

async function hotOrganization(url: string): Promise<{ commandsPerSecond: number; appendsPerSecond: number; eventsPerAppend: number }> {
  const stores = await Promise.all(Array.from({ length: HOT_INSTANCES }, () => openPostgresEventStore({ connectionString: url })));
  const stream = accountStreamName(`hot-${randomUUID()}`);
  const ms = await timed(async () => {
    await Promise.all(stores.map(async (store, instance) => {
      const repository = new AggregateRepository(store);
      let next = 0;
      await Promise.all(Array.from({ length: HOT_IN_FLIGHT }, async () => {
        while (next < HOT_COMMANDS_PER_INSTANCE) {
          const index = next++;
          await repository.handle(stream, accountDecider, {
            type: 'GrantCredits',
            data: { credits: 1, reason: 'bench', idempotencyKey: `hot-${instance}-${index}`, grantedAt: new Date().toISOString() },
          });
        }
      }));
    }));
  });
  const events = await stores[0]!.readStream(stream);
  const appends = new Set(events.map((recorded) => recorded.position >> POSTGRES_POSITION_INDEX_BITS)).size;
  await Promise.all(stores.map((store) => store.close()));
  return {
    commandsPerSecond: Math.round((events.length / ms) * 1000),
    appendsPerSecond: Math.round((appends / ms) * 1000),
    eventsPerAppend: Math.round((events.length / appends) * 10) / 10,
  };
}

export async function run(): Promise<unknown> {
  const server = await PostgresTestServer.start();
  try {
    const url = await server.createDatabase('bench');
    const store = await openPostgresEventStore({ connectionString: url });
    const pool = new Pool({ connectionString: url, max: CONCURRENT_WRITERS });
    // The log's columns and unique indexes, numbered by a plain sequence, written by a bare INSERT.
    await pool.query(`CREATE TABLE raw_events (
      position bigserial PRIMARY KEY, stream_name text NOT NULL, revision bigint NOT NULL, event_id uuid NOT NULL UNIQUE,
      type text NOT NULL, data json NOT NULL, metadata json NOT NULL, recorded_at timestamptz NOT NULL DEFAULT transaction_timestamp(),
      UNIQUE (stream_name, revision))`);
    const rows = [];
    for (const count of [1, CONCURRENT_WRITERS]) {
      const raw = await rawInsertsPerSecond(pool, count);
      const appended = await storeAppendsPerSecond(store, count);
      rows.push({ writers: count, rawInsertsPerSecond: raw, storeAppendsPerSecond: appended, ratio: Math.round((appended / raw) * 100) / 100 });
    }
    console.table(rows);
    const read1000Ms = await readStreamMs(store);
    console.log(`read of a ${READ_STREAM_EVENTS}-event stream: ${read1000Ms} ms`);
    const delays = await subscriptionDelays(store, url);
    const at = (share: number): number => Math.round(delays[Math.min(delays.length - 1, Math.floor(share * delays.length))]! * 10) / 10;
    const delay = { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
    console.log(`subscription delay in another instance: p50 ${delay.p50Ms} ms, p99 ${delay.p99Ms} ms, max ${delay.maxMs} ms`);
    const hot = await hotOrganization(url);
    console.log(`one account stream, ${HOT_INSTANCES} instances × ${HOT_IN_FLIGHT} in flight: ${hot.commandsPerSecond} commands/s in ${hot.appendsPerSecond} appends/s (${hot.eventsPerAppend} events per append)`);
    await pool.end();
    await store.close();
    return { appends: rows, read1000Ms, subscriptionDelay: delay, hotOrganization: hot };
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
