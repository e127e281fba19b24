/**
 * Fully-accounted invocations per second through RunOperationCommand on the embedded store (issue 7):
 * every lifecycle transition and every attempt durably in the log (WAL, synchronous=FULL, the default), a
 * scripted provider, conversations of 3 turns with 2 tool calls, 100 organizations, the projections
 * following live in the same process, a fixed number of invocations in flight.
 *
 * Reported in one run:
 * - invocations/s at 64 in flight with zero provider latency, by the wall clock and per CPU-second of
 *   this process (the machine is shared: the CPU figure moves far less with the neighbours' load);
 * - p50/p99 accounting overhead (time outside the provider) at 50 ms latency and 1,000 in flight, and
 *   at 50 ms and 64 in flight (below saturation, so what is left is the accounting path itself);
 * - the raw limit: the very events of the zero-latency run inserted by bare better-sqlite3 into the
 *   same schema with the same pragmas and in as many transactions as the run committed, and the ratio;
 * - peak RSS of the process during each measured run (sampled every RSS_SAMPLE_INTERVAL_MS);
 * - what FULL costs: the zero-latency run and the 64-in-flight latent run again with synchronous=NORMAL
 *   (the opt-in), right after their FULL runs, and FULL over NORMAL as ratios.
 * Each measured run ends when the read models have caught up with the log, not only when the last
 * invocation settled. The projections run where the service runs them (a worker thread by default;
 * LEDGER_PROJECTIONS_THREAD=main puts them on the event loop).
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node dist/bench/full-path.bench.js`
 * (BENCH_INVOCATIONS, BENCH_LATENT_INVOCATIONS, BENCH_WARMUP_INVOCATIONS).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChangeOrganizationSettingsCommand, GrantCreditsCommand } from '../src/accounts/account-commands';
import { AppModule } from '../src/composition/app.module';
import { PublishOperationCommand } from '../src/catalog/publish-operation.command';
import { EVENT_STORE, type RecordedEvent } from '../src/event-store/event-store.port';
import { migrateSqliteSchema } from '../src/event-store/sqlite/sqlite-schema.migrations';
import { SQLITE_BUSY_TIMEOUT_MS, SqliteEventStore, WAL_AUTOCHECKPOINT_PAGES } from '../src/event-store/sqlite/sqlite-event-store';
import { DEFAULT_LOG_SYNCHRONOUS, type SqliteSynchronous } from '../src/event-store/sqlite/sqlite-synchronous';
import { LedgerFeaturesModule } from '../src/features/ledger-features.module';
import type { OperationFeature } from '../src/features/operation-feature';
import { RunOperationCommand } from '../src/invocations/run-operation.command';
import { LiveProjections } from '../src/projection-runner';
import { ProjectionWorkerHost } from '../src/projection-runner/worker/projection-worker.host';
import { appendTimingChannel, invocationOverheadChannel, type AppendTiming, type InvocationOverheadTiming } from '../src/domain/timing.channels';
import { ScriptedProvider, scriptedToolUse, type ScriptedStep } from '../src/runtime';

const OPERATION_ID = 'bench.three-turns';
const ORGANIZATIONS = 100;
const TURNS = 3;
const USAGE = { inputTokens: 120, outputTokens: 20, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 };
/** Invocations run before measuring, so JIT, schema compilation and caches are warm on both sides. */
const DEFAULT_WARMUP_INVOCATIONS = 500;
/** Events read back per page when collecting the run's events for the raw replay. */
const READ_BACK_PAGE_EVENTS = 10_000;
/** How often the resident set is sampled during a measured run, in milliseconds. */
const RSS_SAMPLE_INTERVAL_MS = 50;

function threeTurns(latencyMs: number): ScriptedStep[] {
  const wait = latencyMs > 0 ? () => new Promise<void>((resolve) => setTimeout(resolve, latencyMs)) : undefined;
  const step = (reply: ReturnType<typeof scriptedToolUse>): ScriptedStep => (wait ? async () => (await wait(), reply) : reply);
  return [
    step(scriptedToolUse([{ id: 't1', name: 'lookup', input: { q: 'a' } }], { usage: USAGE })),
    step(scriptedToolUse([{ id: 't2', name: 'lookup', input: { q: 'b' } }], { usage: USAGE })),
    step(scriptedToolUse([{ id: 't3', name: 'submit_answer', input: { value: 42 } }], { usage: USAGE })),
  ];
}

