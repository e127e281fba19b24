import { usageStatementCsv } from '../../src/http/usage-statement.csv';
import type { UsageStatement, UsageStatementRow } from '../../src/queries/get-usage.query';
import { NO_USAGE } from '../../src/runtime/usage';

/** Parses RFC 4180 text: quoted fields with doubled quotes, CRLF between records. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') fields.push(field), (field = '');
    else if (c === '\r' && text[i + 1] === '\n') records.push([...fields, field]), (fields = []), (field = ''), i++;
    else field += c;
  }
  return records;
}

const row = (text: string): UsageStatementRow => ({
  day: '2026-12-01',
  operationId: text,
  model: text,
  keyId: text,
  keyName: text,
  credits: 12,
  settled: 1,
  outcomes: { completed: 1 },
  refused: 0,
  refusals: {},
  tokens: { ...NO_USAGE, inputTokens: 5 },
});
const statementOf = (rows: UsageStatementRow[]): UsageStatement => ({
  organizationId: 'acme',
  from: '2026-12-01',
  to: '2026-12-01',
  groupBy: ['key', 'day', 'model', 'operation'],
  rows,
  totals: row(''),
});

// The cells of the spreadsheet formula-injection finding (issue 24, finding 2), and the other leading characters OWASP names.
const FORMULAS = ['-2+3', "+1+cmd|' /C calc'!A0", '\t=1+1', '=HYPERLINK("http://x","y")', '@SUM(1,2)', '\r=1+1', '=1+1'];

describe('the statement CSV writes text cells as data, never as spreadsheet formulas (issue 24 finding 2; docs/http.md)', () => {
  it.each(FORMULAS)('neutralises %j in every text column with a leading quote', (text) => {
    const [header, cells] = parseCsv(usageStatementCsv(statementOf([row(text)])));
    const byName = Object.fromEntries(header!.map((name, index) => [name, cells![index]]));
    for (const column of ['operationId', 'model', 'keyId', 'keyName']) expect(byName[column]).toBe(`'${text}`);
    expect(byName).toMatchObject({ day: '2026-12-01', credits: '12', settled: '1', outcome_completed: '1', inputTokens: '5' });
  });

  it('leaves ordinary text and every figure as it is, one record per row, in the rows’ order', () => {
    const text = usageStatementCsv(statementOf([row('ci-bot'), row('a, "quoted" name')]));
    const records = parseCsv(text);
    expect(records).toHaveLength(3);
    expect(records[0]!.slice(0, 6)).toEqual(['day', 'operationId', 'model', 'keyId', 'keyName', 'credits']);
    expect(records[1]!.slice(1, 5)).toEqual(['ci-bot', 'ci-bot', 'ci-bot', 'ci-bot']);
    expect(records[2]![4]).toBe('a, "quoted" name');
    expect(text.endsWith('\r\n')).toBe(true);
  });

  it('names the key columns only when the statement is grouped by key', () => {
    const header = parseCsv(usageStatementCsv({ ...statementOf([]), groupBy: ['day'] }))[0]!;
    expect(header.slice(0, 2)).toEqual(['day', 'credits']);
    expect(header).not.toContain('keyId');
  });
});
