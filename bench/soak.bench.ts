/**
 * The HTTP soak (issue 16): the service as in the http benchmark (its own process, `npm start`'s
 * setup, the demo feature on its scripted model), 64 connections for 10 minutes, reporting each
 * minute the service's resident set and its heap right after a full collection (the service runs
 * with --expose-gc so the probe can collect first: what is left is what the process retains), and the
 * invocations completed in that minute. Not part of `npm test`, nor of `npm run bench` without names.
 *
 * The goal: RSS over the last five minutes grows by less than 5 %.
 *
 * Environment: BENCH_SOAK_MINUTES (default 10), BENCH_SOAK_CONNECTIONS (64),
 * BENCH_SOAK_HEAP_SNAPSHOTS=<dir>: also write heap snapshots of the service after the first minute
 * and at the end, to compare in DevTools (Memory → Comparison).
 */
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { benchOrganizations, fundOrganizations, runLoad, tokensEnv, type LoadResult } from './http/http-load';
import { ServiceProcess } from './http/service-process';

const MINUTE_MS = 60_000;
const MIB = 2 ** 20;
/** The last minutes whose RSS growth the goal bounds, in minutes. */
const SETTLED_WINDOW_MINUTES = 5;

export interface SoakMinute {
  readonly minute: number;
  readonly completed: number;
  readonly rssMiB: number;
  /** Of the resident set: anonymous memory (JS heaps of both threads, SQLite caches, malloc), file pages, shared memory. */
  readonly rssAnonMiB: number;
  readonly rssFileMiB: number;
  readonly rssShmemMiB: number;
  readonly heapUsedAfterGcMiB: number;
  readonly heapTotalMiB: number;
  readonly externalMiB: number;
  readonly arrayBuffersMiB: number;
  readonly loadAverage1m: number;
}

export interface SoakReport {
  readonly connections: number;
  readonly minutes: readonly SoakMinute[];
  /** RSS growth from the start to the end of the last SETTLED_WINDOW_MINUTES, in percent. */
  readonly rssGrowthLastMinutesPercent: number;
  readonly heapGrowthLastMinutesPercent: number;
  readonly load: LoadResult;
}

export async function run(): Promise<SoakReport> {
  const minutesToRun = Number(process.env.BENCH_SOAK_MINUTES ?? 10);
  const connections = Number(process.env.BENCH_SOAK_CONNECTIONS ?? 64);
  const snapshotDir = process.env.BENCH_SOAK_HEAP_SNAPSHOTS === undefined ? undefined : resolve(process.env.BENCH_SOAK_HEAP_SNAPSHOTS);
  const organizations = benchOrganizations();
  const service = await ServiceProcess.start({ env: { LEDGER_TOKENS: tokensEnv(organizations) }, nodeFlags: ['--expose-gc'] });
  const minutes: SoakMinute[] = [];
  try {
    await fundOrganizations(service.baseUrl, organizations);
    const snapshot = async (name: string): Promise<void> => {
      if (snapshotDir === undefined) return;
      mkdirSync(snapshotDir, { recursive: true });
      const path = join(snapshotDir, `service-soak-${name}.heapsnapshot`);
      await service.request({ kind: 'heap-snapshot', path });
      console.log(`heap snapshot: ${path}`);
    };
    let completed = 0;
    let counted = 0;
    const record = async (minute: number): Promise<void> => {
      const usage = await service.usage(true);
      const entry: SoakMinute = {
        minute,
        completed: completed - counted,
        rssMiB: mib(usage.rssBytes),
        rssAnonMiB: mib(usage.rssAnonBytes),
        rssFileMiB: mib(usage.rssFileBytes),
        rssShmemMiB: mib(usage.rssShmemBytes),
        heapUsedAfterGcMiB: mib(usage.heapUsedBytes),
        heapTotalMiB: mib(usage.heapTotalBytes),
        externalMiB: mib(usage.externalBytes),
        arrayBuffersMiB: mib(usage.arrayBuffersBytes),
        loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
      };
      counted = completed;
      minutes.push(entry);
      console.log(JSON.stringify(entry));
      if (minute === 1) await snapshot('minute-1');
    };
    await record(0);
    let minute = 0;
    const timer = setInterval(() => void record(++minute).catch((error: unknown) => console.error(error)), MINUTE_MS);
    const load = await runLoad({
      baseUrl: service.baseUrl,
      organizations,
      connections,
      durationSeconds: minutesToRun * 60,
      onCompleted: () => void completed++,
    });
    clearInterval(timer);
    if (minutes.length <= minutesToRun) await record(minutesToRun);
    await snapshot('end');
    const last = minutes[minutes.length - 1]!;
    const windowStart = minutes[Math.max(0, minutes.length - 1 - SETTLED_WINDOW_MINUTES)]!;
    const report: SoakReport = {
      connections,
      minutes,
      rssGrowthLastMinutesPercent: percent(windowStart.rssMiB, last.rssMiB),
      heapGrowthLastMinutesPercent: percent(windowStart.heapUsedAfterGcMiB, last.heapUsedAfterGcMiB),
      load,
    };
    console.table(minutes);
    console.log(
      `RSS over the last ${SETTLED_WINDOW_MINUTES} minutes: ${windowStart.rssMiB} → ${last.rssMiB} MiB (${report.rssGrowthLastMinutesPercent} %, goal < 5 %); ` +
        `heap after GC ${windowStart.heapUsedAfterGcMiB} → ${last.heapUsedAfterGcMiB} MiB; ${load.completed} invocations, ` +
        `errors: ${load.non2xx} non-2xx, ${load.timeouts} timeouts, ${load.errors - load.timeouts} other connection errors, ` +
        `${load.notCompleted} answered but not completed`,
    );
    return report;
  } finally {
    await service.stop();
  }
}

function mib(bytes: number): number {
  return Math.round(bytes / MIB);
}

function percent(from: number, to: number): number {
  return Math.round(((to - from) / from) * 1000) / 10;
}

if (require.main === module) {
  run().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