function benchFeature(latencyMs: number): OperationFeature {
  return {
    operationId: OPERATION_ID,
    prepare: () => ({
      system: [{ type: 'text', text: 'Answer with submit_answer.', stable: true }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'question' }] }],
      tools: [{ name: 'lookup', description: 'Looks up.', inputSchema: LOOKUP_SCHEMA, effect: 'read', handler: () => '42' }],
      answerTool: { name: 'submit_answer', description: 'Answers.', inputSchema: ANSWER_SCHEMA, judge: () => ({ accepted: true }) },
    }),
    scriptedModel: () => new ScriptedProvider(threeTurns(latencyMs), { recordRequests: false }),
  };
}
const LOOKUP_SCHEMA = { type: 'object', properties: { q: { type: 'string' } } };
const ANSWER_SCHEMA = { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] };

/** What the store committed during the measured run: the shape the raw replay copies. */
export interface CommitShape {
  readonly events: number;
  readonly appends: number;
  readonly transactions: number;
}

/**
 * Where the accounting overhead goes (from the timings the core publishes on its diagnostics
 * channels): the appends' waits for their commits, and the overhead the runtime itself measures
 * (time outside the provider and the tools, from admission to settlement).
 */
export interface OverheadPhases {
  readonly appendsPerInvocation: number;
  /** One append, from the call to its commit's acknowledgement, in ms. */
  readonly appendP50Ms: number;
  readonly appendP99Ms: number;
  /** All of an invocation's appends together, on average, in ms. */
  readonly appendMsPerInvocation: number;
  /** The runtime's own overhead measure (invocation-overhead channel), in ms. */
  readonly runtimeOverheadP50Ms: number;
  readonly runtimeOverheadP99Ms: number;
}

export interface FullPathResult {
  readonly invocations: number;
  readonly inFlight: number;
  readonly providerLatencyMs: number;
  readonly seconds: number;
  readonly invocationsPerSecond: number;
  /** CPU time of this process (user + system, all threads) over the measured run, in seconds. */
  readonly cpuSeconds: number;
  readonly invocationsPerCpuSecond: number;
  readonly overheadP50Ms: number;
  readonly overheadP99Ms: number;
  /** Peak resident set of the process during the measured run (sampled), in MiB. */
  readonly peakRssMiB: number;
  /** Where the projections ran (see LEDGER_PROJECTIONS_THREAD). */
  readonly projectionsThread: 'worker' | 'main';
  /** How the log committed (LEDGER_SQLITE_SYNCHRONOUS). */
  readonly synchronous: SqliteSynchronous;
  /**
   * How far the read models were behind the log when the last invocation settled, in events, and how
   * long they took to catch up from there, in ms; the measured run (`seconds`) includes that catch-up.
   */
  readonly readModelLagAtEndEvents: number;
  readonly readModelCatchUpMs: number;
  readonly shape: CommitShape;
  readonly phases: OverheadPhases;
}

interface Measured {
  readonly result: FullPathResult;
  /** The events the measured run appended, in log order (only when asked for). */
  readonly events: readonly RecordedEvent[];
}

export interface MeasureOptions {
  readonly invocations: number;
  readonly inFlight: number;
  readonly providerLatencyMs: number;
  readonly warmupInvocations?: number;
  /** Keep the events for the raw replay ('window': the measured run's) or as a sample log ('all'). */
  readonly keepEvents?: 'window' | 'all';
  /** How the log commits; DEFAULT_LOG_SYNCHRONOUS (FULL) unless given. */
  readonly synchronous?: SqliteSynchronous;
}

export async function measure(options: MeasureOptions): Promise<FullPathResult> {
  return (await measureWithEvents(options)).result;
}

