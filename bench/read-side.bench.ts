/**
 * The read side at 1,000,000 events of real invocations (issue 7): rebuild rate of every projection
 * the service runs (projections/index.ts ALL_PROJECTIONS) from position 0, as `llm-ledger projections
 * rebuild` runs it (rebuildProjectionsInParallel, in the groups rebuildGroups derives, on worker threads) and
 * on one thread (rebuildProjections; the two must build the same read model), and the latency of reading
 * an invocation's explanation document (docs/http.md `GET /v1/invocations/:id/explanation` reads exactly
 * this document once the read model is caught up) on a freshly opened read-model file.
 *
 * The log: a real run of SAMPLE_INVOCATIONS invocations through RunOperationCommand (full-path shape:
 * 3 turns, 2 tool calls, 64 in flight, 100 organizations) is recorded, then its invocations are
 * repeated with fresh invocation and event ids, in their recorded interleaving, until the log holds
 * BENCH_EVENTS events; the copies are inserted with bare better-sqlite3 into the store's schema.
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node dist/bench/read-side.bench.js` (BENCH_EVENTS).
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ALL_PROJECTIONS,
  ALL_PROJECTIONS_MODULE,
  EXPLANATION_COLLECTION,
  EXPLANATIONS_PROJECTION,
  INVOCATION_COLLECTION,
  INVOCATIONS_PROJECTION,
} from '../projections';
import { newEventId } from '../src/event-store/event-id.generator';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import { migrateSqliteSchema } from '../src/event-store/sqlite/sqlite-schema.migrations';
import { openSqliteEventStore } from '../src/event-store/sqlite/sqlite-event-store';
import {
  compareReadModels,
  openReadModelStore,
  readModelPathFor,
  rebuildProjections,
  type RebuildIntoResult,
  type SqliteReadModelStore,
} from '../src/projection-runner';
import { rebuildGroups, rebuildProjectionsInParallel } from '../src/projection-runner/rebuild/parallel-rebuild';
import { recordLog } from './full-path.bench';

const DEFAULT_EVENTS = 1_000_000;
/** Invocations of the recorded sample that the large log repeats. */
const SAMPLE_INVOCATIONS = 1_000;
/** Rows inserted per transaction while generating. */
const GENERATION_TRANSACTION_EVENTS = 10_000;
/** Explanation reads measured. */
const POINT_READS = 100_000;
/** The goals of issue 7. */
const GOAL_REBUILD_EVENTS_PER_SECOND = 100_000;
const GOAL_READ_P99_MS = 5;

const INVOCATION_PREFIX = 'invocation-';

export interface ReadSideReport {
  readonly events: number;
  readonly invocations: number;
  readonly generateSeconds: number;
  /** As the CLI rebuilds: one worker thread per group. */
  readonly rebuild: RebuildFigures;
  /** On one thread, into another file. */
  readonly sequentialRebuild: RebuildFigures;
  /** The two rebuilds wrote the same documents and checkpoints. */
  readonly rebuildsEqual: boolean;
  readonly explanationRead: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number };
  readonly invocationRead: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number };
  readonly loadAverage1mAtStart: number;
}

export interface RebuildFigures {
  readonly groups: readonly (readonly string[])[];
  readonly seconds: number;
  readonly eventsPerSecond: number;
  /** Events per second of CPU time of the whole process (every thread, the garbage collector's too). */
  readonly eventsPerCpuSecond: number;
}

/** Runs one rebuild and times it, by the wall clock and by the process's CPU time. */
async function timed(
  groups: readonly (readonly string[])[],
  rebuild: () => Promise<RebuildIntoResult>,
): Promise<{ readonly result: RebuildIntoResult; readonly figures: RebuildFigures }> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const result = await rebuild();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const faulted = result.projections.filter((projection) => projection.fault !== undefined);
  if (faulted.length > 0) throw new Error(`projections faulted: ${faulted.map((projection) => `${projection.name}: ${projection.fault!.error.message}`).join('; ')}`);
  return {
    result,
    figures: {
      groups,
      seconds: round(seconds, 2),
      eventsPerSecond: Math.round(result.events / seconds),
      eventsPerCpuSecond: Math.round(result.events / ((cpu.user + cpu.system) / 1e6)),
    },
  };
}

