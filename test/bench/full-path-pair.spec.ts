import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fullPathDist, pairRatios, type PairRun } from '../../bench/full-path-pair.bench';

const run = (overheadP50Ms: number, cpuMsPerInvocation = 1.2, invocationsPerSecond = 400): PairRun => ({
  overheadP50Ms,
  overheadP99Ms: overheadP50Ms * 4,
  cpuMsPerInvocation,
  invocationsPerSecond,
});

describe('issue 35: the full path compared with a baseline build round by round (npm run bench -- full-path-pair)', () => {
  it('divides this build by the baseline of the same round, and takes the median of the rounds', () => {
    const ratios = pairRatios([
      { ours: run(6, 1.3, 400), baseline: run(8, 1.2, 400) },
      { ours: run(9, 1.2, 390), baseline: run(10, 1.2, 390) },
      { ours: run(5, 1.1, 410), baseline: run(10, 1.0, 400) },
    ]);
    const measure = (name: string) => ratios.find((one) => one.measure === name)!;
    expect(measure('overhead p50')).toEqual({ measure: 'overhead p50', rounds: [0.75, 0.9, 0.5], median: 0.75 });
    expect(measure('overhead p99').median).toBe(0.75);
    expect(measure('CPU per invocation')).toEqual({ measure: 'CPU per invocation', rounds: [1.083, 1, 1.1], median: 1.083 });
    expect(measure('invocations/s').rounds).toEqual([1, 1, 1.025]);
  });

  it('leaves out a round whose baseline measured zero', () => {
    const ratios = pairRatios([
      { ours: run(6), baseline: run(0) },
      { ours: run(6), baseline: run(12) },
    ]);
    expect(ratios.find((one) => one.measure === 'overhead p50')).toEqual({ measure: 'overhead p50', rounds: [0.5], median: 0.5 });
  });

  it('finds the baseline’s built benchmark in a checkout or in its dist directory, and names the variable when there is none', () => {
    const checkout = mkdtempSync(join(tmpdir(), 'full-path-baseline-'));
    try {
      mkdirSync(join(checkout, 'dist', 'bench'), { recursive: true });
      writeFileSync(join(checkout, 'dist', 'bench', 'full-path.bench.js'), '');
      expect(fullPathDist(checkout)).toBe(join(checkout, 'dist'));
      expect(fullPathDist(join(checkout, 'dist'))).toBe(join(checkout, 'dist'));
      expect(() => fullPathDist(join(checkout, 'missing'))).toThrow(/BENCH_FULL_PATH_BASELINE: no built benchmark under/);
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });
});
