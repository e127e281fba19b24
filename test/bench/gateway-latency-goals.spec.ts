import { latencyGoalsOverRounds, type LatencyRow } from '../../bench/gateway/latency-goals';

const GOALS = { concurrency: 16, upstreamDelayMs: 50, addedP50Ms: 2, addedP99Ms: 10 };

function row(peer: string, p50: number | undefined, p99: number | undefined, overrides: Partial<LatencyRow> = {}): LatencyRow {
  return {
    base: '50 ms, not streamed',
    delayMs: 50,
    concurrency: 16,
    peer,
    available: true,
    ...(p50 === undefined ? {} : { overheadP50Ms: p50 }),
    ...(p99 === undefined ? {} : { overheadP99Ms: p99 }),
    ...overrides,
  };
}

describe('the gateway benchmark judges issue 35’s latency goals over the rounds of one run', () => {
  it('gives each llm-ledger peer the median of its rounds and how many rounds met each goal (2026-12-05: main’s p99 at 8.6–27.8 ms in rounds of one run)', () => {
    const rows = [
      row('llm-ledger', 1.6, 8.6),
      row('llm-ledger', 2.2, 11.5),
      row('llm-ledger', 3.2, 27.8),
      row('llm-ledger', 1.9, 15.0),
      row('llm-ledger, 2 workers', 2.8, 14.8),
      row('llm-ledger, 2 workers', 4.2, 20.4),
      row('llm-ledger, 2 workers', 5.1, 20.0),
    ];
    expect(latencyGoalsOverRounds(rows, GOALS)).toEqual([
      { scenario: '50 ms, not streamed | llm-ledger', rounds: 4, addedP50: { median: 2.05, metInRounds: 2 }, addedP99: { median: 13.25, metInRounds: 1 } },
      { scenario: '50 ms, not streamed | llm-ledger, 2 workers', rounds: 3, addedP50: { median: 4.2, metInRounds: 0 }, addedP99: { median: 20, metInRounds: 0 } },
    ]);
  });

  it('judges only llm-ledger’s rows at the goals’ load, measured, in more than one round', () => {
    const rows = [
      row('Portkey', 1.5, 6.0),
      row('Portkey', 1.4, 5.0),
      row('llm-ledger', 1.0, 5.0, { concurrency: 64 }),
      row('llm-ledger', 1.0, 5.0, { concurrency: 64 }),
      row('llm-ledger', 1.0, 5.0, { delayMs: 0, base: '0 ms, not streamed' }),
      row('llm-ledger', 1.0, 5.0, { delayMs: 0, base: '0 ms, not streamed' }),
      row('llm-ledger', 1.0, 5.0, { base: '50 ms, streamed' }),
      row('llm-ledger', 1.0, 5.0, { available: false }),
      row('llm-ledger (baseline)', 1.0, undefined),
      row('llm-ledger (baseline)', 1.0, 4.0),
    ];
    expect(latencyGoalsOverRounds(rows, GOALS)).toEqual([]);
  });
});
