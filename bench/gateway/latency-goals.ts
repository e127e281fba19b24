/**
 * Issue 35's latency goals judged over the rounds of one run (BENCH_GATEWAY_ROUNDS): on this project's
 * shared machine one build's added p99 at 16 connections and 50 ms moved from 8.6 to 27.8 ms between
 * rounds of 3 s in one session (bench/README.md "The p99's spread on one machine"), so a verdict from
 * one round says more about the minute it ran in than about the build. Per scenario and llm-ledger
 * peer: the median of the rounds' added p50 and p99, and in how many rounds each goal was met.
 */
import { median } from './against-baseline';

/** What the verdict reads of a row of the gateway benchmark. */
export interface LatencyRow {
  /** The scenario without the round or the concurrency. */
  readonly base: string;
  readonly delayMs: number;
  readonly concurrency: number;
  readonly peer: string;
  readonly available: boolean;
  readonly overheadP50Ms?: number;
  readonly overheadP99Ms?: number;
}

/** Where the latency goals are judged, and their bounds, in milliseconds of added latency. */
export interface LatencyGoals {
  readonly concurrency: number;
  readonly upstreamDelayMs: number;
  readonly addedP50Ms: number;
  readonly addedP99Ms: number;
}

/** One goal over the rounds: the median of the rounds' values and how many of them were within the bound. */
export interface GoalOverRounds {
  readonly median: number;
  readonly metInRounds: number;
}

export interface LatencyGoalsOverRounds {
  /** `<scenario> | <peer>`, e.g. `50 ms, not streamed | llm-ledger`. */
  readonly scenario: string;
  readonly rounds: number;
  readonly addedP50: GoalOverRounds;
  readonly addedP99: GoalOverRounds;
}

/**
 * For each scenario and llm-ledger peer measured at the goals' concurrency and upstream delay in more
 * than one round, with both percentiles known in each: the goals over those rounds.
 */
export function latencyGoalsOverRounds(rows: readonly LatencyRow[], goals: LatencyGoals): LatencyGoalsOverRounds[] {
  const rounds = new Map<string, Array<{ readonly p50: number; readonly p99: number }>>();
  for (const row of rows) {
    if (!row.peer.startsWith('llm-ledger') || !row.available || row.concurrency !== goals.concurrency || row.delayMs !== goals.upstreamDelayMs) continue;
    if (row.overheadP50Ms === undefined || row.overheadP99Ms === undefined) continue;
    const scenario = `${row.base} | ${row.peer}`;
    rounds.set(scenario, [...(rounds.get(scenario) ?? []), { p50: row.overheadP50Ms, p99: row.overheadP99Ms }]);
  }
  return [...rounds]
    .filter(([, measured]) => measured.length > 1)
    .map(([scenario, measured]) => ({
      scenario,
      rounds: measured.length,
      addedP50: overRounds(measured.map(({ p50 }) => p50), goals.addedP50Ms),
      addedP99: overRounds(measured.map(({ p99 }) => p99), goals.addedP99Ms),
    }));
}

function overRounds(values: readonly number[], bound: number): GoalOverRounds {
  return { median: median(values)!, metInRounds: values.filter((value) => value <= bound).length };
}
