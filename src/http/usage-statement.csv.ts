/**
 * A usage statement as `text/csv` (RFC 4180): one line per row of the JSON answer, in the same order,
 * with the same figures. Key columns are the grouped ones; every outcome, refusal reason and token
 * kind has its own column, and `usageSaturated` (`true` when a token total stopped at
 * Number.MAX_SAFE_INTEGER) ends each line, so the header does not depend on the data.
 *
 * Text cells come from people: model names from operators, gateway key names from customers'
 * administrators, user ids and tags from callers. A cell a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`, a
 * tab or a CR) is written with a leading `'`, as OWASP recommends, by csv-stringify's
 * `escape_formulas`; the JSON answer keeps the value unchanged.
 */
import { stringify } from 'csv-stringify/sync';
import { ADMISSION_REFUSAL_REASONS } from '../accounts/admission.policy';
import { NO_OUTCOME } from '../../projections';
import type { UsageGroupBy, UsageStatement, UsageStatementRow } from '../queries/get-usage.query';
import { OUTCOMES } from '../runtime/conversation.types';
import { USAGE_KINDS } from '../runtime/provider.port';

const OUTCOME_COLUMNS = [...OUTCOMES, NO_OUTCOME] as const;

/** The text columns of each grouping, in the rows' order. */
const KEY_COLUMNS: readonly (readonly [UsageGroupBy, readonly ('day' | 'operationId' | 'model' | 'keyId' | 'keyName' | 'teamId' | 'userId' | 'tag')[]])[] = [
  ['day', ['day']],
  ['operation', ['operationId']],
  ['model', ['model']],
  ['key', ['keyId', 'keyName']],
  ['team', ['teamId']],
  ['user', ['userId']],
  ['tag', ['tag']],
];

export function usageStatementCsv(statement: UsageStatement): string {
  const keys = KEY_COLUMNS.filter(([group]) => statement.groupBy.includes(group)).flatMap(([, columns]) => columns);
  const header = [
    ...keys,
    'credits',
    'settled',
    ...OUTCOME_COLUMNS.map((outcome) => `outcome_${outcome}`),
    'refused',
    ...ADMISSION_REFUSAL_REASONS.map((reason) => `refused_${reason}`),
    ...USAGE_KINDS,
    'usageSaturated',
  ];
  const line = (row: UsageStatementRow): (string | number)[] => [
    ...keys.map((key) => row[key] ?? ''),
    row.credits,
    row.settled,
    ...OUTCOME_COLUMNS.map((outcome) => row.outcomes[outcome] ?? 0),
    row.refused,
    ...ADMISSION_REFUSAL_REASONS.map((reason) => row.refusals[reason] ?? 0),
    ...USAGE_KINDS.map((kind) => row.tokens[kind]),
    row.usageSaturated === true ? 'true' : 'false',
  ];
  return stringify([header, ...statement.rows.map(line)], {
    escape_formulas: true,
    record_delimiter: 'windows',
    // A lone CR or LF inside a cell is quoted too, so every reader sees one record per line.
    quoted_match: /[\r\n]/,
  });
}
