/**
 * What a Message Batch costs the gateway (docs/gateway.md "Message Batches"): creating a batch of
 * BENCH_BATCH_REQUESTS (10,000) requests through GatewayBatches on the SQLite store (the body read
 * and checked, each request's hold at batch rates, the batch recorded in chunks, one PlaceHold, the
 * upstream's create), then settling it from a results file of as many succeeded lines; each timed,
 * with the events it wrote and the heap it grew by at its peak. Upstream is an in-process stand-in
 * that answers at once: what is measured is the service's own work.
 *
 * For comparison, the alternative the design turned down: one invocation per request, as a gateway
 * call is one (admitted, held, reserved, dispatched, then settled and its hold settled), for
 * BENCH_INVOCATIONS requests one after another (each hold its own decision).
 *
 * Run alone: `npx tsc -p tsconfig.build.json && node --expose-gc dist/bench/gateway-batches.bench.js`.
 */
import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountDecider } from '../src/accounts/account.decider';
import { accountStreamName } from '../src/accounts/account.events';
import { AggregateRepository } from '../src/aggregates/aggregate.repository';
import { openSqliteEventStore } from '../src/event-store/sqlite/sqlite-event-store';
import type { EventStore } from '../src/event-store/event-store.port';
import type { BatchUpstream, UpstreamBatchObject, UpstreamBatchPage } from '../src/gateway/batches/batch-upstream';
import { GatewayBatches } from '../src/gateway/batches/gateway-batches.service';
import { GatewayAdmin } from '../src/gateway/gateway-admin.service';
import type { MessagesBodyFacts } from '../src/gateway/gateway-call.port';
import { GatewayCalls } from '../src/gateway/gateway-calls.service';
import { systemClock } from '../src/runtime/clock';

const ORG = 'bench-batches';
const MODEL = 'claude-bench';
const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300, batchBasisPoints: 5_000 };
/** Heap samples while a step runs, in ms. */
const HEAP_SAMPLE_MS = 5;

const envNumber = (name: string, fallback: number): number => (process.env[name] === undefined ? fallback : Number(process.env[name]));

/** Upstream answering at once: a batch in progress, ended when settled, its results all succeeded. */
class InstantUpstream implements BatchUpstream {
  private requests = 0;

  create(requests: readonly unknown[]): Promise<UpstreamBatchObject> {
    this.requests = requests.length;
    return Promise.resolve(this.object('in_progress'));
  }

  retrieve(): Promise<UpstreamBatchObject> {
    return Promise.resolve(this.object('ended'));
  }

  cancel(): Promise<UpstreamBatchObject> {
    return Promise.resolve(this.object('canceling'));
  }

  delete(): Promise<void> {
    return Promise.resolve();
  }

  list(): Promise<UpstreamBatchPage> {
    return Promise.resolve({ data: [this.object('in_progress')], hasMore: false, lastId: 'msgbatch_upstream' });
  }

  async *results(): AsyncIterable<unknown> {
    for (let index = 0; index < this.requests; index++) {
      yield { custom_id: `req-${index}`, result: { type: 'succeeded', message: { usage: { input_tokens: 120, output_tokens: 40, service_tier: 'batch' } } } };
    }
  }

  private object(status: UpstreamBatchObject['processing_status']): UpstreamBatchObject {
    const counts = { processing: status === 'ended' ? 0 : this.requests, succeeded: status === 'ended' ? this.requests : 0, errored: 0, canceled: 0, expired: 0 };
    const at = new Date().toISOString();
    return { id: 'msgbatch_upstream', type: 'message_batch', processing_status: status, request_counts: counts, ended_at: null, created_at: at, expires_at: at, archived_at: null, cancel_initiated_at: null, results_url: null };
  }
}

