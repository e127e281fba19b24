import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { newEventId } from '../src/event-store/event-id.generator';
import type { NewEvent } from '../src/event-store/event-store.port';
import {
  SQLITE_BUSY_TIMEOUT_MS,
  SqliteEventStore,
  WAL_AUTOCHECKPOINT_PAGES,
  openSqliteEventStore,
} from '../src/event-store/sqlite/sqlite-event-store';
import type { SqliteSynchronous } from '../src/event-store/sqlite/sqlite-synchronous';

/**
 * Event store benchmark: the embedded store's append throughput at 1, 10 and 100 events per append
 * (one writer awaiting each append, then many concurrent writers so group commit shows), its readAll
 * rate, and raw better-sqlite3 inserts into the same schema with the same pragmas and the same
 * transaction shape (one transaction per append, JSON serialisation included), measured in the same
 * run (raw and store interleaved slice by slice). The ratio store/raw for
 * sequential 10-event appends is the figure the goal is set on (≥ 0.70).
 *
 * Run alone: `npm run build && node dist/bench/event-store.bench.js`.
 */

/** Events written per measured scenario and writer (the number of appends is this divided by the batch size). */
const EVENTS_PER_SCENARIO = 20_000;
/** Fewer under synchronous=FULL, where each commit waits for an fsync. */
const EVENTS_PER_FULL_SCENARIO = 3_000;
/**
 * Slices each scenario is cut into, raw and store taking turns slice by slice: on a shared machine,
 * one long run of each could land in different moments of someone else's load.
 */
const INTERLEAVED_CHUNKS = 10;
/** Appends per stream: an invocation writes its events over a few appends. */
const APPENDS_PER_STREAM = 4;
/** Concurrent writers in the concurrent scenarios. */
const CONCURRENT_WRITERS = 32;
/** Appends run before measuring, so both sides are measured with warm JIT and caches. */
const WARMUP_APPENDS = 300;
/** Page size of the readAll measurement, in events. */
const READ_PAGE_EVENTS = 1_000;
/** The goal: the store keeps at least this share of the raw rate for 10-event appends. */
const GOAL_RATIO_10_EVENTS = 0.7;

/** Random (v4) ids, as `randomUUID()` makes, or time-ordered (v7) ids from `newEventId()`. */
export type IdKind = 'uuid-v4' | 'uuid-v7';

export interface BenchRow {
  readonly writer: 'raw better-sqlite3' | 'store';
  readonly synchronous: SqliteSynchronous;
  readonly ids: IdKind;
  readonly eventsPerAppend: number;
  readonly concurrency: number;
  readonly appends: number;
  readonly durationMs: number;
  readonly appendsPerSecond: number;
  readonly eventsPerSecond: number;
  /** Store only: appends committed per SQLite transaction (1 means no grouping happened). */
  readonly appendsPerTransaction?: number;
}

export interface BenchRatio {
  readonly synchronous: SqliteSynchronous;
  readonly ids: IdKind;
  readonly eventsPerAppend: number;
  readonly storeEventsPerSecond: number;
  readonly rawEventsPerSecond: number;
  /** Store (one awaiting writer) / raw, same transaction shape. */
  readonly sequentialRatio: number;
  /** Store with CONCURRENT_WRITERS (group commit) / raw. */
  readonly concurrentRatio: number;
}

export interface BenchResult {
  readonly name: 'event-store';
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly memoryGiB: number;
    readonly node: string;
    readonly sqlite: string;
    readonly platform: string;
  };
  readonly appends: readonly BenchRow[];
  readonly readAll: { readonly events: number; readonly durationMs: number; readonly eventsPerSecond: number };
  readonly ratios: readonly BenchRatio[];
  readonly goal: { readonly ratio10Events: number; readonly target: number; readonly met: boolean };
}

interface Plan {
  readonly synchronous: SqliteSynchronous;
  readonly ids: IdKind;
  readonly eventsPerAppend: number;
  readonly events: number;
}

