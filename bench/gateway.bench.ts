/**
 * The gateway (issue 23): Anthropic's Messages API through llm-ledger (`POST /anthropic/v1/messages`),
 * side by side, in one run on one machine, with the same calls through a bare pass-through proxy (the
 * limit: it forwards the same bytes and accounts for nothing), through the open-source Portkey
 * gateway, and straight to the upstream. One local upstream serves them all (bench/gateway/
 * upstream.child.ts), each peer and the load generator run in processes of their own, and for every
 * scenario (0 and 50 ms per call, streamed and not) the peers are measured one after the other at
 * the same load: 64 closed loops.
 *
 * For each: calls/s, client latency p50/p99 and its overhead over the direct calls at the same load;
 * for streams, what each relayed event's trip adds (timestamped at the upstream, read at the client);
 * each peer's own CPU per call; and llm-ledger's own `ledger_gateway_overhead_seconds` from /metrics.
 *
 * Environment: BENCH_GATEWAY_SECONDS (measured, per peer and scenario; default 10),
 * BENCH_GATEWAY_WARMUP_SECONDS (3), BENCH_GATEWAY_ROUNDS (1: each round measures every scenario again,
 * the peers after the direct calls in an order shifted by one each round), BENCH_GATEWAY_CONCURRENCY (64), BENCH_GATEWAY_DELAYS_MS ("0,50"),
 * BENCH_GATEWAY_DELAY_JITTER_MS (0: each non-zero delay exactly; j: drawn from delay ± j, seeded, the same sequence for every peer),
 * BENCH_GATEWAY_MODES ("json,stream"), BENCH_GATEWAY_STREAM_DELTAS (20), BENCH_GATEWAY_BODY_BYTES (1024),
 * BENCH_GATEWAY_PEERS ("direct,bare,portkey,ledger"; `ledger-pg` adds llm-ledger on a local PostgreSQL log), BENCH_GATEWAY_PROFILE=<dir>: a CPU profile of
 * llm-ledger's main thread over each of its measured runs (`node dist/bench/http/cpu-profile-summary.js`),
 * BENCH_GATEWAY_PHASES=1: each llm-ledger call's phases traced over its measured runs (gateway/phase-trace.ts),
 * printed with the machine's fsync time (gateway/fsync-probe.ts).
 */
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import type { ServiceUsage } from './http/service-probe.protocol';
import type { UpstreamCounters, UpstreamSettings } from './gateway/child.protocol';
import { scrapeMetrics, waitUntilQuiet } from './gateway/ledger-gateway';
import type { LoadResult, LoadSpec } from './gateway/load.child';
import { requestBody } from './gateway/messages-wire';
import { PEER_KEYS, PEER_NAMES, startProcesses, type BenchProcesses, type Peer, type PeerName } from './gateway/peers';
import { bucketsBetween, histogramBuckets, histogramQuantile, type Percentiles } from './gateway/percentiles';
import { fsyncMs } from './gateway/fsync-probe';
import type { PhaseTrace } from './gateway/phase-trace';

const OVERHEAD_METRIC = 'ledger_gateway_overhead_seconds';
/** The most calls one measured run may send, whatever its duration. */
const MAX_CALLS_PER_RUN = 1_000_000;

export interface Scenario {
  readonly label: string;
  readonly stream: boolean;
  readonly delayMs: number;
  /** Each call's delay is drawn from `delayMs ± delayJitterMs`, in ms (0: exactly `delayMs`). */
  readonly delayJitterMs: number;
  /** Closed loops, each with its own connection. */
  readonly concurrency: number;
}

/** The load the issue's goals are stated at. */
const GOAL_CONCURRENCY = 64;

