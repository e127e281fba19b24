/**
 * An operations change measured against the build before it, in one run:
 * `BENCH_FULL_PATH_BASELINE=<a built checkout, or its dist directory> npm run bench -- full-path-pair`.
 *
 * Each round measures the in-process full path's 64-in-flight run with a 50 ms provider under FULL
 * (full-path.bench.ts `measure`, the run whose overhead issue 35 holds against NORMAL's) once for
 * this build and once for the baseline, each in a fresh child process, the order swapped every
 * round so neither always meets the machine first. It reports each round's figures, this build over
 * the baseline in the same round, and the median of the rounds. On this project's shared machine a
 * build's median overhead moves by up to 1.3 × between two runs of the same rounds, so a change is read
 * from rounds that alternate, never from two separate runs.
 *
 * BENCH_FULL_PATH_PAIR_ROUNDS (default 5), BENCH_FULL_PATH_PAIR_INVOCATIONS (measured per run, default
 * 6,000), BENCH_WARMUP_INVOCATIONS (default 500). The baseline needs `dist/bench/full-path.bench.js`
 * (a checkout built with `npm run build:service`).
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { builtDist, median } from './gateway/against-baseline';
import { round } from './gateway/percentiles';
import type { FullPathResult } from './full-path.bench';

/** Rounds when BENCH_FULL_PATH_PAIR_ROUNDS is not set: each is one run of each build. */
const DEFAULT_ROUNDS = 5;
/** Invocations measured per run when BENCH_FULL_PATH_PAIR_INVOCATIONS is not set (about 15 s a run here). */
const DEFAULT_INVOCATIONS = 6_000;
const DEFAULT_WARMUP_INVOCATIONS = 500;
/** The runs' shape: issue 35's FULL-over-NORMAL overhead is measured at this many in flight and this latency. */
const IN_FLIGHT = 64;
const PROVIDER_LATENCY_MS = 50;
/** Most output a child's run may print, in bytes (one line of JSON). */
const MAX_CHILD_OUTPUT_BYTES = 1_048_576;

/** What one run of one build measured. */
export interface PairRun {
  readonly overheadP50Ms: number;
  readonly overheadP99Ms: number;
  readonly cpuMsPerInvocation: number;
  readonly invocationsPerSecond: number;
}

/** This build over the baseline for one measure: each round's ratio and their median. */
export interface PairMeasure {
  readonly measure: 'overhead p50' | 'overhead p99' | 'CPU per invocation' | 'invocations/s';
  readonly rounds: readonly number[];
  readonly median: number | undefined;
}

export interface FullPathPairReport {
  readonly baselineDist: string;
  readonly invocationsPerRun: number;
  readonly rounds: ReadonlyArray<{ readonly ours: PairRun; readonly baseline: PairRun }>;
  readonly ratios: readonly PairMeasure[];
}

/**
 * The `dist` directory BENCH_FULL_PATH_BASELINE names: a built checkout (its `dist`), or that `dist`
 * directory itself; the one holding `bench/full-path.bench.js`.
 */
export function fullPathDist(named: string): string {
  return builtDist(named, 'bench/full-path.bench.js', 'BENCH_FULL_PATH_BASELINE', 'benchmark');
}

/** This build over the baseline round by round (below 1 is better but for invocations/s), and the medians. */
export function pairRatios(rounds: FullPathPairReport['rounds']): PairMeasure[] {
  const measures: ReadonlyArray<readonly [PairMeasure['measure'], (run: PairRun) => number]> = [
    ['overhead p50', (run) => run.overheadP50Ms],
    ['overhead p99', (run) => run.overheadP99Ms],
    ['CPU per invocation', (run) => run.cpuMsPerInvocation],
    ['invocations/s', (run) => run.invocationsPerSecond],
  ];
  return measures.map(([measure, read]) => {
    const ratios = rounds.filter(({ baseline }) => read(baseline) > 0).map(({ ours, baseline }) => round(read(ours) / read(baseline)));
    return { measure, rounds: ratios, median: median(ratios) };
  });
}

/** One measured run of the build in `dist`, in a child process of its own. */
function measureIn(dist: string, invocations: number, warmupInvocations: number): Promise<PairRun> {
  const script = `
    const { measure } = require(${JSON.stringify(join(dist, 'bench', 'full-path.bench.js'))});
    measure({ invocations: ${invocations}, inFlight: ${IN_FLIGHT}, providerLatencyMs: ${PROVIDER_LATENCY_MS}, warmupInvocations: ${warmupInvocations}, synchronous: 'FULL' })
      .then((result) => { process.stdout.write(JSON.stringify(result) + '\\n'); process.exit(0); }, (error) => { console.error(error); process.exit(1); });
  `;
  return new Promise((resolvePromise, reject) => {
    execFile(process.execPath, ['-e', script], { maxBuffer: MAX_CHILD_OUTPUT_BYTES }, (error, stdout, stderr) => {
      if (error !== null) return reject(new Error(`the run of ${dist} failed: ${stderr.trim() || error.message}`));
      const result = JSON.parse(stdout.trim().split('\n').pop()!) as FullPathResult;
      resolvePromise({
        overheadP50Ms: result.overheadP50Ms,
        overheadP99Ms: result.overheadP99Ms,
        cpuMsPerInvocation: round((result.cpuSeconds * 1000) / result.invocations),
        invocationsPerSecond: result.invocationsPerSecond,
      });
    });
  });
}

function positiveInteger(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}: expected a positive integer, got "${process.env[name]}"`);
  return value;
}

export async function run(): Promise<FullPathPairReport> {
  const named = process.env.BENCH_FULL_PATH_BASELINE;
  if (named === undefined) throw new Error('full-path-pair compares with a baseline: set BENCH_FULL_PATH_BASELINE to a built checkout or its dist directory');
  const baselineDist = fullPathDist(named);
  const ourDist = resolve(__dirname, '..');
  const rounds = positiveInteger('BENCH_FULL_PATH_PAIR_ROUNDS', DEFAULT_ROUNDS);
  const invocations = positiveInteger('BENCH_FULL_PATH_PAIR_INVOCATIONS', DEFAULT_INVOCATIONS);
  const warmup = positiveInteger('BENCH_WARMUP_INVOCATIONS', DEFAULT_WARMUP_INVOCATIONS);
  const measured: Array<{ ours: PairRun; baseline: PairRun }> = [];
  for (let index = 0; index < rounds; index++) {
    // The order swaps every round, so neither build always runs first.
    const first = index % 2 === 0 ? ourDist : baselineDist;
    const a = await measureIn(first, invocations, warmup);
    const b = await measureIn(first === ourDist ? baselineDist : ourDist, invocations, warmup);
    const pair = first === ourDist ? { ours: a, baseline: b } : { ours: b, baseline: a };
    measured.push(pair);
    console.log(`round ${index + 1}: overhead p50 ${pair.ours.overheadP50Ms} / ${pair.baseline.overheadP50Ms} ms, p99 ${pair.ours.overheadP99Ms} / ${pair.baseline.overheadP99Ms} ms (this build / baseline)`);
  }
  const ratios = pairRatios(measured);
  console.table(Object.fromEntries(ratios.map(({ measure, rounds: each, median: middle }) => [measure, { 'this / baseline, median': middle, rounds: each.join(', ') }])));
  return { baselineDist, invocationsPerRun: invocations, rounds: measured, ratios };
}
