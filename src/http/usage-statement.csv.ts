/**
 * A usage statement as `text/csv` (RFC 4180): one line per row of the JSON answer, in the same order,
 * with the same figures. Key columns are the grouped ones; every outcome, refusal reason and token
 * kind has its own column, so the header does not depend on the data.
 */
import { ADMISSION_REFUSAL_REASONS } from '../accounts/admission.policy';
import { NO_OUTCOME } from '../../projections';
import type { UsageStatement, UsageStatementRow } from '../queries/get-usage.query';
import { OUTCOMES } from '../runtime/conversation.types';
import { USAGE_KINDS } from '../runtime/provider.port';

const OUTCOME_COLUMNS = [...OUTCOMES, NO_OUTCOME] as const;

export function usageStatementCsv(statement: UsageStatement): string {
  const keys = (['day', 'operationId', 'model'] as const).filter((key) =>
    statement.groupBy.includes(key === 'operationId' ? 'operation' : key),
  );
  const header = [
    ...keys,
    'credits',
    'settled',
    ...OUTCOME_COLUMNS.map((outcome) => `outcome_${outcome}`),
    'refused',
    ...ADMISSION_REFUSAL_REASONS.map((reason) => `refused_${reason}`),
    ...USAGE_KINDS,
  ];
  const line = (row: UsageStatementRow): string[] => [
    ...keys.map((key) => row[key] ?? ''),
    String(row.credits),
    String(row.settled),
    ...OUTCOME_COLUMNS.map((outcome) => String(row.outcomes[outcome] ?? 0)),
    String(row.refused),
    ...ADMISSION_REFUSAL_REASONS.map((reason) => String(row.refusals[reason] ?? 0)),
    ...USAGE_KINDS.map((kind) => String(row.tokens[kind])),
  ];
  return [header, ...statement.rows.map(line)].map((fields) => fields.map(csvField).join(',')).join('\r\n') + '\r\n';
}

function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}
