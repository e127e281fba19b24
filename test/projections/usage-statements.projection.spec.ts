/**
 * The usage statements never stop on a sum (docs/http.md, README "Invoicing"): counts a log already
 * holds (written before the gateway bounded reported usage, or recorded by an operation's provider)
 * may sum past the exact-integer range; the line, the statement's rows and its CSV then show
 * Number.MAX_SAFE_INTEGER for that kind and say so with `usageSaturated`, and every other figure stays exact.
 */
import { USAGE_DAY_COLLECTION, usageDayId, usageStatementsProjection, type UsageDayView } from '../../projections';
import { usageStatementCsv } from '../../src/http/usage-statement.csv';
import { statementRows, type UsageGroupBy } from '../../src/queries/get-usage.query';
import type { Usage } from '../../src/runtime';
import { completed, dispatched, EventLog, figures, gatewayEstimated, reserved, settled, usage } from './support/invocation-log';
import { project } from './support/in-memory-read-model';

const MAX = Number.MAX_SAFE_INTEGER;
const DAY = '2025-03-01';

/** A gateway call by key-1 settled on DAY, charged `charge`, whose totals are `totals`. */
function settledCall(log: EventLog, invocationId: string, totals: Usage, charge = 500): EventLog {
  return log.invocation(
    invocationId,
    gatewayEstimated(500, {}, { invocationId }),
    reserved(),
    dispatched(),
    completed('completed', figures({ usageTotals: totals, spentCredits: charge })),
    settled(9, charge),
  );
}

function dayLine(log: EventLog): UsageDayView {
  const line = project(usageStatementsProjection, log.events).get<UsageDayView>(USAGE_DAY_COLLECTION, usageDayId('acme', DAY, 'gateway.anthropic-messages', 'claude-sonnet-5-5', 'key-1'));
  if (line === undefined) throw new Error('no line for key-1 on the day');
  return line;
}

const cacheReads = (cacheReadTokens: number, inputTokens = 10): Usage => ({ ...usage(inputTokens, 5), cacheReadTokens });

describe('the usage statements never fault on a sum past the exact-integer range (docs/http.md)', () => {
  it('sums counts that reach Number.MAX_SAFE_INTEGER exactly, unmarked', () => {
    const log = settledCall(settledCall(new EventLog(), 'inv-1', cacheReads(MAX - 1)), 'inv-2', cacheReads(1));
    const line = dayLine(log);
    expect(line.tokens).toEqual({ ...usage(20, 10), cacheReadTokens: MAX });
    expect(line).not.toHaveProperty('usageSaturated');
    expect(line).toMatchObject({ credits: 1_000, settled: 2 });
  });

  it('a log holding 2^53−1 cache-read tokens twice: the line saturates that kind at the bound and says so, every other figure exact', () => {
    const log = settledCall(settledCall(new EventLog(), 'inv-1', cacheReads(MAX)), 'inv-2', cacheReads(MAX));
    const line = dayLine(log);
    expect(line.tokens).toEqual({ ...usage(20, 10), cacheReadTokens: MAX });
    expect(line).toMatchObject({ usageSaturated: true, credits: 1_000, settled: 2, outcomes: { completed: 2 } });
    // It stays saturated and marked as more calls add to it.
    const later = dayLine(settledCall(log, 'inv-3', cacheReads(7, 4)));
    expect(later.tokens).toEqual({ ...usage(24, 15), cacheReadTokens: MAX });
    expect(later).toMatchObject({ usageSaturated: true, credits: 1_500, settled: 3 });
  });

  it('the statement sums lines past the range the same way: its rows, its totals and its CSV say the tokens saturated', () => {
    const near = (day: string, cacheReadTokens: number): UsageDayView => ({
      organizationId: 'acme',
      day,
      operationId: 'gateway.anthropic-messages',
      model: 'claude-sonnet-5-5',
      keyId: 'key-1',
      keyName: 'ci-bot',
      credits: 700,
      settled: 1,
      outcomes: { completed: 1 },
      refused: 0,
      refusals: {},
      tokens: cacheReads(cacheReadTokens),
    });
    const lines = [near('2025-03-01', MAX - 3), near('2025-03-02', 3), near('2025-03-03', 1)];
    const { rows, totals } = statementRows(lines, ['day']);
    expect(rows.map((row) => [row.tokens.cacheReadTokens, row.usageSaturated])).toEqual([
      [MAX - 3, undefined],
      [3, undefined],
      [1, undefined],
    ]);
    expect(totals).toMatchObject({ credits: 2_100, settled: 3, usageSaturated: true, tokens: { ...usage(30, 15), cacheReadTokens: MAX } });
    // Exactly at the bound is a sum, not a saturation; a line already marked marks its row.
    expect(statementRows(lines.slice(0, 2), []).totals).not.toHaveProperty('usageSaturated');
    const marked = statementRows([{ ...near('2025-03-01', MAX), usageSaturated: true }], ['day']);
    expect(marked.rows[0]).toMatchObject({ usageSaturated: true });

    const csvCells = (groupBy: UsageGroupBy[]): string[][] => {
      const [header, ...records] = usageStatementCsv({ organizationId: 'acme', from: '2025-03-01', to: '2025-03-03', groupBy, ...statementRows(lines, groupBy) })
        .trimEnd()
        .split('\r\n')
        .map((record) => record.split(','));
      return records.map((record) => [record[header!.indexOf('cacheReadTokens')]!, record[header!.indexOf('usageSaturated')]!]);
    };
    expect(csvCells(['day'])).toEqual([
      [String(MAX - 3), 'false'],
      ['3', 'false'],
      ['1', 'false'],
    ]);
    expect(csvCells([])).toEqual([[String(MAX), 'true']]);
  });
});