async function measureWithEvents(options: MeasureOptions): Promise<Measured> {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-bench-'));
  @Module({ imports: [LedgerFeaturesModule.register(benchFeature(options.providerLatencyMs))] })
  class BenchFeatureModule {}
  const synchronous = options.synchronous ?? DEFAULT_LOG_SYNCHRONOUS;
  const env = { LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}`, LEDGER_SQLITE_SYNCHRONOUS: synchronous, ...projectionsThreadEnv() };
  const app = await NestFactory.createApplicationContext(
    AppModule.forRoot({ env, imports: [BenchFeatureModule] }),
    { logger: false },
  );
  try {
    const bus = app.get(CommandBus);
    const store = app.get<SqliteEventStore>(EVENT_STORE);
    const projections = app.get(LiveProjections);
    await bus.execute(
      new PublishOperationCommand(OPERATION_ID, {
        routing: { provider: 'scripted', model: 'bench-model' },
        limits: { maxTurns: 5, maxToolCalls: 5, totalTimeMs: 60_000, attemptTimeoutMs: 10_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 3 },
        prices: { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 },
        creditHold: 10_000,
        enabled: true,
      }),
    );
    for (let org = 0; org < ORGANIZATIONS; org++) {
      await bus.execute(new GrantCreditsCommand(`org-${org}`, 1_000_000_000, 'bench', 'bench-grant'));
      await bus.execute(new ChangeOrganizationSettingsCommand(`org-${org}`, { maxRunning: options.inFlight }));
    }
    const runInvocations = async (count: number, overheads?: number[]): Promise<void> => {
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < count) {
          const index = next++;
          const t0 = performance.now();
          const result = await bus.execute(
            new RunOperationCommand({ operationId: OPERATION_ID, organizationId: `org-${index % ORGANIZATIONS}`, input: {} }),
          );
          if (result.state !== 'settled' || result.outcome !== 'completed') throw new Error(`unexpected result ${JSON.stringify(result)}`);
          overheads?.push(performance.now() - t0 - TURNS * options.providerLatencyMs);
        }
      };
      await Promise.all(Array.from({ length: Math.min(options.inFlight, count) }, worker));
    };
    await runInvocations(options.warmupInvocations ?? DEFAULT_WARMUP_INVOCATIONS);

    const headBefore = (await store.headPosition()) ?? 0n;
    const statsBefore = store.groupCommitStats;
    const overheads: number[] = [];
    let peakRss = process.memoryUsage.rss();
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), RSS_SAMPLE_INTERVAL_MS);
    const appendMs: number[] = [];
    const runtimeOverheadMs: number[] = [];
    const onAppend = (message: unknown): void => void appendMs.push((message as AppendTiming).durationMs);
    const onOverhead = (message: unknown): void => void runtimeOverheadMs.push((message as InvocationOverheadTiming).overheadMs);
    appendTimingChannel.subscribe(onAppend);
    invocationOverheadChannel.subscribe(onOverhead);
    const cpuAtStart = process.cpuUsage();
    const started = performance.now();
    await runInvocations(options.invocations, overheads);
    appendTimingChannel.unsubscribe(onAppend);
    invocationOverheadChannel.unsubscribe(onOverhead);
    // The run ends when the read models have caught up too: a backlog left to the worker is not free.
    const invocationsDoneAt = performance.now();
    const headAtEnd = (await store.headPosition()) ?? 0n;
    const behind = projections.status().projections.map(({ checkpoint }) => headAtEnd - (checkpoint ?? 0n));
    await projections.caughtUp();
    const seconds = (performance.now() - started) / 1000;
    const catchUpMs = performance.now() - invocationsDoneAt;
    const cpu = process.cpuUsage(cpuAtStart);
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    const statsAfter = store.groupCommitStats;
    const headAfter = (await store.headPosition()) ?? 0n;

    const at = quantiles(overheads);
    const appendAt = quantiles(appendMs);
    const runtimeAt = quantiles(runtimeOverheadMs);
    const result: FullPathResult = {
      invocations: options.invocations,
      inFlight: options.inFlight,
      providerLatencyMs: options.providerLatencyMs,
      seconds: round(seconds),
      invocationsPerSecond: Math.round(options.invocations / seconds),
      cpuSeconds: round(cpuSeconds),
      invocationsPerCpuSecond: Math.round(options.invocations / cpuSeconds),
      overheadP50Ms: round(at(0.5)),
      overheadP99Ms: round(at(0.99)),
      peakRssMiB: Math.round(peakRss / 2 ** 20),
      projectionsThread: projections instanceof ProjectionWorkerHost ? 'worker' : 'main',
      synchronous: store.synchronous,
      readModelLagAtEndEvents: Number(behind.reduce((most, lag) => (lag > most ? lag : most), 0n)),
      readModelCatchUpMs: round(catchUpMs),
      shape: {
        events: Number(headAfter - headBefore),
        appends: statsAfter.appends - statsBefore.appends,
        transactions: statsAfter.transactions - statsBefore.transactions,
      },
      phases: {
        appendsPerInvocation: round(appendMs.length / options.invocations),
        appendP50Ms: round(appendAt(0.5)),
        appendP99Ms: round(appendAt(0.99)),
        appendMsPerInvocation: round(appendMs.reduce((sum, ms) => sum + ms, 0) / options.invocations),
        runtimeOverheadP50Ms: round(runtimeAt(0.5)),
        runtimeOverheadP99Ms: round(runtimeAt(0.99)),
      },
    };
    const kept = options.keepEvents === undefined ? [] : await readAfter(store, options.keepEvents === 'all' ? 0n : headBefore);
    return { result, events: kept };
  } finally {
    await app.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The q-quantile (0..1) of `values`, sorting them once (0 for none). */
function quantiles(values: number[]): (q: number) => number {
  values.sort((a, b) => a - b);
  return (q) => (values.length === 0 ? 0 : values[Math.min(values.length - 1, Math.floor(q * values.length))]!);
}

/** `LEDGER_PROJECTIONS_THREAD=main npm run bench -- full-path` measures the projections on the event loop. */
function projectionsThreadEnv(): Record<string, string> {
  const thread = process.env.LEDGER_PROJECTIONS_THREAD;
  return thread === undefined ? {} : { LEDGER_PROJECTIONS_THREAD: thread };
}

async function readAfter(store: SqliteEventStore, after: bigint): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for (let from = after; ; ) {
    const page = await store.readAll({ after: from, maxCount: READ_BACK_PAGE_EVENTS });
    if (page.length === 0) return events;
    events.push(...page);
    from = page[page.length - 1]!.position;
  }
}

/**
 * The whole log of a real run (publication, grants, settings, then `invocations` invocations in the
 * benchmark's shape): a sample other benchmarks replicate into large logs of real events.
 */
export async function recordLog(invocations: number): Promise<readonly RecordedEvent[]> {
  return (await measureWithEvents({ invocations, inFlight: 64, providerLatencyMs: 0, warmupInvocations: 0, keepEvents: 'all' })).events;
}

export interface RawLimit {
  readonly events: number;
  readonly transactions: number;
  readonly seconds: number;
  readonly eventsPerSecond: number;
  readonly eventsPerCpuSecond: number;
}

/**
 * The same events inserted by bare better-sqlite3: the store's schema and pragmas, the same number of
 * transactions (events split evenly among them, in log order), JSON serialised per event as the store
 * does, and nothing else (no validation, no revision check, no savepoint, no promise).
 */
export function rawLimit(events: readonly RecordedEvent[], transactions: number, synchronous: SqliteSynchronous = DEFAULT_LOG_SYNCHRONOUS): RawLimit {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-raw-'));
  const db = new Database(join(directory, 'raw.sqlite'), { timeout: SQLITE_BUSY_TIMEOUT_MS });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    db.pragma('temp_store = MEMORY');
    migrateSqliteSchema(db);
    const begin = db.prepare('BEGIN IMMEDIATE');
    const commit = db.prepare('COMMIT');
    const insert = db.prepare(
      `INSERT INTO events (stream_name, revision, event_id, type, data, metadata, recorded_at_ms, batch_expected_revision)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const perTransaction = Math.max(1, Math.ceil(events.length / Math.max(1, transactions)));
    const cpuAtStart = process.cpuUsage();
    const started = performance.now();
    let committed = 0;
    for (let start = 0; start < events.length; start += perTransaction) {
      const now = Date.now();
      begin.run();
      for (const event of events.slice(start, start + perTransaction)) {
        insert.run(
          event.streamName,
          event.revision,
          event.id,
          event.type,
          JSON.stringify(event.data),
          JSON.stringify(event.metadata),
          now,
          event.revision === 0n ? 'no_stream' : null,
        );
      }
      commit.run();
      committed++;
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuAtStart);
    return {
      events: events.length,
      transactions: committed,
      seconds: round(seconds),
      eventsPerSecond: Math.round(events.length / seconds),
      eventsPerCpuSecond: Math.round(events.length / ((cpu.user + cpu.system) / 1e6)),
    };
  } finally {
    db.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** The zero-latency run, and the same events inserted by bare better-sqlite3 right after it. */
async function zeroLatencyAndRaw(invocations: number, warmupInvocations: number): Promise<{ zeroLatency: FullPathResult; raw: RawLimit }> {
  const zero = await measureWithEvents({ invocations, inFlight: 64, providerLatencyMs: 0, warmupInvocations, keepEvents: 'window' });
  return { zeroLatency: zero.result, raw: rawLimit(zero.events, zero.result.shape.transactions, zero.result.synchronous) };
}

/** How late three 50 ms timers in a row end, with nothing else running: the floor under "overhead". */
export interface TimerFloor {
  readonly inFlight: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/**
 * The latent runs' closed loop with no accounting at all: each "invocation" is only the provider's
 * TURNS waits. Whatever it measures above TURNS × latency is timer and scheduling lateness of this
 * machine, which the latent runs' overhead includes too.
 */
async function timerFloor(invocations: number, inFlight: number, latencyMs: number): Promise<TimerFloor> {
  const late: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < invocations) {
      next++;
      const t0 = performance.now();
      for (let turn = 0; turn < TURNS; turn++) await new Promise<void>((resolve) => setTimeout(resolve, latencyMs));
      late.push(performance.now() - t0 - TURNS * latencyMs);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, invocations) }, worker));
  late.sort((a, b) => a - b);
  const at = (q: number) => late[Math.min(late.length - 1, Math.floor(q * late.length))]!;
  return { inFlight, p50Ms: round(at(0.5)), p99Ms: round(at(0.99)) };
}

