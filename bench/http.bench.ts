/**
 * The service over HTTP (issue 16): `POST /v1/invocations` of the demo feature on its scripted model,
 * against the service in its own process started as `npm start` starts it (embedded store, demo
 * seeded, projections on their worker thread), driven by autocannon from this process at 16, 64 and
 * 256 connections. For each: completed invocations/s, p50/p99 latency, the SERVICE process's CPU time
 * per invocation (from its own process.cpuUsage, so autocannon's share is not in it), errors, and its
 * resident set over time. In the same run, the same invocations in-process (through the command bus,
 * in a process of its own, 64 in flight), so the report gives the ratios.
 *
 * Each level's CPU window runs from its first request until the read models have caught up after
 * its last, as the in-process side's does.
 *
 * The levels run against the service as it ships (synchronous=FULL); the reference level then runs
 * again against a service with LEDGER_SQLITE_SYNCHRONOUS=NORMAL, and the report gives FULL over NORMAL.
 *
 * Environment: BENCH_HTTP_SECONDS (per level, default 15), BENCH_HTTP_WARMUP_SECONDS (5),
 * BENCH_HTTP_CONNECTIONS (e.g. "64"; default "16,64,256"), BENCH_HTTP_IN_PROCESS_INVOCATIONS (10,000),
 * BENCH_HTTP_PROFILE=<dir>: write a CPU profile of the service's main thread during the 64-connection
 * level (`node dist/bench/http/cpu-profile-summary.js <file>` summarises it).
 */
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { benchOrganizations, fundOrganizations, runLoad, tokensEnv, waitForReadModels, type LoadResult } from './http/http-load';
import type { InProcessResult } from './http/in-process.child';
import { measureInProcess } from './http/in-process';
import { ServiceProcess } from './http/service-process';
import type { ServiceUsage } from './http/service-probe.protocol';

const DEFAULT_CONNECTIONS = [16, 64, 256];
/** Connections of the level compared with the in-process run (and profiled when asked). */
const REFERENCE_CONNECTIONS = 64;
/** How often the service's resident set is sampled, in milliseconds. */
const RSS_SAMPLE_INTERVAL_MS = 1_000;
const MIB = 2 ** 20;

export interface HttpLevel extends LoadResult {
  /** Service CPU (all its threads) over the level, until its read models caught up, in seconds. */
  readonly serviceCpuSeconds: number;
  readonly serviceCpuMsPerInvocation: number;
  /** Of that CPU, the share spent in the kernel (sockets, pipes, SQLite's writes), in percent. */
  readonly serviceSystemCpuPercent: number;
  readonly rssStartMiB: number;
  readonly rssPeakMiB: number;
  readonly rssEndMiB: number;
}

export interface RssSample {
  readonly atSeconds: number;
  readonly level: string;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
}

export interface HttpReport {
  readonly loadAverage1mAtStart: number;
  readonly loadAverage1mAtEnd: number;
  readonly inProcess: InProcessResult;
  readonly levels: readonly HttpLevel[];
  /** At REFERENCE_CONNECTIONS: service CPU per HTTP invocation over in-process CPU per invocation. */
  readonly cpuPerInvocationHttpOverInProcess: number;
  /** At REFERENCE_CONNECTIONS: HTTP invocations/s over in-process invocations/s. */
  readonly rateHttpOverInProcess: number;
  /** The reference level against a service with synchronous=NORMAL (the levels above run FULL, the default). */
  readonly normalAtReference: HttpLevel | undefined;
  /** At REFERENCE_CONNECTIONS, FULL's figure over NORMAL's. */
  readonly fullOverNormal:
    | { readonly rate: number; readonly cpuPerInvocation: number; readonly latencyP50: number; readonly latencyP99: number }
    | undefined;
  readonly rss: readonly RssSample[];
}

interface LevelsRun {
  readonly organizations: ReturnType<typeof benchOrganizations>;
  readonly connectionLevels: readonly number[];
  readonly seconds: number;
  readonly warmupSeconds: number;
  readonly profileDir: string | undefined;
  /** Where the service's resident set is sampled to; `tag` names the service in each sample. */
  readonly rss: RssSample[];
  readonly tag: string;
}

