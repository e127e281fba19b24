/**
 * The gateway (issue 23): Anthropic's Messages API through llm-ledger (`POST /anthropic/v1/messages`),
 * side by side, in one run on one machine, with the same calls through a bare pass-through proxy (the
 * limit: it forwards the same bytes and accounts for nothing), through the open-source Portkey
 * gateway, and straight to the upstream. One local upstream serves them all (bench/gateway/
 * upstream.child.ts), each peer and the load generator run in processes of their own, and for every
 * scenario (0 and 50 ms per call, streamed and not, each below saturation with 16 closed loops and at
 * it with 64) the peers are measured one after the other at the same load; llm-ledger once per worker
 * count (LEDGER_WORKERS; issue 35).
 *
 * For each: calls/s, client latency p50/p99 and its overhead over the direct calls at the same load;
 * for streams, what each relayed event's trip adds (timestamped at the upstream, read at the client);
 * each peer's own CPU per call (llm-ledger's with N workers: the primary's and every worker's); and
 * llm-ledger's own `ledger_gateway_overhead_seconds` from /metrics. Then, in one summary, what issue 35
 * asks: per scenario and peer the added p50/p99 at 16 connections and the calls/s at 64, beside
 * Portkey's, with the machine's fsync time (the floor of a durable hold), and the issue's goals judged.
 *
 * Environment: BENCH_GATEWAY_SECONDS (measured, per peer and scenario; default 5),
 * BENCH_GATEWAY_WARMUP_SECONDS (2: before each measured run), BENCH_GATEWAY_PEER_WARMUP_CALLS (8000: the first time a peer meets
 * a mode, streamed or not, it serves this many calls, or calls for PEER_WARMUP_MAX_SECONDS, before
 * its first measured run, so every peer is measured with its code compiled as a long-running
 * process has it; 0: only the warm-up above), BENCH_GATEWAY_WORKERS ("1,2": llm-ledger's worker counts), BENCH_GATEWAY_ROUNDS (1: each round measures every scenario again,
 * the peers after the direct calls in an order shifted by one each round; the latency goals are then also judged on the
 * median of the rounds, with how many rounds met each: gateway/latency-goals.ts), BENCH_GATEWAY_CONCURRENCY ("16,64"), BENCH_GATEWAY_DELAYS_MS ("0,50"),
 * BENCH_GATEWAY_DELAY_JITTER_MS (0: each non-zero delay exactly; j: drawn from delay ± j, seeded, the same sequence for every peer),
 * BENCH_GATEWAY_MODES ("json,stream"), BENCH_GATEWAY_STREAM_DELTAS (20), BENCH_GATEWAY_BODY_BYTES (1024),
 * BENCH_GATEWAY_PEERS ("direct,bare,portkey,ledger"; `ledger-pg` adds llm-ledger on a local PostgreSQL log), BENCH_GATEWAY_PROFILE=<dir>: a CPU profile of
 * llm-ledger's main thread over each of its measured runs (`node dist/bench/http/cpu-profile-summary.js`),
 * BENCH_GATEWAY_PHASES=1: each llm-ledger call's phases traced over its measured runs (gateway/phase-trace.ts);
 * both only for llm-ledger in one process (the probe sees its own process only).
 * BENCH_GATEWAY_ORGANIZATION_KEYS (1): the gateway keys each of the benchmark's organizations holds, the one it calls with among them.
 * BENCH_GATEWAY_ORGANIZATIONS (1, at most MAX_BENCH_ORGANIZATIONS): organizations llm-ledger's calls are spread over, each with a key
 * of its own; the load's closed loops share them out, loop i calling with organization i mod N's key (gateway/loop-keys.ts).
 * BENCH_GATEWAY_LEDGER_NODE_FLAGS: Node flags for llm-ledger's processes only (e.g. `--perf-basic-prof` for Linux `perf`).
 * BENCH_GATEWAY_BASELINE=<a built checkout, or its dist directory> with `ledger-base` among the peers
 * runs that build beside this one, as the peer `llm-ledger (baseline)`: with BENCH_GATEWAY_ROUNDS > 1
 * the two take turns in every round, so a change and the build before it meet the same machine, and
 * the report ends with this build over the baseline, round by round, and the median.
 */
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import type { ServiceUsage } from './http/service-probe.protocol';
import type { UpstreamCounters, UpstreamSettings } from './gateway/child.protocol';
import { MAX_BENCH_ORGANIZATIONS, scrapeMetrics, waitUntilQuiet } from './gateway/ledger-gateway';
import type { LoadResult, LoadSpec } from './gateway/load.child';
import { requestBody } from './gateway/messages-wire';
import { PEER_KEYS, startProcesses, type BenchProcesses, type Peer, type PeerName } from './gateway/peers';
import { bucketsBetween, histogramBuckets, histogramQuantile, round } from './gateway/percentiles';
import { againstBaseline, baselineDist } from './gateway/against-baseline';
import { fsyncFloor, type FsyncFloor } from './gateway/fsync-probe';
import type { PhaseTrace } from './gateway/phase-trace';
import { saturationGoal } from './gateway/saturation-goal';
import { latencyGoalsOverRounds, type GoalOverRounds } from './gateway/latency-goals';