export interface FullPathReport {
  readonly loadAverage1mAtStart: number;
  readonly loadAverage1mAtEnd: number;
  readonly zeroLatency: FullPathResult;
  readonly raw: RawLimit;
  /** Full-path events per second over the raw limit's, by the wall clock and per CPU-second. */
  readonly fullPathOverRaw: { readonly wall: number; readonly cpu: number };
  readonly latent1000: FullPathResult;
  readonly latent64: FullPathResult;
  /** The same closed loops with nothing but the provider's three waits: what timers alone add. */
  readonly timerFloor64: TimerFloor;
  readonly timerFloor1000: TimerFloor;
  /** The highest of the measured runs' peaks (the raw replay's copy of the events not included). */
  readonly peakRssMiB: number;
  /** The zero-latency and 64-in-flight runs again with synchronous=NORMAL, and FULL over NORMAL. */
  readonly durability: DurabilityCost;
}

/** What synchronous=FULL costs over NORMAL, measured in the same run. */
export interface DurabilityCost {
  readonly zeroLatencyNormal: FullPathResult;
  readonly latent64Normal: FullPathResult;
  /** FULL's figure over NORMAL's: below 1 for rates, above 1 for costs. */
  readonly fullOverNormal: {
    readonly invocationsPerSecond: number;
    readonly invocationsPerCpuSecond: number;
    readonly latent64OverheadP50: number;
    readonly latent64OverheadP99: number;
  };
}