/** Starts a service with `env`, warms it up and measures each connection level against it. */
async function measureService(env: Readonly<Record<string, string>>, options: LevelsRun): Promise<HttpLevel[]> {
  const { organizations, connectionLevels, seconds, warmupSeconds, profileDir, rss, tag } = options;
  const service = await ServiceProcess.start({ env: { LEDGER_TOKENS: tokensEnv(organizations), ...env } });
  let level = `${tag}setup`;
  const startedAt = performance.now();
  const sample = async (): Promise<ServiceUsage> => {
    const usage = await service.usage();
    rss.push({ atSeconds: round((performance.now() - startedAt) / 1000), level, rssMiB: mib(usage.rssBytes), heapUsedMiB: mib(usage.heapUsedBytes) });
    return usage;
  };
  const sampler = setInterval(() => void sample().catch(() => undefined), RSS_SAMPLE_INTERVAL_MS);
  const levels: HttpLevel[] = [];
  try {
    await fundOrganizations(service.baseUrl, organizations);
    level = `${tag}warm-up`;
    await runLoad({ baseUrl: service.baseUrl, organizations, connections: REFERENCE_CONNECTIONS, durationSeconds: warmupSeconds });
    await waitForReadModels(service.baseUrl, organizations[0]!);
    for (const connections of connectionLevels) {
      level = `${tag}${connections} connections`;
      const profile = profileDir !== undefined && connections === REFERENCE_CONNECTIONS;
      if (profile) await service.request({ kind: 'profile-start' });
      const before = await sample();
      let peak = before.rssBytes;
      const peakSampler = setInterval(() => void service.usage().then((usage) => (peak = Math.max(peak, usage.rssBytes)), () => undefined), RSS_SAMPLE_INTERVAL_MS);
      const load = await runLoad({ baseUrl: service.baseUrl, organizations, connections, durationSeconds: seconds });
      await waitForReadModels(service.baseUrl, organizations[0]!);
      clearInterval(peakSampler);
      const after = await sample();
      if (profile) {
        mkdirSync(profileDir, { recursive: true });
        const path = join(profileDir, `service-http-${connections}c-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`);
        await service.request({ kind: 'profile-stop', path });
        console.log(`CPU profile of the service's main thread: ${path}`);
      }
      const serviceCpuSeconds = (after.cpuMicros - before.cpuMicros) / 1e6;
      levels.push({
        ...load,
        serviceCpuSeconds: round(serviceCpuSeconds),
        serviceCpuMsPerInvocation: round((serviceCpuSeconds * 1000) / Math.max(1, load.completed)),
        serviceSystemCpuPercent: Math.round((100 * (after.systemCpuMicros - before.systemCpuMicros)) / Math.max(1, after.cpuMicros - before.cpuMicros)),
        rssStartMiB: mib(before.rssBytes),
        rssPeakMiB: mib(Math.max(peak, after.rssBytes)),
        rssEndMiB: mib(after.rssBytes),
      });
    }
  } finally {
    clearInterval(sampler);
    await service.stop();
  }
  return levels;
}

