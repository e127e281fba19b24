/**
 * Whether "llm-ledger at `factor` × Portkey's calls per second" can be met at all in a scenario: no
 * proxy makes more calls per second than the direct calls to the same upstream at the same concurrency
 * (closed loops over a fixed upstream delay make at most connections ÷ delay). When the target is
 * above the direct calls' rate, the benchmark says so beside the verdict instead of only "MISSED".
 */
export interface SaturationGoal {
  /** `factor` × Portkey's calls per second. */
  readonly targetCallsPerSecond: number;
  /** False when the target is above what the direct calls made in the same scenario. */
  readonly reachable: boolean;
}

export function saturationGoal(portkeyCallsPerSecond: number, directCallsPerSecond: number | undefined, factor: number): SaturationGoal {
  const targetCallsPerSecond = Math.round(portkeyCallsPerSecond * factor);
  return { targetCallsPerSecond, reachable: directCallsPerSecond === undefined || targetCallsPerSecond <= directCallsPerSecond };
}
