/**
 * Alerts before a key's or a team's money runs out (docs/gateway.md "Budget alerts"): `alertAt` lists
 * percentages of the spend limit; once the credits charged in a period reach one, the settlement that
 * reached it is followed, in the same append, by a GatewayBudgetThresholdCrossed, at most once per
 * threshold per period. Integer arithmetic only (`spent × 100 ≥ percent × limit` in bigint).
 */
import type { FieldChecks } from '../domain/field-checks';

/** Percentages one key or team may list in `alertAt`. */
export const MAX_BUDGET_ALERTS = 10;
/** Highest `alertAt` percentage: the limit itself. */
export const MAX_BUDGET_ALERT_PERCENT = 100;

/** The thresholds recorded as crossed in one period: another period starts with none. */
export interface BudgetAlertsSent {
  readonly period: string;
  readonly percents: readonly number[];
}

/** `alertAt`, checked: distinct whole percentages 1–100, at most MAX_BUDGET_ALERTS, sorted. */
export function readAlertAt(checks: FieldChecks, value: unknown): number[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    checks.add('alertAt', 'must be an array of percentages');
    return undefined;
  }
  if (value.length > MAX_BUDGET_ALERTS) {
    checks.add('alertAt', `must list at most ${MAX_BUDGET_ALERTS} percentages`);
    return undefined;
  }
  const percents = value.map((percent, index) => checks.integer(`alertAt.${index}`, percent, { min: 1, max: MAX_BUDGET_ALERT_PERCENT, unit: 'percent' }));
  return [...new Set(percents)].sort((a, b) => a - b);
}

/**
 * The thresholds of `alertAt` that `spent` has reached against `limit` in `period` and that `sent` does
 * not already record for that period. Nothing is reached while nothing was spent.
 */
export function newlyReached(alertAt: readonly number[] | undefined, limit: number, spent: number, period: string, sent: BudgetAlertsSent | undefined): number[] {
  if (alertAt === undefined || spent <= 0) return [];
  const already = sent?.period === period ? sent.percents : [];
  return alertAt.filter((percent) => !already.includes(percent) && BigInt(spent) * 100n >= BigInt(percent) * BigInt(limit));
}

/** `sent` with `percent` recorded in `period` (a later period replaces the earlier one's record). */
export function withAlertSent(sent: BudgetAlertsSent | undefined, period: string, percent: number): BudgetAlertsSent {
  const percents = sent?.period === period ? sent.percents : [];
  return { period, percents: [...percents, percent].sort((a, b) => a - b) };
}
