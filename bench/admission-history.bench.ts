/**
 * History-independent admission (issue 7): the latency of admitting and settling an invocation for an
 * organization whose account stream already holds 1,000 prior events, against one holding 1,000,000.
 * Goal: warm admission at 1,000,000 ≤ 1.2× warm admission at 1,000.
 *
 * For each history size, the account stream is filled through the store (valid HoldPlaced/HoldSettled
 * pairs after one grant, MAX_EVENTS_PER_APPEND events per append, many appends per group commit, and
 * the snapshots the service would have written), then the service starts on that log (its projection
 * runner catches up first) and measures:
 * - cold: the first RunOperation of that organization, when nothing of its account is cached — the
 *   load starts from the latest snapshot; and the same load without snapshots (folding from revision 0);
 * - warm: RunOperation one at a time (zero-latency scripted provider, 1 turn), p50/p99;
 * - warm PlaceHold + SettleHold alone through the AggregateRepository, p50/p99: admission and
 *   settlement without the invocation stream and the conversation around them.
 * The histories take turns in chunks, so the neighbours' load on a shared machine hits both alike.
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node dist/bench/admission-history.bench.js`
 * (BENCH_HISTORIES=1000,1000000, BENCH_ADMISSIONS).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { NestFactory } from '@nestjs/core';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountDecider } from '../src/accounts/account.decider';
import { accountStreamName, type AccountEvent } from '../src/accounts/account.events';
import { crossesSnapshotPoint, snapshotEvent, snapshotStreamName } from '../src/aggregates/aggregate-snapshots';
import { AggregateRepository } from '../src/aggregates/aggregate.repository';
import { AppModule } from '../src/composition/app.module';
import { PublishOperationCommand } from '../src/catalog/publish-operation.command';
import { newEventId } from '../src/event-store/event-id.generator';
import { MAX_EVENTS_PER_APPEND } from '../src/event-store/event-store-input.validation';
import { EVENT_STORE, type NewEvent } from '../src/event-store/event-store.port';
import { openSqliteEventStore } from '../src/event-store/sqlite/sqlite-event-store';
import { LedgerFeaturesModule } from '../src/features/ledger-features.module';
import type { OperationFeature } from '../src/features/operation-feature';
import { RunOperationCommand } from '../src/invocations/run-operation.command';
import { ScriptedProvider, scriptedToolUse } from '../src/runtime';

const OPERATION_ID = 'bench.admission';
const ORGANIZATION_ID = 'org-history';
/** Credits of the one grant: enough for every prior hold and every measured one. */
const GRANT_CREDITS = 1_000_000_000_000;
const HOLD_CREDITS = 100;
/** Appends handed to the store at once while filling the history, so they share group commits. */
const FILL_APPENDS_IN_FLIGHT = 64;
const DEFAULT_HISTORIES = [1_000, 1_000_000];
const DEFAULT_ADMISSIONS = 2_000;
/** Measured admissions preceded by this many unmeasured ones per history (JIT, caches). */
const WARMUP_ADMISSIONS = 300;
/** Admissions measured on one history before the next takes its turn. */
const INTERLEAVED_CHUNK = 100;

const ANSWER_SCHEMA = { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] };

export const feature: OperationFeature = {
  operationId: OPERATION_ID,
  prepare: () => ({
    system: [],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'question' }] }],
    tools: [],
    answerTool: { name: 'submit_answer', description: 'Answers.', inputSchema: ANSWER_SCHEMA, judge: () => ({ accepted: true }) },
  }),
  scriptedModel: () =>
    new ScriptedProvider(
      [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 1 } }], { usage: { inputTokens: 10, outputTokens: 2, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 } })],
      { recordRequests: false },
    ),
};