const OVERHEAD_METRIC = 'ledger_gateway_overhead_seconds';
/** The most calls one measured run may send, whatever its duration. */
const MAX_CALLS_PER_RUN = 1_000_000;
/**
 * Calls a peer serves in a mode before it is first measured in it (BENCH_GATEWAY_PEER_WARMUP_CALLS):
 * V8 compiles a function with its optimising compiler only after enough calls of it, and a gateway
 * call runs each of its functions about once. Measured on this project's machine (bench/README.md,
 * "A warm peer"): llm-ledger's CPU per call at 16 connections and 50 ms fell from 3.96 ms after 2 s
 * of warm-up to 2.43 ms after 30 s (about 7,800 calls) and 2.48 after 90 s.
 */
const DEFAULT_PEER_WARMUP_CALLS = 8_000;
/** The longest a peer's first warm-up in a mode may take, in seconds, however few calls it served. */
const PEER_WARMUP_MAX_SECONDS = 60;

export interface Scenario {
  readonly label: string;
  /** The label without the concurrency: the scenario the summary groups the loads of. */
  readonly base: string;
  readonly stream: boolean;
  readonly delayMs: number;
  /** Each call's delay is drawn from `delayMs ± delayJitterMs`, in ms (0: exactly `delayMs`). */
  readonly delayJitterMs: number;
  /** Closed loops, each with its own connection. */
  readonly concurrency: number;
}

/** Issue 35's loads: below saturation (latency goals) and at it (throughput goals). */
const BELOW_SATURATION = 16;
const AT_SATURATION = 64;
/** Issue 35's goals: added latency below saturation at the 50 ms upstream, and calls/s over Portkey's at saturation. */
const GOALS = { upstreamDelayMs: 50, addedP50Ms: 2, addedP99Ms: 10, overPortkeyAtSaturation: 1.5 } as const;

export interface GatewayRow {
  readonly scenario: string;
  /** The scenario without the concurrency (Scenario.base). */
  readonly base: string;
  readonly delayMs: number;
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
  /** Calls/s over Portkey's in the same scenario. */
  readonly rateOverPortkey?: number;
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
  /** A 4 KiB write and its fsync on the store's disk, ms, back to back and after a pause: the floor of a durable hold. */
  readonly fsync: FsyncFloor;
  readonly rows: readonly GatewayRow[];
}

interface Settings {
  readonly seconds: number;
  readonly warmupSeconds: number;
  /** Calls each peer serves before its first measured run in a mode (BENCH_GATEWAY_PEER_WARMUP_CALLS). */
  readonly peerWarmupCalls: number;
  readonly rounds: number;
  readonly streamDeltas: number;
  readonly bodyBytes: number;
  readonly scenarios: readonly Scenario[];
  readonly peers: ReadonlySet<PeerName>;
  /** llm-ledger's worker counts (LEDGER_WORKERS), each a peer of its own. */
  readonly workers: readonly number[];
  readonly profileDir?: string;
  readonly phases: boolean;
  /** BENCH_GATEWAY_BASELINE: the `dist` directory of the build `llm-ledger (baseline)` runs. */
  readonly baselineDist?: string;
  /** BENCH_GATEWAY_ORGANIZATION_KEYS: gateway keys each organization holds (1). */
  readonly organizationKeys: number;
  /** BENCH_GATEWAY_ORGANIZATIONS: organizations llm-ledger's calls are spread over (1). */
  readonly organizations: number;
}

function list(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback).split(',').map((item) => item.trim()).filter((item) => item !== '');
}