/** Writes `target` events: the sample's set-up events once, then copies of its invocations. */
function generateLog(logPath: string, sample: readonly RecordedEvent[], target: number): string[] {
  const db = new Database(logPath);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  migrateSqliteSchema(db);
  const insert = db.prepare(
    `INSERT INTO events (stream_name, revision, event_id, type, data, metadata, recorded_at_ms, batch_expected_revision)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const setUp = sample.filter((event) => invocationOf(event) === undefined);
  const ofInvocations = sample.filter((event) => invocationOf(event) !== undefined);
  const sampleIds = [...new Set(ofInvocations.map((event) => invocationOf(event)!))];
  // Account streams keep growing across copies; every other stream starts at revision 0.
  const accountRevisions = new Map<string, bigint>();
  const invocationIds: string[] = [];
  const write = db.transaction((rows: readonly RecordedEvent[], renames: ReadonlyMap<string, string>) => {
    for (const event of rows) {
      const from = invocationOf(event);
      const to = from === undefined ? undefined : renames.get(from);
      // Each event names only its own invocation (in its stream name, data or metadata).
      const rename = (text: string): string => (from === undefined || to === undefined ? text : text.split(from).join(to));
      const streamName = rename(event.streamName);
      let revision = event.revision;
      if (streamName.startsWith('account-')) {
        revision = (accountRevisions.get(streamName) ?? -1n) + 1n;
        accountRevisions.set(streamName, revision);
      }
      insert.run(streamName, revision, newEventId(), event.type, rename(JSON.stringify(event.data)), rename(JSON.stringify(event.metadata)), Date.now(), null);
    }
  });
  write(setUp, new Map());
  let written = setUp.length;
  while (written < target) {
    const renames = new Map(sampleIds.map((id) => [id, newEventId()]));
    invocationIds.push(...renames.values());
    const copy = ofInvocations.slice(0, Math.min(ofInvocations.length, target - written));
    for (let start = 0; start < copy.length; start += GENERATION_TRANSACTION_EVENTS) {
      write(copy.slice(start, start + GENERATION_TRANSACTION_EVENTS), renames);
    }
    written += copy.length;
  }
  db.close();
  return invocationIds;
}

/** The invocation an event belongs to: its own stream's, or the one a hold names; undefined for set-up events. */
function invocationOf(event: RecordedEvent): string | undefined {
  if (event.streamName.startsWith(INVOCATION_PREFIX)) return event.streamName.slice(INVOCATION_PREFIX.length);
  if (event.type === 'HoldPlaced' || event.type === 'HoldSettled') return (event.data as { invocationId: string }).invocationId;
  return undefined;
}

/** True when both stores hold the same documents and checkpoints for every projection. */
function sameReadModels(actual: SqliteReadModelStore, expected: SqliteReadModelStore): boolean {
  return compareReadModels({ actual, expected, projections: ALL_PROJECTIONS.map((projection) => projection.name) }).equal;
}

function latency(samples: Float64Array): { p50Ms: number; p99Ms: number; maxMs: number } {
  samples.sort();
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { p50Ms: round(at(0.5), 4), p99Ms: round(at(0.99), 4), maxMs: round(at(1), 3) };
}

function round(value: number, digits = 3): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export async function run(): Promise<ReadSideReport> {
  const loadAverage1mAtStart = round(loadavg()[0]!, 2);
  const target = Number(process.env.BENCH_EVENTS ?? DEFAULT_EVENTS);
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-read-side-'));
  const logPath = join(directory, 'ledger.sqlite');
  try {
    const sample = await recordLog(SAMPLE_INVOCATIONS);
    const started = performance.now();
    const invocationIds = generateLog(logPath, sample, target);
    const generateSeconds = (performance.now() - started) / 1000;

    const eventStore = openSqliteEventStore({ path: logPath });
    const store = openReadModelStore({ path: readModelPathFor(logPath) });
    const sequentialStore = openReadModelStore({ path: join(directory, 'sequential.read.sqlite') });
    let parallel: Awaited<ReturnType<typeof timed>>;
    let sequential: Awaited<ReturnType<typeof timed>>;
    let rebuildsEqual: boolean;
    try {
      // As the CLI derives them (its own rebuild derives the same again, inside the timing).
      const groups = rebuildGroups({ logPath, projections: ALL_PROJECTIONS });
      parallel = await timed(groups, () =>
        rebuildProjectionsInParallel({
          eventStore,
          logPath,
          store,
          projections: ALL_PROJECTIONS,
          projectionsModule: ALL_PROJECTIONS_MODULE,
        }),
      );
      sequential = await timed([ALL_PROJECTIONS.map((projection) => projection.name)], () =>
        rebuildProjections({ eventStore, store: sequentialStore, projections: ALL_PROJECTIONS }),
      );
      rebuildsEqual = sameReadModels(store, sequentialStore);
    } finally {
      sequentialStore.close();
      store.close();
      await eventStore.close();
    }

    // A fresh connection, as a restarted service would have: nothing in its page cache yet.
    const reader = openReadModelStore({ path: readModelPathFor(logPath) });
    const readOne = (projection: string, collection: string): Float64Array => {
      const samples = new Float64Array(POINT_READS);
      let state = 42;
      for (let index = 0; index < POINT_READS; index++) {
        state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
        const id = invocationIds[state % invocationIds.length]!;
        const t0 = performance.now();
        const document = reader.get(projection, collection, id);
        samples[index] = performance.now() - t0;
        if (document === undefined) throw new Error(`no ${projection} document for ${id}`);
      }
      return samples;
    };
    const explanationRead = latency(readOne(EXPLANATIONS_PROJECTION, EXPLANATION_COLLECTION));
    const invocationRead = latency(readOne(INVOCATIONS_PROJECTION, INVOCATION_COLLECTION));
    reader.close();

    const report: ReadSideReport = {
      events: parallel.result.events,
      invocations: invocationIds.length,
      generateSeconds: round(generateSeconds, 1),
      rebuild: parallel.figures,
      sequentialRebuild: sequential.figures,
      rebuildsEqual,
      explanationRead,
      invocationRead,
      loadAverage1mAtStart,
    };
    const row = (figures: RebuildFigures) => ({
      events: report.events,
      'events/s': figures.eventsPerSecond,
      'events per CPU-s': figures.eventsPerCpuSecond,
      goal: `≥ ${GOAL_REBUILD_EVENTS_PER_SECOND.toLocaleString('en')}`,
    });
    console.table({
      [`rebuild of ${ALL_PROJECTIONS.length} projections, ${report.rebuild.groups.length} worker threads (CLI)`]: row(report.rebuild),
      [`rebuild of ${ALL_PROJECTIONS.length} projections, one thread`]: row(report.sequentialRebuild),
    });
    if (!rebuildsEqual) throw new Error('The parallel and the sequential rebuild wrote different read models');
    console.table({
      'explanation read': { ...explanationRead, goal: `p99 ≤ ${GOAL_READ_P99_MS} ms` },
      'invocation read': { ...invocationRead, goal: '' },
    });
    console.log(
      `${report.invocations} invocations; generated in ${report.generateSeconds} s; load average ${loadAverage1mAtStart} at start; ` +
        `worker groups ${report.rebuild.groups.map((group) => group.join('+')).join(' | ')}; both rebuilds equal`,
    );
    return report;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
