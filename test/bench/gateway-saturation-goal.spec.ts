import { saturationGoal } from '../../bench/gateway/saturation-goal';

describe('the gateway benchmark judges "1.5 × Portkey at saturation" against what the direct calls make', () => {
  it('says the goal cannot be reached when it is above the direct calls’ rate (2026-12-05: Portkey 1,142/s, direct 1,249/s at 64 connections and 50 ms)', () => {
    expect(saturationGoal(1_142, 1_249, 1.5)).toEqual({ targetCallsPerSecond: 1_713, reachable: false });
  });

  it('leaves it reachable at or below the direct calls’ rate, or when no direct calls were measured', () => {
    expect(saturationGoal(649, 11_560, 1.5)).toEqual({ targetCallsPerSecond: 974, reachable: true });
    expect(saturationGoal(800, 1_200, 1.5)).toEqual({ targetCallsPerSecond: 1_200, reachable: true });
    expect(saturationGoal(1_142, undefined, 1.5)).toEqual({ targetCallsPerSecond: 1_713, reachable: true });
  });
});
