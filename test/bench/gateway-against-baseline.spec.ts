import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { againstBaseline, baselineDist, median, type ComparedRow } from '../../bench/gateway/against-baseline';
import type { PeerName } from '../../bench/gateway/peers';

const row = (round: number, peer: PeerName, added: number, callsPerSecond: number, extra: Partial<ComparedRow> = {}): ComparedRow => ({
  scenario: `50 ms, not streamed, round ${round}`,
  base: '50 ms, not streamed',
  concurrency: 16,
  peer,
  available: true,
  overheadP50Ms: added,
  overheadP99Ms: added * 3,
  load: { callsPerSecond },
  peerCpuMsPerCall: 2,
  ...extra,
});

describe('the gateway benchmark compares a build with its baseline round by round', () => {
  it('divides this build by the baseline measured in the same round, and takes the median of the rounds', () => {
    const rows = [
      row(1, 'direct', 0, 300),
      row(1, 'llm-ledger', 10, 220),
      row(1, 'llm-ledger (baseline)', 20, 200),
      row(2, 'llm-ledger (baseline)', 10, 200),
      row(2, 'llm-ledger', 12, 210),
      row(3, 'llm-ledger', 9, 200),
      row(3, 'llm-ledger (baseline)', 10, 250),
    ];
    const [scenario, ...others] = againstBaseline(rows);
    expect(others).toEqual([]);
    expect(scenario!.scenario).toBe('50 ms, not streamed, 16 connections');
    const measure = (name: string) => scenario!.measures.find((one) => one.measure === name)!;
    expect(measure('added p50')).toEqual({ measure: 'added p50', rounds: [0.5, 1.2, 0.9], median: 0.9 });
    expect(measure('calls/s')).toEqual({ measure: 'calls/s', rounds: [1.1, 1.05, 0.8], median: 1.05 });
    expect(measure('CPU per call').median).toBe(1);
  });

  it('leaves out a round where either build was unavailable or a figure unknown, and a zero baseline', () => {
    const rows = [
      row(1, 'llm-ledger', 10, 220),
      row(1, 'llm-ledger (baseline)', 20, 200, { available: false }),
      row(2, 'llm-ledger', 12, 210, { overheadP50Ms: undefined }),
      row(2, 'llm-ledger (baseline)', 10, 200),
      row(3, 'llm-ledger', 9, 200),
      row(3, 'llm-ledger (baseline)', 0, 250),
    ];
    const [scenario] = againstBaseline(rows);
    const added = scenario!.measures.find((one) => one.measure === 'added p50')!;
    expect(added.rounds).toEqual([undefined, undefined]);
    expect(added.median).toBeUndefined();
    expect(scenario!.measures.find((one) => one.measure === 'calls/s')!.rounds).toEqual([1.05, 0.8]);
  });

  it('says nothing without a baseline row', () => {
    expect(againstBaseline([row(1, 'llm-ledger', 10, 220)])).toEqual([]);
  });

  it('takes the mean of the middle two for an even count', () => {
    expect(median([4, undefined, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeUndefined();
  });
});

describe('BENCH_GATEWAY_BASELINE names a build', () => {
  const directory = mkdtempSync(join(tmpdir(), 'ledger-baseline-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('as a checkout whose build is in dist, or as the dist directory itself', () => {
    mkdirSync(join(directory, 'checkout', 'dist', 'src'), { recursive: true });
    writeFileSync(join(directory, 'checkout', 'dist', 'src', 'main.js'), '');
    expect(baselineDist(join(directory, 'checkout'))).toBe(join(directory, 'checkout', 'dist'));
    expect(baselineDist(join(directory, 'checkout', 'dist'))).toBe(join(directory, 'checkout', 'dist'));
  });

  it('and refuses a directory with no built service, saying what it looked for', () => {
    expect(() => baselineDist(join(directory, 'nothing'))).toThrow(/BENCH_GATEWAY_BASELINE: no built service under .*nothing.*dist\/src\/main\.js/);
  });
});
