/**
 * Projection rebuild benchmark (issue 7: rebuild ≥ 100,000 events/s over 1,000,000 events; a document
 * read p99 ≤ 5 ms at that size).
 *
 * Builds an invocation-shaped log on the embedded SQLite store (BENCH_EVENTS events, default 1,000,000:
 * invocation streams of EVENTS_PER_INVOCATION events appended in two halves, IN_FLIGHT invocations
 * interleaved), then measures on that log:
 * - the rate of reading it alone through `readAll` pages, after one warm-up pass (the ceiling a
 *   rebuild cannot beat: a rebuild reads exactly this and applies besides);
 * - the rebuild rate from position 0 of one simple projection (a summary document per invocation),
 *   then of two (plus running totals per organization), into a file-backed read-model store;
 * - point reads of an invocation's document by id on a freshly opened read store (p50/p99).
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node dist/bench/projection-rebuild.bench.js`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import { openSqliteEventStore, type SqliteEventStore } from '../src/event-store/sqlite/sqlite-event-store';
import {
  DEFAULT_CATCH_UP_PAGE_EVENTS,
  openReadModelStore,
  readModelPathFor,
  rebuildProjections,
  type Projection,
} from '../src/projection-runner';

/** Events in the generated log unless BENCH_EVENTS says otherwise. */
const DEFAULT_EVENTS = 1_000_000;
/** Events of one invocation stream: requested, 8 attempts and settled, appended as two appends of 5. */
const EVENTS_PER_INVOCATION = 10;
/** Invocations whose appends interleave in the log, as concurrent requests do. */
const IN_FLIGHT = 64;
/** Organizations the invocations belong to. */
const ORGANIZATIONS = 100;
/** Appends submitted together while generating, so they share the store's group commits. */
const GENERATION_BATCH_APPENDS = 1_000;
/** Point reads measured. */
const POINT_READS = 100_000;

interface InvocationData {
  readonly organizationId: string;
  readonly credits: number;
}

type BenchEvent = RecordedEvent<string, InvocationData>;

interface InvocationSummary {
  readonly organizationId: string;
  readonly state: string;
  readonly attempts: number;
  readonly spent: number;
  readonly lastPosition: string;
}

/** A simple projection: one summary document per invocation stream. */
const invocationSummary: Projection<BenchEvent> = {
  name: 'bench-invocation-summary',
  version: 1,
  handles: ['InvocationRequested', 'AttemptRecorded', 'InvocationSettled'],
  apply(event, tx) {
    const current = tx.get<InvocationSummary>('invocations', event.streamName);
    tx.put(
      'invocations',
      event.streamName,
      {
        organizationId: event.data.organizationId,
        state: event.type === 'InvocationSettled' ? 'settled' : 'dispatched',
        attempts: (current?.attempts ?? 0) + (event.type === 'AttemptRecorded' ? 1 : 0),
        spent: (current?.spent ?? 0) + event.data.credits,
        lastPosition: event.position.toString(),
      } satisfies InvocationSummary,
      { indexKey: event.data.organizationId },
    );
  },
};

/** A second projection, so the rebuild also shows several projections sharing one read of the log. */
const organizationTotals: Projection<BenchEvent> = {
  name: 'bench-organization-totals',
  version: 1,
  handles: ['InvocationSettled'],
  apply(event, tx) {
    const current = tx.get<{ settled: number; charged: number }>('organizations', event.data.organizationId);
    tx.put('organizations', event.data.organizationId, {
      settled: (current?.settled ?? 0) + 1,
      charged: (current?.charged ?? 0) + event.data.credits,
    });
  },
};

function eventType(index: number): string {
  if (index === 0) return 'InvocationRequested';
  return index === EVENTS_PER_INVOCATION - 1 ? 'InvocationSettled' : 'AttemptRecorded';
}

