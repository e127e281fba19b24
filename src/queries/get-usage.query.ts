import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { USAGE_DAY_COLLECTION, USAGE_STATEMENTS_PROJECTION, usageDayId, type StatementOutcome, type UsageDayView } from '../../projections';
import { ValidationError } from '../domain/domain.errors';
import { FieldChecks } from '../domain/field-checks';
import { LiveProjections, MAX_LIST_LIMIT, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
import type { Usage } from '../runtime/provider.port';
import { addUsageSaturating, NO_USAGE } from '../runtime/usage';
import { catchUp } from './read-model-catch-up';

/** The longest period one statement covers, in days. */
export const MAX_STATEMENT_DAYS = 366;
/**
 * Ways a statement's rows may be grouped; `key`: by gateway key, `team`: by the team of the calls' key,
 * `user`: by the calls' `metadata.user_id`, `tag`: by each of the calls' `x-ledger-tags`
 * (docs/gateway.md "Who spent it").
 */
export const USAGE_GROUP_BY = ['operation', 'model', 'day', 'key', 'team', 'user', 'tag'] as const;
export type UsageGroupBy = (typeof USAGE_GROUP_BY)[number];

export interface UsagePeriod {
  /** First UTC day, `YYYY-MM-DD`, included. */
  readonly from: string;
  /** Last UTC day, `YYYY-MM-DD`, included. */
  readonly to: string;
  /**
   * Any subset, in any order; empty: one row of totals. Rows are always ordered day, operation, model,
   * key, team, user, tag. With `tag`, a call with several tags counts in each of their rows, so those rows
   * may add up to more than `totals` (which count each call once).
   */
  readonly groupBy?: readonly UsageGroupBy[];
}

/** One line of a statement: the grouped keys it has, and its sums. */
export interface UsageStatementRow {
  readonly day?: string;
  readonly operationId?: string;
  readonly model?: string;
  /** Grouped by `key`: the gateway key's id, empty for invocations no key made (operations'). */
  readonly keyId?: string;
  /** Grouped by `key`: the key's name on its latest line in the period, empty with an empty `keyId`. */
  readonly keyName?: string;
  /** Grouped by `team`: the team of the calls' key when they were made, empty for none (operations' included). */
  readonly teamId?: string;
  /** Grouped by `user`: the calls' `metadata.user_id`, empty for calls that sent none. */
  readonly userId?: string;
  /** Grouped by `tag`: one of the calls' tags, empty for calls that sent none. */
  readonly tag?: string;
  readonly credits: number;
  readonly settled: number;
  readonly outcomes: Readonly<Partial<Record<StatementOutcome, number>>>;
  readonly refused: number;
  readonly refusals: Readonly<Partial<Record<string, number>>>;
  /** Each kind at most Number.MAX_SAFE_INTEGER: a sum past it is that bound (usageSaturated). */
  readonly tokens: Usage;
  /** Present, true, when some kind's tokens passed Number.MAX_SAFE_INTEGER, on a line or in this sum. */
  readonly usageSaturated?: true;
  /** `credits` in money, exact: added by the HTTP answer when LEDGER_CREDIT_VALUE is set (docs/http.md "Money beside credits"). */
  readonly money?: { readonly currency: string; readonly credits: string };
}

export interface UsageStatement {
  readonly organizationId: string;
  readonly from: string;
  readonly to: string;
  readonly groupBy: readonly UsageGroupBy[];
  readonly rows: readonly UsageStatementRow[];
  /** The same sums over the whole period. */
  readonly totals: UsageStatementRow;
}

/**
 * An organization's usage statement for whole UTC days (docs/embedding.md "The queries"; docs/http.md).
 * Trusted: no caller check.
 */
export class GetUsageQuery extends Query<UsageStatement> {
  constructor(
    readonly organizationId: string,
    readonly period: UsagePeriod,
  ) {
    super();
  }
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MS_PER_DAY = 86_400_000;

@QueryHandler(GetUsageQuery)
export class GetUsageHandler implements IQueryHandler<GetUsageQuery, UsageStatement> {
  constructor(
    private readonly runner: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
  ) {}

  async execute({ organizationId, period }: GetUsageQuery): Promise<UsageStatement> {
    const { from, to, groupBy } = readPeriod(period);
    await catchUp(this.runner, [USAGE_STATEMENTS_PROJECTION]);
    const lines = this.store.readSnapshot(() => this.linesOf(organizationId, from, to));
    return { organizationId, from, to, groupBy, ...statementRows(lines, groupBy) };
  }

  /** The organization's day lines from `from` to `to`, in id order (day, operation, model, key). */
  private linesOf(organizationId: string, from: string, to: string): UsageDayView[] {
    const lines: UsageDayView[] = [];
    // Every line of `from` sorts after this id (its operation id is never empty).
    let afterId = usageDayId(organizationId, from, '', '').slice(0, -2);
    for (;;) {
      const page = this.store.list<UsageDayView>(USAGE_STATEMENTS_PROJECTION, USAGE_DAY_COLLECTION, { indexKey: organizationId, afterId, limit: MAX_LIST_LIMIT });
      for (const row of page) {
        if (row.document.day > to) return lines;
        if (row.document.day >= from) lines.push(row.document);
      }
      if (page.length < MAX_LIST_LIMIT) return lines;
      afterId = page[page.length - 1]!.id;
    }
  }
}

/** A statement's rows and totals from its day lines, in day order: the sums of each group and of all. */
export function statementRows(lines: readonly UsageDayView[], groupBy: readonly UsageGroupBy[]): Pick<UsageStatement, 'rows' | 'totals'> {
  const grouped = new Map<string, UsageStatementRow>();
  for (const line of lines) {
    for (const keys of rowKeys(line, groupBy)) {
      const id = JSON.stringify(ROW_ORDER.map((key) => keys[key]));
      // Lines come in day order: a key's row takes the name of its latest line.
      grouped.set(id, { ...sum(grouped.get(id) ?? emptyRow(keys), line), ...(keys.keyName === undefined ? {} : { keyName: keys.keyName }) });
    }
  }
  const rows = [...grouped.values()].sort(compareRows);
  const totals = lines.reduce<UsageStatementRow>((total, line) => sum(total, line), emptyRow({}));
  return { rows, totals };
}

function readPeriod(period: UsagePeriod): { from: string; to: string; groupBy: UsageGroupBy[] } {
  const checks = new FieldChecks();
  const day = (field: 'from' | 'to', value: unknown): string => {
    if (!checks.present(field, value)) return '';
    if (typeof value !== 'string' || !DAY.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`)) || new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) !== value) {
      checks.add(field, 'must be a UTC day, YYYY-MM-DD');
      return '';
    }
    return value;
  };
  const from = day('from', period.from);
  const to = day('to', period.to);
  const groupBy: UsageGroupBy[] = [];
  for (const [index, value] of (Array.isArray(period.groupBy) ? period.groupBy : period.groupBy === undefined ? [] : [period.groupBy]).entries()) {
    const group = checks.oneOf(`groupBy[${index}]`, value, USAGE_GROUP_BY);
    if (checks.ok && !groupBy.includes(group)) groupBy.push(group);
  }
  checks.throwIfAny();
  const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / MS_PER_DAY + 1;
  if (days < 1) throw ValidationError.of('to', `must not be before from (${from})`);
  if (days > MAX_STATEMENT_DAYS) throw ValidationError.of('to', `must be at most ${MAX_STATEMENT_DAYS} days after from, counting both`);
  return { from, to, groupBy };
}

type RowKeys = Pick<UsageStatementRow, 'day' | 'operationId' | 'model' | 'keyId' | 'keyName' | 'teamId' | 'userId' | 'tag'>;
/** The grouped keys rows are told apart and ordered by. */
const ROW_ORDER = ['day', 'operationId', 'model', 'keyId', 'teamId', 'userId', 'tag'] as const;

/** The grouped keys of the rows a line adds to: one row, or with `tag` one per tag of its calls. */
function rowKeys(line: UsageDayView, groupBy: readonly UsageGroupBy[]): RowKeys[] {
  const keys: RowKeys = {
    ...(groupBy.includes('day') ? { day: line.day } : {}),
    ...(groupBy.includes('operation') ? { operationId: line.operationId } : {}),
    ...(groupBy.includes('model') ? { model: line.model } : {}),
    ...(groupBy.includes('key') ? { keyId: line.keyId ?? '', keyName: line.keyName ?? '' } : {}),
    ...(groupBy.includes('team') ? { teamId: line.teamId ?? '' } : {}),
    ...(groupBy.includes('user') ? { userId: line.userId ?? '' } : {}),
  };
  if (!groupBy.includes('tag')) return [keys];
  return (line.tags ?? ['']).map((tag) => ({ ...keys, tag }));
}

function emptyRow(keys: RowKeys): UsageStatementRow {
  return { ...keys, credits: 0, settled: 0, outcomes: {}, refused: 0, refusals: {}, tokens: NO_USAGE };
}

/**
 * The row with the line added. Credits cannot leave the exact-integer range: they are some of the
 * organization's settled charges, whose running total the account keeps within
 * MAX_ACCOUNT_TOTAL_CREDITS (src/accounts/account.bounds.ts); tokens saturate there instead.
 */
function sum(row: UsageStatementRow, line: UsageDayView): UsageStatementRow {
  const credits = row.credits + line.credits;
  if (!Number.isSafeInteger(credits)) throw new RangeError('statement credits left the safe integer range');
  const tokens = addUsageSaturating(row.tokens, line.tokens);
  return {
    ...row,
    credits,
    settled: row.settled + line.settled,
    outcomes: addCounts(row.outcomes, line.outcomes),
    refused: row.refused + line.refused,
    refusals: addCounts(row.refusals, line.refusals),
    tokens: tokens.usage,
    ...(row.usageSaturated || line.usageSaturated || tokens.saturated ? { usageSaturated: true } : {}),
  };
}

function addCounts<K extends string>(a: Readonly<Partial<Record<K, number>>>, b: Readonly<Partial<Record<K, number>>>): Partial<Record<K, number>> {
  const out: Partial<Record<K, number>> = { ...a };
  for (const [key, count] of Object.entries(b) as [K, number][]) out[key] = (out[key] ?? 0) + count;
  return out;
}

function compareRows(a: UsageStatementRow, b: UsageStatementRow): number {
  for (const key of ROW_ORDER) {
    const x = a[key] ?? '';
    const y = b[key] ?? '';
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