export async function run(): Promise<HttpReport> {
  const loadAverage1mAtStart = round(loadavg()[0]!);
  const seconds = Number(process.env.BENCH_HTTP_SECONDS ?? 15);
  const warmupSeconds = Number(process.env.BENCH_HTTP_WARMUP_SECONDS ?? 5);
  const connectionLevels = process.env.BENCH_HTTP_CONNECTIONS?.split(',').map(Number) ?? DEFAULT_CONNECTIONS;
  const profileDir = process.env.BENCH_HTTP_PROFILE === undefined ? undefined : resolve(process.env.BENCH_HTTP_PROFILE);

  const inProcessInvocations = Number(process.env.BENCH_HTTP_IN_PROCESS_INVOCATIONS ?? 10_000);
  const inProcess = await measureInProcess({ invocations: inProcessInvocations, warmupInvocations: 1_000, inFlight: REFERENCE_CONNECTIONS });

  const organizations = benchOrganizations();
  const rss: RssSample[] = [];
  const shared = { organizations, seconds, warmupSeconds, rss };
  // The service as it ships (synchronous=FULL), then the NORMAL opt-in at the reference level, to price the fsyncs.
  const levels = await measureService({ LEDGER_SQLITE_SYNCHRONOUS: 'FULL' }, { ...shared, connectionLevels, profileDir, tag: '' });
  const [normal] = await measureService({ LEDGER_SQLITE_SYNCHRONOUS: 'NORMAL' }, { ...shared, connectionLevels: [REFERENCE_CONNECTIONS], profileDir: undefined, tag: 'NORMAL, ' });

  const reference = levels.find((entry) => entry.connections === REFERENCE_CONNECTIONS);
  const report: HttpReport = {
    loadAverage1mAtStart,
    loadAverage1mAtEnd: round(loadavg()[0]!),
    inProcess,
    levels,
    cpuPerInvocationHttpOverInProcess: reference === undefined ? NaN : round(reference.serviceCpuMsPerInvocation / inProcess.cpuMsPerInvocation),
    rateHttpOverInProcess: reference === undefined ? NaN : round(reference.completedPerSecond / inProcess.invocationsPerSecond),
    normalAtReference: normal,
    fullOverNormal:
      reference === undefined || normal === undefined
        ? undefined
        : {
            rate: round(reference.completedPerSecond / normal.completedPerSecond),
            cpuPerInvocation: round(reference.serviceCpuMsPerInvocation / normal.serviceCpuMsPerInvocation),
            latencyP50: round(reference.latencyP50Ms / normal.latencyP50Ms),
            latencyP99: round(reference.latencyP99Ms / normal.latencyP99Ms),
          },
    rss,
  };
  console.table({
    [`in-process, ${inProcess.inFlight} in flight`]: {
      'invocations/s': inProcess.invocationsPerSecond,
      'p50 ms': inProcess.latencyP50Ms,
      'p99 ms': inProcess.latencyP99Ms,
      'CPU ms/invocation': inProcess.cpuMsPerInvocation,
      'kernel %': inProcess.systemCpuPercent,
      errors: 0,
    },
    ...Object.fromEntries(
      [...levels.map((entry) => [`HTTP, ${entry.connections} connections`, entry] as const), ...(normal === undefined ? [] : [[`HTTP, ${normal.connections} connections, NORMAL`, normal] as const])].map(([name, entry]) => [
        name,
        {
          'invocations/s': entry.completedPerSecond,
          'p50 ms': entry.latencyP50Ms,
          'p99 ms': entry.latencyP99Ms,
          'CPU ms/invocation': entry.serviceCpuMsPerInvocation,
          'kernel %': entry.serviceSystemCpuPercent,
          errors: entry.non2xx + entry.errors + entry.notCompleted,
          'RSS MiB start/peak/end': `${entry.rssStartMiB} / ${entry.rssPeakMiB} / ${entry.rssEndMiB}`,
        },
      ]),
    ),
  });
  console.log(
    `at ${REFERENCE_CONNECTIONS} connections: service CPU per HTTP invocation / in-process = ${report.cpuPerInvocationHttpOverInProcess} ` +
      `(goal ≤ 1.4); HTTP rate / in-process rate = ${report.rateHttpOverInProcess} (goal: ≥ 1,500 invocations/s over HTTP); ` +
      `load average ${loadAverage1mAtStart} at start, ${report.loadAverage1mAtEnd} at end`,
  );
  const cost = report.fullOverNormal;
  if (cost !== undefined) {
    console.log(`synchronous=FULL over NORMAL at ${REFERENCE_CONNECTIONS} connections: invocations/s ×${cost.rate}, CPU/invocation ×${cost.cpuPerInvocation}, p50 ×${cost.latencyP50}, p99 ×${cost.latencyP99}`);
  }
  return report;
}

function mib(bytes: number): number {
  return Math.round(bytes / MIB);
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