export interface GatewayRow {
  readonly scenario: string;
  readonly concurrency: number;
  readonly peer: PeerName;
  readonly available: boolean;
  readonly reason?: string;
  readonly load?: LoadResult;
  readonly upstream?: UpstreamCounters;
  /** The peer's own CPU (all its threads) over the measured run, per completed call. */
  readonly peerCpuMsPerCall?: number;
  readonly upstreamCpuMsPerCall?: number;
  /** Client latency minus the direct calls' at the same load, in milliseconds. */
  readonly overheadP50Ms?: number;
  readonly overheadP99Ms?: number;
  /** Calls/s over the bare proxy's in the same scenario. */
  readonly rateOverBare?: number;
  /** A streamed event's trip minus its trip on the direct calls, in microseconds. */
  readonly relayAddedP50Micros?: number;
  readonly relayAddedP99Micros?: number;
  /** llm-ledger's own overhead histogram over the measured run. */
  readonly overheadMetric?: { readonly count: number; readonly p50Ms: number; readonly p99Ms: number };
  /** How long llm-ledger stayed busy after the run (its projections catching up), in milliseconds. */
  readonly quietAfterMs?: number;
  readonly profile?: string;
  /** llm-ledger's calls phase by phase (BENCH_GATEWAY_PHASES=1). */
  readonly phases?: PhaseTrace;
}

export interface GatewayReport {
  readonly settings: Readonly<Record<string, unknown>>;
  readonly loadAverage1mAtStart: number;
  readonly loadAverage1mAtEnd: number;
  /** A 4 KiB write and its fsync on the store's disk, ms (BENCH_GATEWAY_PHASES=1). */
  readonly fsyncMs?: Percentiles;
  readonly rows: readonly GatewayRow[];
}

interface Settings {
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly rounds: number;
  readonly streamDeltas: number;
  readonly bodyBytes: number;
  readonly scenarios: readonly Scenario[];
  readonly peers: ReadonlySet<PeerName>;
  readonly profileDir?: string;
  readonly phases: boolean;
}

function list(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback).split(',').map((item) => item.trim()).filter((item) => item !== '');
}

function readSettings(): Settings {
  const delays = list('BENCH_GATEWAY_DELAYS_MS', '0,50').map(Number);
  const delayJitterMs = Number(process.env.BENCH_GATEWAY_DELAY_JITTER_MS ?? 0);
  if (!Number.isFinite(delayJitterMs) || delayJitterMs < 0) throw new Error(`BENCH_GATEWAY_DELAY_JITTER_MS: expected a number of ms ≥ 0, got "${process.env.BENCH_GATEWAY_DELAY_JITTER_MS}"`);
  const modes = list('BENCH_GATEWAY_MODES', 'json,stream');
  const concurrencies = list('BENCH_GATEWAY_CONCURRENCY', String(GOAL_CONCURRENCY)).map(Number);
  const peers = new Set<PeerName>(['direct']);
  for (const key of list('BENCH_GATEWAY_PEERS', 'direct,bare,portkey,ledger')) {
    const name = PEER_KEYS[key];
    if (name === undefined) throw new Error(`BENCH_GATEWAY_PEERS: unknown peer "${key}" (known: ${Object.keys(PEER_KEYS).join(', ')})`);
    peers.add(name);
  }
  return {
    seconds: Number(process.env.BENCH_GATEWAY_SECONDS ?? 10),
    warmupSeconds: Number(process.env.BENCH_GATEWAY_WARMUP_SECONDS ?? 3),
    rounds: Number(process.env.BENCH_GATEWAY_ROUNDS ?? 1),
    streamDeltas: Number(process.env.BENCH_GATEWAY_STREAM_DELTAS ?? 20),
    bodyBytes: Number(process.env.BENCH_GATEWAY_BODY_BYTES ?? 1024),
    scenarios: concurrencies.flatMap((concurrency) =>
      modes.flatMap((mode) =>
        delays.map((delayMs) => ({
          label: `${delayMs}${delayMs > 0 && delayJitterMs > 0 ? ` ± ${delayJitterMs}` : ''} ms, ${mode === 'stream' ? 'streamed' : 'not streamed'}${concurrencies.length > 1 ? `, ${concurrency} concurrent` : ''}`,
          stream: mode === 'stream',
          delayMs,
          delayJitterMs: delayMs > 0 ? delayJitterMs : 0,
          concurrency,
        })),
      ),
    ),
    peers,
    ...(process.env.BENCH_GATEWAY_PROFILE === undefined ? {} : { profileDir: resolve(process.env.BENCH_GATEWAY_PROFILE) }),
    phases: process.env.BENCH_GATEWAY_PHASES === '1',
  };
}