function readSettings(): Settings {
  const delays = list('BENCH_GATEWAY_DELAYS_MS', '0,50').map(Number);
  const delayJitterMs = Number(process.env.BENCH_GATEWAY_DELAY_JITTER_MS ?? 0);
  if (!Number.isFinite(delayJitterMs) || delayJitterMs < 0) throw new Error(`BENCH_GATEWAY_DELAY_JITTER_MS: expected a number of ms ≥ 0, got "${process.env.BENCH_GATEWAY_DELAY_JITTER_MS}"`);
  const modes = list('BENCH_GATEWAY_MODES', 'json,stream');
  const concurrencies = list('BENCH_GATEWAY_CONCURRENCY', `${BELOW_SATURATION},${AT_SATURATION}`).map(Number);
  const workers = list('BENCH_GATEWAY_WORKERS', '1,2').map(Number);
  const organizationKeys = Number(process.env.BENCH_GATEWAY_ORGANIZATION_KEYS ?? 1);
  const organizations = Number(process.env.BENCH_GATEWAY_ORGANIZATIONS ?? 1);
  const peerWarmupCalls = Number(process.env.BENCH_GATEWAY_PEER_WARMUP_CALLS ?? DEFAULT_PEER_WARMUP_CALLS);
  if (!Number.isInteger(peerWarmupCalls) || peerWarmupCalls < 0) throw new Error(`BENCH_GATEWAY_PEER_WARMUP_CALLS: expected a count of calls ≥ 0, got "${process.env.BENCH_GATEWAY_PEER_WARMUP_CALLS}"`);
  if (!Number.isInteger(organizationKeys) || organizationKeys < 1) throw new Error(`BENCH_GATEWAY_ORGANIZATION_KEYS: expected a count of keys ≥ 1, got "${process.env.BENCH_GATEWAY_ORGANIZATION_KEYS}"`);
  if (!Number.isInteger(organizations) || organizations < 1 || organizations > MAX_BENCH_ORGANIZATIONS) {
    throw new Error(`BENCH_GATEWAY_ORGANIZATIONS: expected a count of organizations from 1 to ${MAX_BENCH_ORGANIZATIONS}, got "${process.env.BENCH_GATEWAY_ORGANIZATIONS}"`);
  }
  if (workers.some((count) => !Number.isInteger(count) || count < 1)) throw new Error(`BENCH_GATEWAY_WORKERS: expected worker counts ≥ 1, got "${process.env.BENCH_GATEWAY_WORKERS}"`);
  const peers = new Set<PeerName>(['direct']);
  for (const key of list('BENCH_GATEWAY_PEERS', 'direct,bare,portkey,ledger')) {
    const name = PEER_KEYS[key];
    if (name === undefined) throw new Error(`BENCH_GATEWAY_PEERS: unknown peer "${key}" (known: ${Object.keys(PEER_KEYS).join(', ')})`);
    peers.add(name);
  }
  return {
    seconds: Number(process.env.BENCH_GATEWAY_SECONDS ?? 5),
    warmupSeconds: Number(process.env.BENCH_GATEWAY_WARMUP_SECONDS ?? 2),
    peerWarmupCalls,
    rounds: Number(process.env.BENCH_GATEWAY_ROUNDS ?? 1),
    streamDeltas: Number(process.env.BENCH_GATEWAY_STREAM_DELTAS ?? 20),
    bodyBytes: Number(process.env.BENCH_GATEWAY_BODY_BYTES ?? 1024),
    scenarios: concurrencies.flatMap((concurrency) =>
      modes.flatMap((mode) =>
        delays.map((delayMs) => scenario({ delayMs, delayJitterMs, stream: mode === 'stream', concurrency, concurrencies: concurrencies.length })),
      ),
    ),
    peers,
    workers,
    ...(process.env.BENCH_GATEWAY_PROFILE === undefined ? {} : { profileDir: resolve(process.env.BENCH_GATEWAY_PROFILE) }),
    phases: process.env.BENCH_GATEWAY_PHASES === '1',
    ...(process.env.BENCH_GATEWAY_BASELINE === undefined ? {} : { baselineDist: baselineDist(process.env.BENCH_GATEWAY_BASELINE) }),
    organizationKeys,
    organizations,
  };
}