export interface Latency {
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface AdmissionHistoryRow {
  readonly priorEvents: number;
  readonly fillSeconds: number;
  /** From opening the service to serving (the projection runner's catch-up over the history included). */
  readonly startSeconds: number;
  /** The first RunOperation of the organization after start: its account loaded from its latest snapshot. */
  readonly coldRunMs: number;
  /** The same cold load without snapshots: the whole account stream folded from revision 0. */
  readonly coldFoldWithoutSnapshotMs: number;
  readonly run: Latency;
  readonly placeAndSettleHold: Latency;
}

export interface AdmissionHistoryReport {
  readonly rows: readonly AdmissionHistoryRow[];
  /** Warm p50 at the largest history over warm p50 at the smallest (goal ≤ 1.2). */
  readonly runRatio: number;
  readonly holdRatio: number;
  readonly loadAverage1mAtStart: number;
}

/** Fills the account stream with one grant and then placed/settled hold pairs, `events` in all. */
export async function fillHistory(logPath: string, events: number): Promise<void> {
  const store = openSqliteEventStore({ path: logPath });
  try {
    const stream = accountStreamName(ORGANIZATION_ID);
    const at = new Date().toISOString();
    const metadata = { schemaVersion: 1 };
    const eventAt = (index: number): NewEvent => {
      if (index === 0) {
        return { id: newEventId(), type: 'CreditsGranted', data: { credits: GRANT_CREDITS, reason: 'bench', idempotencyKey: 'bench-grant', grantedAt: at }, metadata };
      }
      const invocationId = `prior-${(index - 1) >> 1}`;
      return index % 2 === 1
        ? { id: newEventId(), type: 'HoldPlaced', data: { invocationId, credits: HOLD_CREDITS, placedAt: at }, metadata }
        : { id: newEventId(), type: 'HoldSettled', data: { invocationId, heldCredits: HOLD_CREDITS, chargedCredits: 7, settledAt: at }, metadata };
    };
    // The snapshots the service would have written along the way (see account.snapshot.ts).
    const codec = accountDecider.snapshot;
    let state = accountDecider.initialState();
    let pending: Promise<unknown>[] = [];
    for (let start = 0; start < events; start += MAX_EVENTS_PER_APPEND) {
      const batch = Array.from({ length: Math.min(MAX_EVENTS_PER_APPEND, events - start) }, (_, offset) => eventAt(start + offset));
      // 'any': appends queued together land in order within one group commit.
      pending.push(store.append(stream, batch, { expectedRevision: 'any' }));
      for (let offset = 0; offset < batch.length; offset++) {
        state = accountDecider.evolve(state, batch[offset] as AccountEvent);
        const revision = BigInt(start + offset);
        if (crossesSnapshotPoint(revision === 0n ? undefined : revision - 1n, revision, codec.everyEvents)) {
          pending.push(store.append(snapshotStreamName(stream), [snapshotEvent(codec, state, revision)], { expectedRevision: 'any' }));
        }
      }
      if (pending.length >= FILL_APPENDS_IN_FLIGHT) {
        await Promise.all(pending);
        pending = [];
      }
    }
    await Promise.all(pending);
  } finally {
    await store.close();
  }
}

function latencyOf(samples: number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50Ms: round(at(0.5)), p99Ms: round(at(0.99)) };
}

/** A started service over a prepared history, ready to be measured. */
interface Prepared {
  readonly priorEvents: number;
  readonly fillSeconds: number;
  readonly startSeconds: number;
  readonly coldRunMs: number;
  readonly coldFoldWithoutSnapshotMs: number;
  readonly runOnce: () => Promise<number>;
  readonly holdAndSettle: (index: number) => Promise<number>;
  readonly runs: number[];
  readonly holds: number[];
  close(): Promise<void>;
}