/** Append `step` of the generator: the first half of invocation `step`, the second half of `step - IN_FLIGHT`. */
function appendsOf(step: number, invocations: number): { streamName: string; half: 0 | 1; invocation: number }[] {
  const appends: { streamName: string; half: 0 | 1; invocation: number }[] = [];
  if (step < invocations) appends.push({ streamName: `invocation-${step}`, half: 0, invocation: step });
  const closing = step - IN_FLIGHT;
  if (closing >= 0 && closing < invocations) {
    appends.push({ streamName: `invocation-${closing}`, half: 1, invocation: closing });
  }
  return appends;
}

async function generateLog(store: SqliteEventStore, events: number): Promise<void> {
  const invocations = Math.ceil(events / EVENTS_PER_INVOCATION);
  const half = EVENTS_PER_INVOCATION / 2;
  let pending: Promise<unknown>[] = [];
  for (let step = 0; step < invocations + IN_FLIGHT; step += 1) {
    for (const append of appendsOf(step, invocations)) {
      const organizationId = `org-${append.invocation % ORGANIZATIONS}`;
      const batch = Array.from({ length: half }, (_, offset) => {
        const index = append.half * half + offset;
        return {
          id: randomUUID(),
          type: eventType(index),
          data: { organizationId, credits: index === 0 ? 0 : 1 + ((append.invocation + index) % 17) },
          metadata: { schemaVersion: 1, correlationId: append.streamName },
        };
      });
      pending.push(store.append(append.streamName, batch, { expectedRevision: 'any' }));
    }
    if (pending.length >= GENERATION_BATCH_APPENDS) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
}

function percentile(sortedNs: BigInt64Array, fraction: number): number {
  const index = Math.min(sortedNs.length - 1, Math.floor(fraction * sortedNs.length));
  return Number(sortedNs[index]!) / 1e6;
}

/** Deterministic pseudo-random ids, so every run reads the same documents. */
function* pseudoRandom(seed: number): Generator<number> {
  let state = seed >>> 0;
  for (;;) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    yield state;
  }
}

/**
 * A throughput measured two ways: by the wall clock, and by the CPU time this process used (user +
 * system, all threads). On a shared host the second moves far less with other people's load.
 */
export interface Rate {
  readonly events: number;
  readonly eventsPerSecond: number;
  readonly eventsPerCpuSecond: number;
}

export interface ProjectionRebuildBenchResult {
  readonly events: number;
  readonly generateSeconds: number;
  /** Paging the whole log through `readAll`, applying nothing. */
  readonly logRead: Rate;
  /** Rebuild from position 0 of the invocation summary (wipe included). */
  readonly rebuildOneProjection: Rate;
  /** Rebuild from position 0 of the summary and the organization totals, sharing one read of the log. */
  readonly rebuildTwoProjections: Rate;
  readonly documents: number;
  readonly pointReadP50Ms: number;
  readonly pointReadP99Ms: number;
  readonly pointReadMaxMs: number;
  readonly pageEvents: number;
  /** The machine, since other work on a shared host moves every figure here. */
  readonly cpus: number;
  readonly cpuModel: string;
  readonly loadAverage1mAtStart: number;
}