function scenario(options: { delayMs: number; delayJitterMs: number; stream: boolean; concurrency: number; concurrencies: number }): Scenario {
  const { delayMs, delayJitterMs, stream, concurrency } = options;
  const base = `${delayMs}${delayMs > 0 && delayJitterMs > 0 ? ` ± ${delayJitterMs}` : ''} ms, ${stream ? 'streamed' : 'not streamed'}`;
  return {
    label: `${base}${options.concurrencies > 1 ? `, ${concurrency} concurrent` : ''}`,
    base,
    stream,
    delayMs,
    delayJitterMs: delayMs > 0 ? delayJitterMs : 0,
    concurrency,
  };
}

export async function run(): Promise<GatewayReport> {
  const settings = readSettings();
  const loadAverage1mAtStart = round(loadavg()[0]!);
  const processes = await startProcesses({
    peers: settings.peers,
    exposeGc: false,
    ledgerWorkers: settings.workers,
    organizationKeys: settings.organizationKeys,
    organizations: settings.organizations,
    ...(settings.baselineDist === undefined ? {} : { baselineDist: settings.baselineDist }),
  });
  for (const peer of processes.peers) if (!peer.available) console.log(`${peer.name}: not available: ${peer.reason}`);
  const rows: GatewayRow[] = [];
  // Each peer and mode ("llm-ledger|true") already warmed up with settings.peerWarmupCalls.
  const warm = new Set<string>();
  let failed = true;
  try {
    for (let round = 1; round <= settings.rounds; round++) {
      for (const scenario of settings.scenarios) {
        const measured: GatewayRow[] = [];
        for (const peer of peerOrder(processes.peers, round)) {
          const label = settings.rounds > 1 ? `${scenario.label}, round ${round}` : scenario.label;
          const warmed = `${peer.name}|${scenario.stream}`;
          const firstInMode = !warm.has(warmed);
          warm.add(warmed);
          measured.push(
            peer.available
              ? await measure(processes, peer, { ...scenario, label }, settings, firstInMode)
              : { scenario: label, base: scenario.base, delayMs: scenario.delayMs, concurrency: scenario.concurrency, peer: peer.name, available: false, reason: peer.reason },
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
    fsync: fsyncFloor(),
    rows,
  };
  printReport(report);
  return report;
}

/** The direct calls first (the baseline of the others), then the peers, each round starting one further on. */
function peerOrder(peers: readonly Peer[], round: number): Peer[] {
  // Started in PEER_NAMES's order, llm-ledger's worker counts in turn.
  const direct = peers.filter((peer) => peer.name === 'direct');
  const others = peers.filter((peer) => peer.name !== 'direct');
  const shift = others.length === 0 ? 0 : (round - 1) % others.length;
  return [...direct, ...others.slice(shift), ...others.slice(0, shift)];
}

async function measure(processes: BenchProcesses, peer: Extract<Peer, { available: true }>, scenario: Scenario, settings: Settings, firstInMode: boolean): Promise<GatewayRow> {
  const body = requestBody({ stream: scenario.stream, bytes: settings.bodyBytes });
  const upstreamSettings: UpstreamSettings = { delayMs: scenario.delayMs, delayJitterMs: scenario.delayJitterMs, streamDeltas: settings.streamDeltas, expectedBodyBase64: body.toString('base64') };
  const spec = (seconds: number, maxCalls = MAX_CALLS_PER_RUN): LoadSpec => ({
    ...peer.target,
    bodyBase64: upstreamSettings.expectedBodyBase64,
    stream: scenario.stream,
    concurrency: scenario.concurrency,
    durationMs: seconds * 1000,
    maxCalls,
  });
  await processes.upstream.request('configure', { settings: upstreamSettings });
  if (firstInMode && settings.peerWarmupCalls > 0) await processes.load.request<LoadResult>('run', { spec: spec(PEER_WARMUP_MAX_SECONDS, settings.peerWarmupCalls) });
  await processes.load.request<LoadResult>('run', { spec: spec(settings.warmupSeconds) });
  if (peer.ledger !== undefined) await waitUntilQuiet(peer.ledger);

  await processes.upstream.request('configure', { settings: upstreamSettings });
  const metricsBefore = peer.ledger === undefined ? undefined : histogramBuckets(await scrapeMetrics(peer.ledger), OVERHEAD_METRIC);
  // The probe's profile and phase trace see the process it is loaded in: llm-ledger in one process only.
  const probed = peer.ledger !== undefined && (peer.workers ?? 1) === 1 ? peer.ledger : undefined;
  const profile = probed !== undefined && settings.profileDir !== undefined ? join(settings.profileDir, `ledger-gateway-${scenario.label.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}.cpuprofile`) : undefined;
  if (profile !== undefined) await probed!.request({ kind: 'profile-start' });
  if (probed !== undefined && settings.phases) await probed.request({ kind: 'phases-start' });
  const peerBefore = await peer.process?.usage();
  const upstreamBefore = await processes.upstream.usage();
  const load = await processes.load.request<LoadResult>('run', { spec: spec(settings.seconds) });
  const upstreamAfter = await processes.upstream.usage();
  const peerAfter = await peer.process?.usage();
  if (profile !== undefined) {
    mkdirSync(settings.profileDir!, { recursive: true });
    await probed!.request({ kind: 'profile-stop', path: profile });
  }
  const phases = probed !== undefined && settings.phases ? ((await probed.request({ kind: 'phases-stop' })) as PhaseTrace) : undefined;
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
    base: scenario.base,
    delayMs: scenario.delayMs,
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
  const portkey = rows.find((row) => row.peer === 'Portkey')?.load;
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
      ...(portkey === undefined || row.peer === 'Portkey' ? {} : { rateOverPortkey: round(load.callsPerSecond / Math.max(1, portkey.callsPerSecond)) }),
    };
  });
}

function cpuMsPerCall(before: ServiceUsage, after: ServiceUsage, calls: number): number {
  return round((after.cpuMicros - before.cpuMicros) / 1000 / Math.max(1, calls));
}

function progressLine(row: GatewayRow): string {
  if (!row.available) return `${row.scenario} | ${row.peer}: not available`;
  const load = row.load!;
  return `${row.scenario} | ${row.peer}: load ${loadavg()[0]!.toFixed(1)}, ${load.callsPerSecond} calls/s, p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms, ${load.failed} failed${load.firstFailure === undefined ? '' : ` (first: ${load.firstFailure.slice(0, 200)})`}`;
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
              '× Portkey': cell(row.rateOverPortkey),
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
  for (const row of report.rows) if (row.phases !== undefined) printPhases(row);
  printSummary(report.rows);
  printGoals(report.rows);
  printAgainstBaseline(report.rows);
  const { backToBack, afterPause, pauseMs } = report.fsync;
  console.log(
    `fsync of a 4 KiB write (the floor of a durable hold): back to back p50 ${backToBack.p50} ms, p99 ${backToBack.p99} ms; ` +
      `after ${pauseMs} ms untouched (a call alone) p50 ${afterPause.p50} ms, p99 ${afterPause.p99} ms`,
  );
  const { peerWarmupCalls, warmupSeconds, seconds } = report.settings;
  console.log(`each peer warmed up with ${peerWarmupCalls} calls (at most ${PEER_WARMUP_MAX_SECONDS} s) the first time it met a mode, then ${warmupSeconds} s before each measured run of ${seconds} s`);
  console.log(`load average ${report.loadAverage1mAtStart} at start, ${report.loadAverage1mAtEnd} at end`);
}

/** The goals of issue 23, for llm-ledger's rows. */
function printPhases(row: GatewayRow): void {
  const phases = row.phases!;
  console.log(`${row.scenario} | ${row.peer}: ${phases.calls} calls traced whole, arrived → caller done p50 ${phases.wholeMs.p50} ms, p99 ${phases.wholeMs.p99} ms`);
  console.table(Object.fromEntries(phases.steps.map((step) => [`${step.from} → ${step.to}`, { 'p50 ms': step.ms.p50, 'p90 ms': step.ms.p90, 'p99 ms': step.ms.p99, 'mean ms': step.ms.mean }])));
}

/**
 * Issue 35 in one table: per scenario and peer, the latency it adds below saturation and the calls/s
 * it reaches at saturation, with its CPU per call (the last round's rows).
 */
function printSummary(rows: readonly GatewayRow[]): void {
  const at = (base: string, peer: string, concurrency: number): GatewayRow | undefined =>
    rows.filter((row) => row.base === base && row.peer === peer && row.concurrency === concurrency && row.available).pop();
  const keys = [...new Set(rows.filter((row) => row.peer !== 'direct').map((row) => `${row.base}\u0000${row.peer}`))];
  const summary = keys.map((key) => {
    const [base, peer] = key.split('\u0000') as [string, string];
    const below = at(base, peer, BELOW_SATURATION);
    const saturated = at(base, peer, AT_SATURATION);
    return [
      `${base} | ${peer}`,
      {
        [`+p50 ms @${BELOW_SATURATION}`]: below?.overheadP50Ms ?? '',
        [`+p99 ms @${BELOW_SATURATION}`]: below?.overheadP99Ms ?? '',
        [`calls/s @${AT_SATURATION}`]: saturated?.load?.callsPerSecond ?? '',
        [`× Portkey @${AT_SATURATION}`]: saturated?.rateOverPortkey ?? '',
        [`CPU ms/call @${BELOW_SATURATION}`]: below?.peerCpuMsPerCall ?? '',
        [`CPU ms/call @${AT_SATURATION}`]: saturated?.peerCpuMsPerCall ?? '',
      },
    ] as const;
  });
  if (summary.length > 0) console.table(Object.fromEntries(summary));
}

/** Issue 35's goals, for each llm-ledger row: ahead of Portkey at every load, 1.5 × at saturation with a 50 ms upstream, the added latency below saturation. */
function printGoals(rows: readonly GatewayRow[]): void {
  const verdict = (ok: boolean): string => (ok ? 'met' : 'MISSED');
  const ledger = rows.filter((row) => row.peer.startsWith('llm-ledger') && row.available);
  if (ledger.length === 0) console.log('goals: no llm-ledger row, nothing to judge');
  for (const row of ledger) {
    const parts: string[] = [];
    if (row.rateOverPortkey !== undefined) parts.push(`${row.rateOverPortkey} × Portkey's calls/s (ahead: ${verdict(row.rateOverPortkey > 1)})`);
    if (row.rateOverPortkey !== undefined && row.concurrency === AT_SATURATION && row.delayMs === GOALS.upstreamDelayMs) {
      const rateOf = (peer: PeerName): number | undefined => rows.find((other) => other.scenario === row.scenario && other.peer === peer && other.available)?.load?.callsPerSecond;
      const portkey = rateOf('Portkey');
      const direct = rateOf('direct');
      const goal = portkey === undefined ? undefined : saturationGoal(portkey, direct, GOALS.overPortkeyAtSaturation);
      const ceiling = goal === undefined || goal.reachable ? '' : ` (${goal.targetCallsPerSecond}/s, above the direct calls' ${direct}/s: no proxy can reach it here)`;
      parts.push(`≥ ${GOALS.overPortkeyAtSaturation} ×: ${verdict(row.rateOverPortkey >= GOALS.overPortkeyAtSaturation)}${ceiling}`);
    }
    if (row.concurrency === BELOW_SATURATION && row.delayMs === GOALS.upstreamDelayMs && row.overheadP50Ms !== undefined) {
      parts.push(`added p50 ${row.overheadP50Ms} ms (≤ ${GOALS.addedP50Ms}: ${verdict(row.overheadP50Ms <= GOALS.addedP50Ms)}), p99 ${row.overheadP99Ms} ms (≤ ${GOALS.addedP99Ms}: ${verdict(row.overheadP99Ms! <= GOALS.addedP99Ms)})`);
    }
    if (parts.length > 0) console.log(`goals, ${row.scenario} | ${row.peer}: ${parts.join('; ')}`);
  }
  const latencyGoals = { concurrency: BELOW_SATURATION, upstreamDelayMs: GOALS.upstreamDelayMs, addedP50Ms: GOALS.addedP50Ms, addedP99Ms: GOALS.addedP99Ms };
  for (const { scenario, rounds, addedP50, addedP99 } of latencyGoalsOverRounds(rows, latencyGoals)) {
    const judged = ({ median, metInRounds }: GoalOverRounds, bound: number): string => `${median} ms (≤ ${bound}: ${verdict(median <= bound)}; met in ${metInRounds} of ${rounds})`;
    console.log(`goals over ${rounds} rounds, ${scenario}: added p50, the median, ${judged(addedP50, GOALS.addedP50Ms)}, p99 ${judged(addedP99, GOALS.addedP99Ms)}`);
  }
}

/** This build over `llm-ledger (baseline)`, per scenario, each round and the median (againstBaseline). */
function printAgainstBaseline(rows: readonly GatewayRow[]): void {
  const comparisons = againstBaseline(rows);
  if (comparisons.length === 0) return;
  console.log('llm-ledger over llm-ledger (baseline), the median and (each round):');
  console.table(
    Object.fromEntries(
      comparisons.map(({ scenario, measures }) => [
        scenario,
        Object.fromEntries(measures.map(({ measure, median, rounds }) => [measure, `${median ?? ''} (${rounds.map((ratio) => ratio ?? '–').join(', ')})`])),
      ]),
    ),
  );
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