export async function run(): Promise<GatewayReport> {
  const settings = readSettings();
  const loadAverage1mAtStart = round(loadavg()[0]!);
  const processes = await startProcesses({ peers: settings.peers, exposeGc: false });
  for (const peer of processes.peers) if (!peer.available) console.log(`${peer.name}: not available: ${peer.reason}`);
  const rows: GatewayRow[] = [];
  let failed = true;
  try {
    for (let round = 1; round <= settings.rounds; round++) {
      for (const scenario of settings.scenarios) {
        const measured: GatewayRow[] = [];
        for (const peer of peerOrder(processes.peers, round)) {
          const label = settings.rounds > 1 ? `${scenario.label}, round ${round}` : scenario.label;
          measured.push(
            peer.available
              ? await measure(processes, peer, { ...scenario, label }, settings)
              : { scenario: label, concurrency: scenario.concurrency, peer: peer.name, available: false, reason: peer.reason },
          );
          console.log(progressLine(measured[measured.length - 1]!));
        }
        rows.push(...compare(measured));
      }
    }
    failed = false;
  } finally {
    await processes.stop(failed);
    if (failed) console.error(`logs kept in ${processes.logDir}`);
  }
  const report: GatewayReport = {
    settings: { ...settings, peers: [...settings.peers], scenarios: settings.scenarios.map((scenario) => scenario.label) },
    loadAverage1mAtStart,
    loadAverage1mAtEnd: round(loadavg()[0]!),
    ...(settings.phases ? { fsyncMs: fsyncMs() } : {}),
    rows,
  };
  printReport(report);
  return report;
}

/** The direct calls first (the baseline of the others), then the peers, each round starting one further on. */
function peerOrder(peers: readonly Peer[], round: number): Peer[] {
  const ordered = PEER_NAMES.map((name) => peers.find((peer) => peer.name === name)).filter((peer): peer is Peer => peer !== undefined);
  const direct = ordered.filter((peer) => peer.name === 'direct');
  const others = ordered.filter((peer) => peer.name !== 'direct');
  const shift = others.length === 0 ? 0 : (round - 1) % others.length;
  return [...direct, ...others.slice(shift), ...others.slice(0, shift)];
}

