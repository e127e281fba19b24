/**
 * A change measured against the build before it in one gateway run: `llm-ledger (baseline)` is
 * another build of the service (BENCH_GATEWAY_BASELINE), measured in the same rounds as this one,
 * so both meet the same machine. On this project's shared machine one round's added p50 moves by
 * ±40 % between two runs of the same build, so a change is read from the median of many rounds.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { PeerName } from './peers';
import { round } from './percentiles';

/** What the comparison reads of a row of the gateway benchmark. */
export interface ComparedRow {
  /** The scenario's label, round included: this build and the baseline meet in the same one. */
  readonly scenario: string;
  /** The scenario without the round or the concurrency. */
  readonly base: string;
  readonly concurrency: number;
  readonly peer: PeerName;
  readonly available: boolean;
  readonly overheadP50Ms?: number;
  readonly overheadP99Ms?: number;
  readonly load?: { readonly callsPerSecond: number };
  readonly peerCpuMsPerCall?: number;
}

const BASELINE_PEER: PeerName = 'llm-ledger (baseline)';
const THIS_BUILD_PEER: PeerName = 'llm-ledger';

/** This build over the baseline for one measure: each round's ratio (undefined where either is missing) and their median. */
export interface MeasureAgainstBaseline {
  readonly measure: 'added p50' | 'added p99' | 'calls/s' | 'CPU per call';
  readonly rounds: ReadonlyArray<number | undefined>;
  readonly median: number | undefined;
}

export interface ScenarioAgainstBaseline {
  /** The scenario and its connections, e.g. `50 ms, not streamed, 16 connections`. */
  readonly scenario: string;
  readonly measures: readonly MeasureAgainstBaseline[];
}

/**
 * For every scenario the baseline was measured in: this build's added p50 and p99 (over the same
 * round's direct calls), calls/s and CPU per call, each over the baseline's in the same round, and
 * the median of the rounds. Below 1 is better for latency and CPU, above 1 for calls/s.
 */
export function againstBaseline(rows: readonly ComparedRow[]): ScenarioAgainstBaseline[] {
  const pairs = new Map<string, Array<readonly [ComparedRow, ComparedRow]>>();
  for (const baseline of rows.filter((row) => row.peer === BASELINE_PEER && row.available)) {
    const ours = rows.find((row) => row.scenario === baseline.scenario && row.peer === THIS_BUILD_PEER && row.available);
    if (ours === undefined) continue;
    const key = `${baseline.base}, ${baseline.concurrency} connections`;
    pairs.set(key, [...(pairs.get(key) ?? []), [ours, baseline]]);
  }
  const measures: ReadonlyArray<readonly [MeasureAgainstBaseline['measure'], (row: ComparedRow) => number | undefined]> = [
    ['added p50', (row) => row.overheadP50Ms],
    ['added p99', (row) => row.overheadP99Ms],
    ['calls/s', (row) => row.load?.callsPerSecond],
    ['CPU per call', (row) => row.peerCpuMsPerCall],
  ];
  return [...pairs].map(([scenario, rounds]) => ({
    scenario,
    measures: measures.map(([measure, read]) => {
      const ratios = rounds.map(([ours, baseline]) => ratio(read(ours), read(baseline)));
      return { measure, rounds: ratios, median: median(ratios) };
    }),
  }));
}

/** `value / base` to three decimals; undefined when either is unknown or the base is not above zero. */
function ratio(value: number | undefined, base: number | undefined): number | undefined {
  return value === undefined || base === undefined || base <= 0 ? undefined : round(value / base);
}

/** The median of the known values (the mean of the middle two for an even count); undefined if none. */
export function median(values: ReadonlyArray<number | undefined>): number | undefined {
  const known = values.filter((value): value is number => value !== undefined).sort((a, b) => a - b);
  if (known.length === 0) return undefined;
  const middle = Math.floor(known.length / 2);
  return round(known.length % 2 === 1 ? known[middle]! : (known[middle - 1]! + known[middle]!) / 2);
}

/**
 * The `dist` directory of the build BENCH_GATEWAY_BASELINE names: a checkout built with
 * `npm run build:service` (its `dist`), or that `dist` directory itself.
 */
export function baselineDist(named: string): string {
  return builtDist(named, 'src/main.js', 'BENCH_GATEWAY_BASELINE', 'service');
}

/**
 * The `dist` directory of another build that `variable` names, the one holding `file`: a checkout
 * built with `npm run build:service` (its `dist`), or that `dist` directory itself.
 */
export function builtDist(named: string, file: string, variable: string, what: string): string {
  for (const candidate of [join(resolve(named), 'dist'), resolve(named)]) {
    if (existsSync(join(candidate, file))) return candidate;
  }
  throw new Error(`${variable}: no built ${what} under "${named}" (expected dist/${file} or ${file}; run npm run build:service there)`);
}
