import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { openReadModelStore } from '../src/projection-runner';
import { PostgresTestServer } from '../test/support/postgres-server';

/**
 * Read models in PostgreSQL or in each instance's local SQLite file (issue 32; docs/deploying.md
 * "Read models"): the read store's own work, on the same rows, the same way round.
 * - catch-up: CATCH_UP_TRANSACTIONS transactions of CATCH_UP_DOCUMENTS document upserts and a
 *   checkpoint each (a catch-up page's writes), in document writes per second;
 * - live: LIVE_TRANSACTIONS transactions of LIVE_DOCUMENTS upserts and a checkpoint (a live batch of
 *   one call's event: its invocation, its balance, its explanation), in transactions per second;
 * - a query: QUERIES reads of one document by id among DOCUMENTS (what `GET /v1/invocations/:id`
 *   and the gateway's admission reads do), latency p50 and p99.
 * SQLite is the service's own store (openReadModelStore: WAL, one file per instance). PostgreSQL is
 * the same two tables and primary keys through `pg`, one multi-row upsert per transaction, with
 * synchronous_commit on (as the log) and off (read models are rebuilt from the log, so a server crash
 * losing the last commits would cost a catch-up, not data).
 *
 * Run alone: `npm run bench -- read-store-postgres`.
 */

const DOCUMENTS = 20_000;
const CATCH_UP_TRANSACTIONS = 100;
const CATCH_UP_DOCUMENTS = 500;
const LIVE_TRANSACTIONS = 1_000;
const LIVE_DOCUMENTS = 3;
const QUERIES = 5_000;
const PROJECTION = 'bench';
const COLLECTION = 'invocation';

/** A document about the size of an invocation view. */
function body(n: number): string {
  return JSON.stringify({ invocationId: randomUUID(), organizationId: `org-${n % 100}`, state: 'settled', estimate: 12_000, charge: n, attempts: [{ model: 'claude-bench', input: 1_200, output: 340, price: 5_310 }], settledAt: new Date().toISOString() });
}

const ids = Array.from({ length: DOCUMENTS }, (_, n) => `inv-${n.toString().padStart(6, '0')}`);
const pick = (n: number): string => ids[(n * 7_919) % DOCUMENTS]!;

function percentile(samples: number[], share: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]! * 1000) / 1000;
}

interface Figures {
  readonly catchUpDocumentsPerSecond: number;
  readonly liveTransactionsPerSecond: number;
  readonly queryP50Ms: number;
  readonly queryP99Ms: number;
}

/** Writes `batches` of `size` documents, then reads QUERIES documents one at a time. */
interface ReadStoreUnderTest {
  write(batch: readonly { id: string; body: string }[], position: number): Promise<void>;
  get(id: string): Promise<unknown>;
}

async function measure(store: ReadStoreUnderTest): Promise<Figures> {
  for (let start = 0; start < DOCUMENTS; start += CATCH_UP_DOCUMENTS) {
    await store.write(ids.slice(start, start + CATCH_UP_DOCUMENTS).map((id, n) => ({ id, body: body(start + n) })), start);
  }
  let position = DOCUMENTS;
  let started = performance.now();
  for (let t = 0; t < CATCH_UP_TRANSACTIONS; t++) {
    await store.write(Array.from({ length: CATCH_UP_DOCUMENTS }, (_, n) => ({ id: pick(t * CATCH_UP_DOCUMENTS + n), body: body(n) })), ++position);
  }
  const catchUpDocumentsPerSecond = Math.round(((CATCH_UP_TRANSACTIONS * CATCH_UP_DOCUMENTS) / (performance.now() - started)) * 1000);
  started = performance.now();
  for (let t = 0; t < LIVE_TRANSACTIONS; t++) {
    await store.write(Array.from({ length: LIVE_DOCUMENTS }, (_, n) => ({ id: pick(t * LIVE_DOCUMENTS + n), body: body(n) })), ++position);
  }
  const liveTransactionsPerSecond = Math.round((LIVE_TRANSACTIONS / (performance.now() - started)) * 1000);
  const latencies: number[] = [];
  for (let q = 0; q < QUERIES; q++) {
    const began = performance.now();
    if ((await store.get(pick(q * 13))) === undefined) throw new Error('a written document was not found');
    latencies.push(performance.now() - began);
  }
  return { catchUpDocumentsPerSecond, liveTransactionsPerSecond, queryP50Ms: percentile(latencies, 0.5), queryP99Ms: percentile(latencies, 0.99) };
}

function sqliteStore(path: string): ReadStoreUnderTest & { close(): void } {
  const store = openReadModelStore({ path });
  return {
    write: async (batch, position) => {
      store.write((session) => {
        for (const document of batch) session.putSerialised(PROJECTION, COLLECTION, document.id, document.body, null);
        session.setCheckpoint(PROJECTION, 1, BigInt(position));
      });
    },
    get: async (id) => store.get(PROJECTION, COLLECTION, id),
    close: () => store.close(),
  };
}

async function postgresStore(url: string, synchronousCommit: 'on' | 'off'): Promise<ReadStoreUnderTest & { close(): Promise<void> }> {
  const pool = new Pool({ connectionString: url, max: 2, options: `-c synchronous_commit=${synchronousCommit}` });
  await pool.query(`DROP TABLE IF EXISTS documents, checkpoints;
    CREATE TABLE documents (projection text NOT NULL, collection text NOT NULL, id text NOT NULL, body text NOT NULL, index_key text,
      PRIMARY KEY (projection, collection, id));
    CREATE INDEX documents_by_index_key ON documents (projection, collection, index_key, id) WHERE index_key IS NOT NULL;
    CREATE TABLE checkpoints (projection text PRIMARY KEY, version integer NOT NULL, position text);`);
  return {
    write: async (batch, position) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          `INSERT INTO documents (projection, collection, id, body) SELECT $1, $2, u.id, u.body FROM unnest($3::text[], $4::text[]) AS u(id, body)
           ON CONFLICT (projection, collection, id) DO UPDATE SET body = excluded.body`,
          [PROJECTION, COLLECTION, batch.map((document) => document.id), batch.map((document) => document.body)],
        );
        await client.query(
          `INSERT INTO checkpoints (projection, version, position) VALUES ($1, 1, $2) ON CONFLICT (projection) DO UPDATE SET position = excluded.position`,
          [PROJECTION, String(position)],
        );
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    },
    get: async (id) => {
      const { rows } = await pool.query({ name: 'get_document', text: 'SELECT body FROM documents WHERE projection = $1 AND collection = $2 AND id = $3', values: [PROJECTION, COLLECTION, id] });
      return rows[0] === undefined ? undefined : (JSON.parse((rows[0] as { body: string }).body) as unknown);
    },
    close: () => pool.end(),
  };
}

export async function run(): Promise<unknown> {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-read-store-'));
  const server = await PostgresTestServer.start();
  try {
    const sqlite = sqliteStore(join(directory, 'read.sqlite'));
    const rows: Array<{ store: string } & Figures> = [{ store: 'SQLite file (the service)', ...(await measure(sqlite)) }];
    sqlite.close();
    for (const synchronousCommit of ['on', 'off'] as const) {
      const postgres = await postgresStore(await server.createDatabase(`read_${synchronousCommit}`), synchronousCommit);
      rows.push({ store: `PostgreSQL, synchronous_commit ${synchronousCommit}`, ...(await measure(postgres)) });
      await postgres.close();
    }
    console.table(rows);
    return { rows };
  } finally {
    await server.stop();
    rmSync(directory, { recursive: true, force: true });
  }
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