/** One append's worth of events, shaped like an attempt record. */
function batchOf(eventsPerAppend: number, streamIndex: number, ids: IdKind): NewEvent[] {
  return Array.from({ length: eventsPerAppend }, (_, index) => ({
    id: ids === 'uuid-v7' ? newEventId() : randomUUID(),
    type: 'AttemptRecorded',
    data: {
      invocationId: `inv-${streamIndex}`,
      turn: 1 + (index % 8),
      retry: 0,
      classification: 'ok',
      startedAtMs: 1_764_460_800_000 + index,
      durationMs: 812,
      model: 'claude-sonnet-4-5',
      usage: { inputTokens: 1200, outputTokens: 340, cacheWriteTokens: 0, cacheReadTokens: 800 },
      price: 9,
    },
    metadata: { schemaVersion: 1, correlationId: `corr-${streamIndex}`, causationId: `cmd-${streamIndex}` },
  }));
}

/** The appends of one scenario, generated before the clock starts (ids are the caller's, on both sides). */
function workload(events: number, eventsPerAppend: number, ids: IdKind): Array<{ streamName: string; events: NewEvent[] }> {
  const appends = Math.max(1, Math.floor(events / eventsPerAppend));
  // Stream names as the domain makes them: a category and a random invocation id.
  const streamNames = Array.from({ length: Math.ceil(appends / APPENDS_PER_STREAM) }, () => `invocation-${randomUUID()}`);
  return Array.from({ length: appends }, (_, index) => {
    const streamIndex = Math.floor(index / APPENDS_PER_STREAM);
    return { streamName: streamNames[streamIndex]!, events: batchOf(eventsPerAppend, streamIndex, ids) };
  });
}

function rate(count: number, durationMs: number): number {
  return Math.round((count / durationMs) * 1000);
}

type Workload = ReturnType<typeof workload>;

/** Raw inserts: BEGIN IMMEDIATE, one INSERT per event (revisions known, nothing checked), COMMIT. */
class RawWriter {
  private readonly revisions = new Map<string, number>();

  private constructor(
    private readonly db: Database.Database,
    private readonly insert: Database.Statement,
    private readonly begin: Database.Statement,
    private readonly commit: Database.Statement,
  ) {}