export async function run(): Promise<ProjectionRebuildBenchResult> {
  const events = Number(process.env['BENCH_EVENTS'] ?? DEFAULT_EVENTS);
  const loadAverage1mAtStart = round(loadavg()[0]!, 2);
  const dir = mkdtempSync(join(tmpdir(), 'projection-rebuild-bench-'));
  const logPath = join(dir, 'ledger.sqlite');
  const readPath = readModelPathFor(logPath);
  try {
    const eventStore = openSqliteEventStore({ path: logPath });
    const started = process.hrtime.bigint();
    await generateLog(eventStore, events);
    const generateSeconds = seconds(started);
    const total = Number((await eventStore.headPosition()) ?? 0n);

    // The first pass only warms the page cache (the freshly written log is partly still in the WAL).
    await readWholeLog(eventStore);
    const logRead = await timed(() => readWholeLog(eventStore));

    const store = openReadModelStore({ path: readPath });
    const one = await timed(async () =>
      (await rebuildProjections({ eventStore, store, projections: [invocationSummary] })).events,
    );
    const two = await timed(async () =>
      (await rebuildProjections({ eventStore, store, projections: [invocationSummary, organizationTotals] })).events,
    );
    store.close();
    await eventStore.close();

    // A fresh connection, as a service that restarted would have: nothing in its page cache yet.
    const reader = openReadModelStore({ path: readPath });
    const invocations = Math.ceil(total / EVENTS_PER_INVOCATION);
    const latencies = new BigInt64Array(POINT_READS);
    const ids = pseudoRandom(42);
    for (let index = 0; index < POINT_READS; index += 1) {
      const id = `invocation-${ids.next().value! % invocations}`;
      const before = process.hrtime.bigint();
      const document = reader.get<InvocationSummary>(invocationSummary.name, 'invocations', id);
      latencies[index] = process.hrtime.bigint() - before;
      if (document === undefined) throw new Error(`missing document ${id}`);
    }
    const documents = reader.count(invocationSummary.name, 'invocations');
    reader.close();
    latencies.sort();

    const result: ProjectionRebuildBenchResult = {
      events: total,
      generateSeconds: round(generateSeconds, 1),
      logRead,
      rebuildOneProjection: one,
      rebuildTwoProjections: two,
      documents,
      pointReadP50Ms: round(percentile(latencies, 0.5), 4),
      pointReadP99Ms: round(percentile(latencies, 0.99), 4),
      pointReadMaxMs: round(percentile(latencies, 1), 3),
      pageEvents: DEFAULT_CATCH_UP_PAGE_EVENTS,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      loadAverage1mAtStart,
    };
    const row = (rate: Rate, goal: string) => ({
      'events/s (wall clock)': rate.eventsPerSecond,
      'events per CPU-second': rate.eventsPerCpuSecond,
      goal,
    });
    console.table({
      'log read alone (readAll pages)': row(logRead, 'ceiling'),
      'rebuild, 1 projection': row(one, '≥ 100,000'),
      'rebuild, 2 projections': row(two, '≥ 100,000'),
    });
    console.table({
      [`point read, ${documents} documents`]: {
        'p50 ms': result.pointReadP50Ms,
        'p99 ms': result.pointReadP99Ms,
        'max ms': result.pointReadMaxMs,
        goal: 'p99 ≤ 5 ms',
      },
    });
    console.log(
      `${total} events generated in ${result.generateSeconds} s; ${result.cpus} × ${result.cpuModel}, ` +
        `load average ${loadAverage1mAtStart} at start`,
    );
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function timed(work: () => Promise<number>): Promise<Rate> {
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const events = await work();
  const wallSeconds = seconds(started);
  const cpu = process.cpuUsage(cpuBefore);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    events,
    eventsPerSecond: Math.round(events / wallSeconds),
    eventsPerCpuSecond: Math.round(events / cpuSeconds),
  };
}

/** Pages through the whole log as a rebuild does, applying nothing; returns the events read. */
async function readWholeLog(eventStore: SqliteEventStore): Promise<number> {
  let read = 0;
  let after: bigint | undefined;
  for (;;) {
    const page = await eventStore.readAll(
      after === undefined ? { maxCount: DEFAULT_CATCH_UP_PAGE_EVENTS } : { after, maxCount: DEFAULT_CATCH_UP_PAGE_EVENTS },
    );
    if (page.length === 0) return read;
    read += page.length;
    after = page[page.length - 1]!.position;
  }
}

function seconds(since: bigint): number {
  return Number(process.hrtime.bigint() - since) / 1e9;
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

if (require.main === module) {
  run().then(
    (result) => console.log(JSON.stringify(result)),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