async function prepare(priorEvents: number): Promise<Prepared> {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-history-'));
  const logPath = join(directory, 'ledger.sqlite');
  let started = performance.now();
  await fillHistory(logPath, priorEvents);
  const fillSeconds = (performance.now() - started) / 1000;

  @Module({ imports: [LedgerFeaturesModule.register(feature)] })
  class BenchFeatureModule {}
  started = performance.now();
  const app = await NestFactory.createApplicationContext(
    AppModule.forRoot({ env: { LEDGER_STORE: `sqlite:${logPath}` }, imports: [BenchFeatureModule] }),
    { logger: false },
  );
  const startSeconds = (performance.now() - started) / 1000;
  const bus = app.get(CommandBus);
  const repository = app.get(AggregateRepository);
  const stream = accountStreamName(ORGANIZATION_ID);
  await bus.execute(
    new PublishOperationCommand(OPERATION_ID, {
      routing: { provider: 'scripted', model: 'bench-model' },
      limits: { maxTurns: 2, maxToolCalls: 2, totalTimeMs: 60_000, attemptTimeoutMs: 10_000, maxOutputTokens: 256, maxAttemptsPerTurn: 1 },
      prices: { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 },
      creditHold: HOLD_CREDITS,
      enabled: true,
    }),
  );
  const runOnce = async (): Promise<number> => {
    const t0 = performance.now();
    const result = await bus.execute(new RunOperationCommand({ operationId: OPERATION_ID, organizationId: ORGANIZATION_ID, input: {} }));
    if (result.state !== 'settled') throw new Error(`unexpected result ${JSON.stringify(result)}`);
    return performance.now() - t0;
  };
  const holdAndSettle = async (index: number): Promise<number> => {
    const invocationId = `bench-hold-${index}`;
    const at = new Date().toISOString();
    const t0 = performance.now();
    await repository.handle(stream, accountDecider, { type: 'PlaceHold', data: { invocationId, credits: HOLD_CREDITS, placedAt: at } });
    await repository.handle(stream, accountDecider, { type: 'SettleHold', data: { invocationId, chargeCredits: 7, settledAt: at } });
    return performance.now() - t0;
  };
  // Cold: nothing of the account is cached yet, so this load starts from its latest snapshot.
  const coldRunMs = round(await runOnce());
  // What the same cold load costs without snapshots: the whole stream folded from revision 0.
  started = performance.now();
  await new AggregateRepository(app.get(EVENT_STORE)).load(stream, { ...accountDecider, snapshot: undefined });
  const coldFoldWithoutSnapshotMs = round(performance.now() - started);
  return {
    priorEvents,
    fillSeconds: round(fillSeconds),
    startSeconds: round(startSeconds),
    coldRunMs,
    coldFoldWithoutSnapshotMs,
    runOnce,
    holdAndSettle,
    runs: [],
    holds: [],
    async close() {
      await app.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export async function run(): Promise<AdmissionHistoryReport> {
  const loadAverage1mAtStart = round(loadavg()[0]!);
  const histories = (process.env.BENCH_HISTORIES?.split(',').map(Number) ?? DEFAULT_HISTORIES).sort((a, b) => a - b);
  const admissions = Number(process.env.BENCH_ADMISSIONS ?? DEFAULT_ADMISSIONS);
  const prepared: Prepared[] = [];
  try {
    for (const priorEvents of histories) prepared.push(await prepare(priorEvents));
    for (const side of prepared) {
      for (let index = 0; index < WARMUP_ADMISSIONS; index++) {
        await side.runOnce();
        await side.holdAndSettle(-1 - index);
      }
    }
    // The histories take turns chunk by chunk, so a change in the neighbours' load hits both alike.
    let holdIndex = 0;
    for (let done = 0; done < admissions; done += INTERLEAVED_CHUNK) {
      for (const side of prepared) {
        for (let index = 0; index < INTERLEAVED_CHUNK; index++) side.runs.push(await side.runOnce());
        for (let index = 0; index < INTERLEAVED_CHUNK; index++) side.holds.push(await side.holdAndSettle(holdIndex++));
      }
    }
  } finally {
    for (const side of prepared) await side.close();
  }
  const rows: AdmissionHistoryRow[] = prepared.map((side) => ({
    priorEvents: side.priorEvents,
    fillSeconds: side.fillSeconds,
    startSeconds: side.startSeconds,
    coldRunMs: side.coldRunMs,
    coldFoldWithoutSnapshotMs: side.coldFoldWithoutSnapshotMs,
    run: latencyOf(side.runs),
    placeAndSettleHold: latencyOf(side.holds),
  }));
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  const report: AdmissionHistoryReport = {
    rows,
    runRatio: round(last.run.p50Ms / first.run.p50Ms),
    holdRatio: round(last.placeAndSettleHold.p50Ms / first.placeAndSettleHold.p50Ms),
    loadAverage1mAtStart,
  };
  console.table(
    rows.map((row) => ({
      'prior account events': row.priorEvents,
      'fill s': row.fillSeconds,
      'start s (catch-up)': row.startSeconds,
      'cold first run ms': row.coldRunMs,
      'cold fold, no snapshot ms': row.coldFoldWithoutSnapshotMs,
      'run p50 ms': row.run.p50Ms,
      'run p99 ms': row.run.p99Ms,
      'hold+settle p50 ms': row.placeAndSettleHold.p50Ms,
      'hold+settle p99 ms': row.placeAndSettleHold.p99Ms,
    })),
  );
  console.log(
    `warm p50 at ${last.priorEvents} over ${first.priorEvents} prior events: run ${report.runRatio}×, hold+settle ${report.holdRatio}× (goal ≤ 1.2×); ` +
      `load average ${loadAverage1mAtStart} at start`,
  );
  return report;
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