/** Time, events written and peak heap growth of one step. */
async function measure<T>(store: EventStore, step: () => Promise<T>): Promise<{ readonly value: T; readonly ms: number; readonly events: number; readonly peakHeapMiB: number }> {
  (globalThis as { gc?: () => void }).gc?.();
  const head = (await store.headPosition()) ?? 0n;
  const baseline = process.memoryUsage().heapUsed;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), HEAP_SAMPLE_MS);
  const started = performance.now();
  const value = await step();
  const ms = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().heapUsed);
  const events = Number(((await store.headPosition()) ?? 0n) - head);
  return { value, ms: Math.round(ms), events, peakHeapMiB: Math.round(((peak - baseline) / 1_048_576) * 10) / 10 };
}

function batchBody(requests: number): Buffer {
  const lines = Array.from({ length: requests }, (_, index) => ({
    custom_id: `req-${index}`,
    params: { model: MODEL, max_tokens: 1_024, messages: [{ role: 'user', content: `Summarise ticket ${index}: the customer reports that the export stops at 10,000 rows.` }] },
  }));
  return Buffer.from(JSON.stringify({ requests: lines }));
}

export async function run(): Promise<unknown> {
  const requests = envNumber('BENCH_BATCH_REQUESTS', 10_000);
  const invocations = envNumber('BENCH_INVOCATIONS', 2_000);
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-bench-batches-'));
  const store = openSqliteEventStore({ path: join(directory, 'ledger.sqlite') });
  try {
    const repository = new AggregateRepository(store);
    const admin = new GatewayAdmin(repository, systemClock);
    const calls = new GatewayCalls(repository, systemClock);
    const batches = new GatewayBatches(repository, systemClock, calls, { name: 'bench', configured: true, batches: new InstantUpstream() });
    await repository.handle(accountStreamName(ORG), accountDecider, { type: 'GrantCredits', data: { credits: 1_000_000_000_000, reason: 'bench', idempotencyKey: 'g', grantedAt: new Date().toISOString() } });
    await repository.handle(accountStreamName(ORG), accountDecider, { type: 'ChangeSettings', data: { maxRunning: 1_000, changedAt: new Date().toISOString() } });
    await admin.priceModel(MODEL, { prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true });
    const { key } = await admin.issueKey(ORG, { name: 'bench' });
    const body = batchBody(requests);
    const created = await measure(store, () => batches.create(key, body));
    if (!created.value.ok) throw new Error(`create refused: ${created.value.message}`);
    const batchId = created.value.value.batchId;
    const settled = await measure(store, () => batches.settle(batchId));
    const facts: MessagesBodyFacts = { bodyBytes: Math.round(body.length / requests), model: MODEL, maxTokens: 1_024, stream: false, imageBlocks: 0, documentBlocks: 0, webSearchMaxUses: [], webFetches: [], codeExecutionTools: [], mcpServers: 0, definedTools: 0 };
    const perInvocation = await measure(store, async () => {
      for (let index = 0; index < invocations; index++) {
        const admission = await calls.admit({ presentedKey: key, facts, requestId: `r-${index}` });
        if (!admission.admitted) throw new Error(`refused: ${admission.message}`);
        await calls.settle(admission, { startedAtMs: Date.now(), durationMs: 1, classification: 'ok', timedOut: false, callerDisconnected: false, usage: { inputTokens: 120, outputTokens: 40, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 } });
      }
    });
    const result = {
      requests,
      bodyMiB: Math.round((body.length / 1_048_576) * 10) / 10,
      create: { ms: created.ms, events: created.events, peakHeapMiB: created.peakHeapMiB },
      settle: { ms: settled.ms, events: settled.events, peakHeapMiB: settled.peakHeapMiB },
      oneInvocationPerRequest: { invocations, ms: perInvocation.ms, events: perInvocation.events, msPer10k: Math.round((perInvocation.ms * 10_000) / invocations), eventsPer10k: Math.round((perInvocation.events * 10_000) / invocations) },
    };
    console.table({ create: result.create, settle: result.settle, [`${invocations} invocations`]: { ms: perInvocation.ms, events: perInvocation.events, peakHeapMiB: perInvocation.peakHeapMiB } });
    return result;
  } finally {
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

if (require.main === module) {
  run().then(
    (result) => console.log(JSON.stringify(result)),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