  /** Same file layout and pragmas as the store: the store creates the schema, then raw writes it. */
  static async open(path: string, synchronous: SqliteSynchronous): Promise<RawWriter> {
    await openSqliteEventStore({ path, synchronous }).close();
    const db = new Database(path, { timeout: SQLITE_BUSY_TIMEOUT_MS });
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    db.pragma('temp_store = MEMORY');
    const insert = db.prepare(
      `INSERT INTO events (stream_name, revision, event_id, type, data, metadata, recorded_at_ms, batch_expected_revision)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    return new RawWriter(db, insert, db.prepare('BEGIN IMMEDIATE'), db.prepare('COMMIT'));
  }

  write(appends: Workload): void {
    for (const append of appends) {
      let revision = this.revisions.get(append.streamName) ?? 0;
      const expected = revision === 0 ? 'no_stream' : String(revision - 1);
      const recordedAtMs = Date.now();
      this.begin.run();
      for (let index = 0; index < append.events.length; index++) {
        const event = append.events[index]!;
        this.insert.run(
          append.streamName,
          revision++,
          event.id,
          event.type,
          JSON.stringify(event.data),
          JSON.stringify(event.metadata),
          recordedAtMs,
          index === 0 ? expected : null,
        );
      }
      this.commit.run();
      this.revisions.set(append.streamName, revision);
    }
  }

  close(): void {
    this.db.close();
  }
}

/** `concurrency` writers through the store, each appending whole streams in order with the exact expected revision. */
class StoreWriter {
  private readonly revisions = new Map<string, bigint>();

  constructor(
    readonly store: SqliteEventStore,
    private readonly concurrency: number,
  ) {}

  async write(appends: Workload): Promise<void> {
    // Appends of one stream stay on one writer (streams are contiguous runs of APPENDS_PER_STREAM).
    const byStream: Workload[] = [];
    for (const append of appends) {
      const last = byStream[byStream.length - 1];
      if (last && last[0]!.streamName === append.streamName) last.push(append);
      else byStream.push([append]);
    }
    let next = 0;
    await Promise.all(
      Array.from({ length: this.concurrency }, async () => {
        while (next < byStream.length) {
          for (const append of byStream[next++]!) {
            const result = await this.store.append(append.streamName, append.events, {
              expectedRevision: this.revisions.get(append.streamName) ?? 'no_stream',
            });
            this.revisions.set(append.streamName, result.nextExpectedRevision);
          }
        }
      }),
    );
  }
}

function chunksOf(appends: Workload, chunks: number): Workload[] {
  const size = Math.ceil(appends.length / chunks);
  return Array.from({ length: chunks }, (_, index) => appends.slice(index * size, (index + 1) * size));
}

/**
 * Measures raw, store with one writer and store with CONCURRENT_WRITERS on three fresh files, in
 * INTERLEAVED_CHUNKS alternating slices, so load from other processes falls on all three alike.
 */
async function measurePlan(directory: string, plan: Plan): Promise<{ rows: BenchRow[]; sequentialStore: SqliteEventStore }> {
  const name = `${plan.synchronous}-${plan.ids}-${plan.eventsPerAppend}`;
  const raw = await RawWriter.open(join(directory, `raw-${name}.sqlite`), plan.synchronous);
  const sequential = new StoreWriter(openSqliteEventStore({ path: join(directory, `store-${name}.sqlite`), synchronous: plan.synchronous }), 1);
  const concurrent = new StoreWriter(
    openSqliteEventStore({ path: join(directory, `store-concurrent-${name}.sqlite`), synchronous: plan.synchronous }),
    CONCURRENT_WRITERS,
  );
  const warmup = (): Workload => workload(WARMUP_APPENDS * plan.eventsPerAppend, plan.eventsPerAppend, plan.ids);
  raw.write(warmup());
  await sequential.write(warmup());
  await concurrent.write(warmup());
  const before = { sequential: sequential.store.groupCommitStats, concurrent: concurrent.store.groupCommitStats };

  const rawChunks = chunksOf(workload(plan.events, plan.eventsPerAppend, plan.ids), INTERLEAVED_CHUNKS);
  const sequentialChunks = chunksOf(workload(plan.events, plan.eventsPerAppend, plan.ids), INTERLEAVED_CHUNKS);
  const concurrentChunks = chunksOf(workload(plan.events, plan.eventsPerAppend, plan.ids), INTERLEAVED_CHUNKS);
  const elapsedMs = { raw: 0, sequential: 0, concurrent: 0 };
  for (let chunk = 0; chunk < INTERLEAVED_CHUNKS; chunk++) {
    let started = performance.now();
    raw.write(rawChunks[chunk]!);
    elapsedMs.raw += performance.now() - started;
    started = performance.now();
    await sequential.write(sequentialChunks[chunk]!);
    elapsedMs.sequential += performance.now() - started;
    started = performance.now();
    await concurrent.write(concurrentChunks[chunk]!);
    elapsedMs.concurrent += performance.now() - started;
  }
  raw.close();
  await concurrent.store.close();

  const appends = rawChunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const row = (writer: BenchRow['writer'], concurrency: number, durationMs: number, appendsPerTransaction?: number): BenchRow => ({
    writer,
    synchronous: plan.synchronous,
    ids: plan.ids,
    eventsPerAppend: plan.eventsPerAppend,
    concurrency,
    appends,
    durationMs: Math.round(durationMs),
    appendsPerSecond: rate(appends, durationMs),
    eventsPerSecond: rate(appends * plan.eventsPerAppend, durationMs),
    ...(appendsPerTransaction === undefined ? {} : { appendsPerTransaction }),
  });
  const grouping = (writer: StoreWriter, from: { transactions: number; appends: number }): number => {
    const now = writer.store.groupCommitStats;
    return Math.round(((now.appends - from.appends) / (now.transactions - from.transactions)) * 10) / 10;
  };
  return {
    rows: [
      row('raw better-sqlite3', 1, elapsedMs.raw),
      row('store', 1, elapsedMs.sequential, grouping(sequential, before.sequential)),
      row('store', CONCURRENT_WRITERS, elapsedMs.concurrent, grouping(concurrent, before.concurrent)),
    ],
    sequentialStore: sequential.store,
  };
}

async function measureReadAll(store: SqliteEventStore): Promise<BenchResult['readAll']> {
  let events = 0;
  let after: bigint | undefined;
  const started = performance.now();
  for (;;) {
    const page = await store.readAll({ after, maxCount: READ_PAGE_EVENTS });
    if (page.length === 0) break;
    events += page.length;
    after = page[page.length - 1]!.position;
  }
  const durationMs = performance.now() - started;
  return { events, durationMs: Math.round(durationMs), eventsPerSecond: rate(events, durationMs) };
}

export async function run(): Promise<BenchResult> {
  const directory = mkdtempSync(join(tmpdir(), 'ledger-bench-event-store-'));
  const rows: BenchRow[] = [];
  const ratios: BenchRatio[] = [];
  let readAll: BenchResult['readAll'] | undefined;
  try {
    const plans: Plan[] = [
      { synchronous: 'NORMAL', ids: 'uuid-v4', eventsPerAppend: 1, events: EVENTS_PER_SCENARIO },
      { synchronous: 'NORMAL', ids: 'uuid-v4', eventsPerAppend: 10, events: EVENTS_PER_SCENARIO },
      { synchronous: 'NORMAL', ids: 'uuid-v4', eventsPerAppend: 100, events: EVENTS_PER_SCENARIO },
      { synchronous: 'NORMAL', ids: 'uuid-v7', eventsPerAppend: 10, events: EVENTS_PER_SCENARIO },
      { synchronous: 'FULL', ids: 'uuid-v4', eventsPerAppend: 10, events: EVENTS_PER_FULL_SCENARIO },
    ];
    for (const plan of plans) {
      const { rows: planRows, sequentialStore } = await measurePlan(directory, plan);
      if (readAll === undefined && plan.eventsPerAppend === 10) readAll = await measureReadAll(sequentialStore);
      await sequentialStore.close();
      const [raw, sequential, concurrent] = planRows as [BenchRow, BenchRow, BenchRow];
      rows.push(raw, sequential, concurrent);
      ratios.push({
        synchronous: plan.synchronous,
        ids: plan.ids,
        eventsPerAppend: plan.eventsPerAppend,
        storeEventsPerSecond: sequential.eventsPerSecond,
        rawEventsPerSecond: raw.eventsPerSecond,
        sequentialRatio: Math.round((sequential.eventsPerSecond / raw.eventsPerSecond) * 100) / 100,
        concurrentRatio: Math.round((concurrent.eventsPerSecond / raw.eventsPerSecond) * 100) / 100,
      });
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }

  const ratio10 = ratios.find(
    (ratio) => ratio.synchronous === 'NORMAL' && ratio.ids === 'uuid-v4' && ratio.eventsPerAppend === 10,
  )!.sequentialRatio;
  const probe = new Database(':memory:');
  const sqlite = probe.prepare('SELECT sqlite_version()').pluck().get() as string;
  probe.close();
  const result: BenchResult = {
    name: 'event-store',
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
      sqlite,
      platform: `${process.platform}-${process.arch}`,
    },
    appends: rows,
    readAll: readAll!,
    ratios,
    goal: { ratio10Events: ratio10, target: GOAL_RATIO_10_EVENTS, met: ratio10 >= GOAL_RATIO_10_EVENTS },
  };

  console.log(`event store benchmark on ${result.machine.cpu} (${result.machine.cores} cores), Node ${result.machine.node}, SQLite ${sqlite}`);
  console.table(
    rows.map((row) => ({
      writer: row.writer,
      synchronous: row.synchronous,
      ids: row.ids,
      'events/append': row.eventsPerAppend,
      writers: row.concurrency,
      appends: row.appends,
      'appends/s': row.appendsPerSecond,
      'events/s': row.eventsPerSecond,
      'appends/txn': row.appendsPerTransaction ?? '',
    })),
  );
  console.table(
    ratios.map((ratio) => ({
      synchronous: ratio.synchronous,
      ids: ratio.ids,
      'events/append': ratio.eventsPerAppend,
      'raw events/s': ratio.rawEventsPerSecond,
      'store events/s': ratio.storeEventsPerSecond,
      'store/raw (1 writer)': ratio.sequentialRatio,
      [`store/raw (${CONCURRENT_WRITERS} writers)`]: ratio.concurrentRatio,
    })),
  );
  console.log(`readAll: ${result.readAll.events} events in ${result.readAll.durationMs} ms = ${result.readAll.eventsPerSecond} events/s`);
  console.log(`goal: store/raw for 10-event appends = ${ratio10} (target ≥ ${GOAL_RATIO_10_EVENTS}): ${result.goal.met ? 'met' : 'NOT met'}`);
  return result;
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