async function measure(processes: BenchProcesses, peer: Extract<Peer, { available: true }>, scenario: Scenario, settings: Settings): Promise<GatewayRow> {
  const body = requestBody({ stream: scenario.stream, bytes: settings.bodyBytes });
  const upstreamSettings: UpstreamSettings = { delayMs: scenario.delayMs, delayJitterMs: scenario.delayJitterMs, streamDeltas: settings.streamDeltas, expectedBodyBase64: body.toString('base64') };
  const spec = (seconds: number): LoadSpec => ({
    ...peer.target,
    bodyBase64: upstreamSettings.expectedBodyBase64,
    stream: scenario.stream,
    concurrency: scenario.concurrency,
    durationMs: seconds * 1000,
    maxCalls: MAX_CALLS_PER_RUN,
  });
  await processes.upstream.request('configure', { settings: upstreamSettings });
  await processes.load.request<LoadResult>('run', { spec: spec(settings.warmupSeconds) });
  if (peer.ledger !== undefined) await waitUntilQuiet(peer.ledger);

  await processes.upstream.request('configure', { settings: upstreamSettings });
  const metricsBefore = peer.ledger === undefined ? undefined : histogramBuckets(await scrapeMetrics(peer.ledger), OVERHEAD_METRIC);
  const profile = peer.ledger !== undefined && settings.profileDir !== undefined ? join(settings.profileDir, `ledger-gateway-${scenario.label.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}.cpuprofile`) : undefined;
  if (profile !== undefined) await peer.ledger!.request({ kind: 'profile-start' });
  if (peer.ledger !== undefined && settings.phases) await peer.ledger.request({ kind: 'phases-start' });
  const peerBefore = await peer.process?.usage();
  const upstreamBefore = await processes.upstream.usage();
  const load = await processes.load.request<LoadResult>('run', { spec: spec(settings.seconds) });
  const upstreamAfter = await processes.upstream.usage();
  const peerAfter = await peer.process?.usage();
  if (profile !== undefined) {
    mkdirSync(settings.profileDir!, { recursive: true });
    await peer.ledger!.request({ kind: 'profile-stop', path: profile });
  }
  const phases = peer.ledger !== undefined && settings.phases ? ((await peer.ledger.request({ kind: 'phases-stop' })) as PhaseTrace) : undefined;
  const upstream = await processes.upstream.request<UpstreamCounters>('counters');
  let overheadMetric: GatewayRow['overheadMetric'];
  let quietAfterMs: number | undefined;
  if (peer.ledger !== undefined) {
    const after = histogramBuckets(await scrapeMetrics(peer.ledger), OVERHEAD_METRIC);
    if (after !== undefined) {
      const buckets = bucketsBetween(metricsBefore, after);
      overheadMetric = { count: buckets.get(Infinity) ?? 0, p50Ms: round(histogramQuantile(buckets, 0.5) * 1000), p99Ms: round(histogramQuantile(buckets, 0.99) * 1000) };
    }
    quietAfterMs = await waitUntilQuiet(peer.ledger);
  }
  return {
    scenario: scenario.label,
    concurrency: scenario.concurrency,
    peer: peer.name,
    available: true,
    load,
    upstream,
    ...(peerBefore === undefined || peerAfter === undefined ? {} : { peerCpuMsPerCall: cpuMsPerCall(peerBefore, peerAfter, load.completed) }),
    upstreamCpuMsPerCall: cpuMsPerCall(upstreamBefore, upstreamAfter, load.completed),
    ...(overheadMetric === undefined ? {} : { overheadMetric }),
    ...(quietAfterMs === undefined ? {} : { quietAfterMs }),
    ...(profile === undefined ? {} : { profile }),
    ...(phases === undefined ? {} : { phases }),
  };
}

/** Each peer against the direct calls and the bare proxy of the same scenario. */
function compare(rows: readonly GatewayRow[]): GatewayRow[] {
  const direct = rows.find((row) => row.peer === 'direct')?.load;
  const bare = rows.find((row) => row.peer === 'bare proxy')?.load;
  return rows.map((row) => {
    const load = row.load;
    if (load === undefined || row.peer === 'direct') return row;
    return {
      ...row,
      ...(direct === undefined
        ? {}
        : {
            overheadP50Ms: round(load.latencyMs.p50 - direct.latencyMs.p50),
            overheadP99Ms: round(load.latencyMs.p99 - direct.latencyMs.p99),
            ...(load.eventTripMicros === undefined || direct.eventTripMicros === undefined
              ? {}
              : {
                  relayAddedP50Micros: round(load.eventTripMicros.p50 - direct.eventTripMicros.p50),
                  relayAddedP99Micros: round(load.eventTripMicros.p99 - direct.eventTripMicros.p99),
                }),
          }),
      ...(bare === undefined || row.peer === 'bare proxy' ? {} : { rateOverBare: round(load.callsPerSecond / Math.max(1, bare.callsPerSecond)) }),
    };
  });
}

function cpuMsPerCall(before: ServiceUsage, after: ServiceUsage, calls: number): number {
  return round((after.cpuMicros - before.cpuMicros) / 1000 / Math.max(1, calls));
}

function progressLine(row: GatewayRow): string {
  if (!row.available) return `${row.scenario} | ${row.peer}: not available`;
  const load = row.load!;
  return `${row.scenario} | ${row.peer}: ${load.callsPerSecond} calls/s, p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms, ${load.failed} failed${load.firstFailure === undefined ? '' : ` (first: ${load.firstFailure.slice(0, 200)})`}`;
}