export async function run(): Promise<FullPathReport> {
  const loadAverage1mAtStart = round(loadavg()[0]!);
  const warmupInvocations = Number(process.env.BENCH_WARMUP_INVOCATIONS ?? DEFAULT_WARMUP_INVOCATIONS);
  const latentInvocations = Number(process.env.BENCH_LATENT_INVOCATIONS ?? 10_000);
  // The latent runs first: the zero-latency run keeps its events for the raw replay, which would
  // otherwise sit in memory during them and inflate their resident set.
  const latent64 = await measure({ invocations: Math.ceil(latentInvocations / 5), inFlight: 64, providerLatencyMs: 50, warmupInvocations });
  const latent64Normal = await measure({ invocations: latent64.invocations, inFlight: 64, providerLatencyMs: 50, warmupInvocations, synchronous: 'NORMAL' });
  const latent1000 = await measure({ invocations: latentInvocations, inFlight: 1_000, providerLatencyMs: 50, warmupInvocations });
  const timerFloor64 = await timerFloor(latent64.invocations, 64, 50);
  const timerFloor1000 = await timerFloor(latent1000.invocations, 1_000, 50);
  const zeroLatencyInvocations = Number(process.env.BENCH_INVOCATIONS ?? 20_000);
  const zeroLatencyNormal = await measure({ invocations: zeroLatencyInvocations, inFlight: 64, providerLatencyMs: 0, warmupInvocations, synchronous: 'NORMAL' });
  const { zeroLatency, raw } = await zeroLatencyAndRaw(zeroLatencyInvocations, warmupInvocations);
  const eventsPerSecond = zeroLatency.shape.events / zeroLatency.seconds;
  const eventsPerCpuSecond = zeroLatency.shape.events / zeroLatency.cpuSeconds;
  const report: FullPathReport = {
    loadAverage1mAtStart,
    loadAverage1mAtEnd: round(loadavg()[0]!),
    zeroLatency,
    raw,
    fullPathOverRaw: { wall: round(eventsPerSecond / raw.eventsPerSecond), cpu: round(eventsPerCpuSecond / raw.eventsPerCpuSecond) },
    latent1000,
    latent64,
    timerFloor64,
    timerFloor1000,
    peakRssMiB: Math.max(zeroLatency.peakRssMiB, latent1000.peakRssMiB, latent64.peakRssMiB),
    durability: {
      zeroLatencyNormal,
      latent64Normal,
      fullOverNormal: {
        invocationsPerSecond: round(zeroLatency.invocationsPerSecond / zeroLatencyNormal.invocationsPerSecond),
        invocationsPerCpuSecond: round(zeroLatency.invocationsPerCpuSecond / zeroLatencyNormal.invocationsPerCpuSecond),
        latent64OverheadP50: round(latent64.overheadP50Ms / latent64Normal.overheadP50Ms),
        latent64OverheadP99: round(latent64.overheadP99Ms / latent64Normal.overheadP99Ms),
      },
    },
  };
  const row = (result: FullPathResult, goal: string) => ({
    'in flight': result.inFlight,
    'latency ms': result.providerLatencyMs,
    invocations: result.invocations,
    'invocations/s': result.invocationsPerSecond,
    'per CPU-s': result.invocationsPerCpuSecond,
    'overhead p50 ms': result.overheadP50Ms,
    'overhead p99 ms': result.overheadP99Ms,
    'events/txn': round(result.shape.events / Math.max(1, result.shape.transactions)),
    'peak RSS MiB': result.peakRssMiB,
    'read-model lag at end': result.readModelLagAtEndEvents,
    goal,
  });
  console.table({
    'zero latency': row(zeroLatency, '≥ 2,000 invocations/s'),
    '50 ms, 1,000 in flight': row(latent1000, 'overhead p99 ≤ 2 ms'),
    '50 ms, 64 in flight': row(latent64, '(below saturation)'),
    'zero latency, NORMAL': row(zeroLatencyNormal, '(synchronous=NORMAL)'),
    '50 ms, 64 in flight, NORMAL': row(latent64Normal, '(synchronous=NORMAL)'),
  });
  const cost = report.durability.fullOverNormal;
  console.log(
    `synchronous=FULL over NORMAL: invocations/s ×${cost.invocationsPerSecond}, per CPU-s ×${cost.invocationsPerCpuSecond}, ` +
      `64-in-flight overhead p50 ×${cost.latent64OverheadP50}, p99 ×${cost.latent64OverheadP99}`,
  );
  const phases = (result: FullPathResult) => ({
    'appends/invocation': result.phases.appendsPerInvocation,
    'append p50 ms': result.phases.appendP50Ms,
    'append p99 ms': result.phases.appendP99Ms,
    'appends ms/invocation': result.phases.appendMsPerInvocation,
    'runtime overhead p50 ms': result.phases.runtimeOverheadP50Ms,
    'runtime overhead p99 ms': result.phases.runtimeOverheadP99Ms,
  });
  console.table({ '50 ms, 64 in flight': phases(latent64), '50 ms, 1,000 in flight': phases(latent1000) });
  console.table({
    'timers only, 64 in flight': { 'lateness p50 ms': timerFloor64.p50Ms, 'lateness p99 ms': timerFloor64.p99Ms },
    'timers only, 1,000 in flight': { 'lateness p50 ms': timerFloor1000.p50Ms, 'lateness p99 ms': timerFloor1000.p99Ms },
  });
  console.table({
    'full path (zero latency)': {
      events: zeroLatency.shape.events,
      transactions: zeroLatency.shape.transactions,
      'events/s': Math.round(eventsPerSecond),
      'events per CPU-s': Math.round(eventsPerCpuSecond),
    },
    'raw better-sqlite3, same events and transactions': {
      events: raw.events,
      transactions: raw.transactions,
      'events/s': raw.eventsPerSecond,
      'events per CPU-s': raw.eventsPerCpuSecond,
    },
  });
  console.log(
    `full path / raw: ${report.fullPathOverRaw.wall} (wall), ${report.fullPathOverRaw.cpu} (CPU); peak RSS ${report.peakRssMiB} MiB; ` +
      `load average ${loadAverage1mAtStart} at start, ${report.loadAverage1mAtEnd} at end`,
  );
  return report;
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