function printReport(report: GatewayReport): void {
  const cell = (value: number | undefined): number | string => (value === undefined || Number.isNaN(value) ? '' : value);
  console.table(
    Object.fromEntries(
      report.rows.map((row) => [
        `${row.scenario} | ${row.peer}`,
        row.available
          ? {
              'calls/s': row.load!.callsPerSecond,
              '× bare': cell(row.rateOverBare),
              'p50 ms': row.load!.latencyMs.p50,
              'p99 ms': row.load!.latencyMs.p99,
              '+p50 ms': cell(row.overheadP50Ms),
              '+p99 ms': cell(row.overheadP99Ms),
              'event +p50 µs': cell(row.relayAddedP50Micros),
              'event +p99 µs': cell(row.relayAddedP99Micros),
              'peer CPU ms/call': cell(row.peerCpuMsPerCall),
              'client CPU ms/call': row.load!.clientCpuMsPerCall,
              'upstream CPU ms/call': cell(row.upstreamCpuMsPerCall),
              failed: row.load!.failed,
              'bodies altered': row.upstream!.bodiesAltered,
              'metric p50/p99 ms': row.overheadMetric === undefined ? '' : `${row.overheadMetric.p50Ms} / ${row.overheadMetric.p99Ms}`,
            }
          : { 'calls/s': 'not available' },
      ]),
    ),
  );
  for (const row of report.rows) if (!row.available) console.log(`${row.scenario} | ${row.peer}: not available: ${row.reason}`);
  printGoals(report.rows);
  for (const row of report.rows) if (row.phases !== undefined) printPhases(row);
  if (report.fsyncMs !== undefined) console.log(`fsync of a 4 KiB write: p50 ${report.fsyncMs.p50} ms, p99 ${report.fsyncMs.p99} ms`);
  console.log(`load average ${report.loadAverage1mAtStart} at start, ${report.loadAverage1mAtEnd} at end`);
}

/** The goals of issue 23, for llm-ledger's rows. */
function printPhases(row: GatewayRow): void {
  const phases = row.phases!;
  console.log(`${row.scenario} | ${row.peer}: ${phases.calls} calls traced whole, arrived → caller done p50 ${phases.wholeMs.p50} ms, p99 ${phases.wholeMs.p99} ms`);
  console.table(Object.fromEntries(phases.steps.map((step) => [`${step.from} → ${step.to}`, { 'p50 ms': step.ms.p50, 'p90 ms': step.ms.p90, 'p99 ms': step.ms.p99, 'mean ms': step.ms.mean }])));
}

function printGoals(rows: readonly GatewayRow[]): void {
  const ledger = rows.filter((row) => row.peer === 'llm-ledger' && row.available && row.concurrency === GOAL_CONCURRENCY);
  if (ledger.length === 0) {
    console.log(`goals: no llm-ledger row at ${GOAL_CONCURRENCY} concurrent, nothing to judge`);
    return;
  }
  const verdict = (ok: boolean): string => (ok ? 'met' : 'MISSED');
  for (const row of ledger) {
    const parts = [`overhead p50 ${row.overheadP50Ms} ms (≤ 1: ${verdict(row.overheadP50Ms! <= 1)}), p99 ${row.overheadP99Ms} ms (≤ 3: ${verdict(row.overheadP99Ms! <= 3)})`];
    if (row.rateOverBare !== undefined) parts.push(`throughput ${row.rateOverBare} × bare (≥ 0.7: ${verdict(row.rateOverBare >= 0.7)})`);
    if (row.scenario.startsWith('0 ms, not streamed')) parts.push(`${row.load!.callsPerSecond} calls/s (≥ 1,000: ${verdict(row.load!.callsPerSecond >= 1_000)})`);
    if (row.relayAddedP99Micros !== undefined) parts.push(`event relay +${row.relayAddedP99Micros} µs p99 (≤ 100: ${verdict(row.relayAddedP99Micros <= 100)})`);
    console.log(`goals at ${row.concurrency} concurrent, ${row.scenario}: ${parts.join('; ')}`);
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
