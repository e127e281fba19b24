import * as Plot from '@observablehq/plot';
import type { UsageStatementRow } from '../api/types';
import { formatCredits } from '../format';
import { PlotFigure } from './plot-figure';

/** Room one day label (`MM-DD` at 12 px) needs on the axis, gap included, in px. */
const DAY_LABEL_WIDTH_PX = 56;

/** Every UTC day from `from` to `to` (`YYYY-MM-DD`, both included), so days without use still show. */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = new Date(`${from}T00:00:00Z`); day.toISOString().slice(0, 10) <= to; day.setUTCDate(day.getUTCDate() + 1)) {
    days.push(day.toISOString().slice(0, 10));
  }
  return days;
}

/**
 * Which days get a label at this width: as many as fit, evenly spaced, counted back from the last
 * day, so the period's end (today, by default) is always labelled.
 */
export function labelledDays(days: readonly string[], widthPx: number): Set<string> {
  const fit = Math.max(1, Math.floor(widthPx / DAY_LABEL_WIDTH_PX));
  const every = Math.max(1, Math.ceil(days.length / fit));
  return new Set(days.filter((_, index) => (days.length - 1 - index) % every === 0));
}

/** Credits charged per UTC day, one stacked colour per operation. */
export function CreditsPerDayChart({ rows, from, to }: { rows: readonly UsageStatementRow[]; from: string; to: string }) {
  const days = daysBetween(from, to);
  const bars = rows
    .filter((row) => row.credits > 0)
    .map((row) => ({ day: row.day ?? from, operation: row.operationId ?? '—', credits: row.credits, title: `${row.day} · ${row.operationId}: ${formatCredits(row.credits)}` }));
  const total = bars.reduce((sum, bar) => sum + bar.credits, 0);
  return (
    <PlotFigure
      label={`Credits used per day by operation, ${from} to ${to}: ${formatCredits(total)} in all`}
      data={rows}
      draw={(width) => {
        const labelled = labelledDays(days, width - 60);
        return Plot.plot({
          width,
          height: 260,
          marginLeft: 60,
          style: { fontSize: '12px' },
          x: { domain: days, label: null, tickFormat: (day: string) => (labelled.has(day) ? day.slice(5) : '') },
          y: { label: 'credits', grid: true },
          color: { legend: true, type: 'categorical' },
          marks: [Plot.barY(bars, { x: 'day', y: 'credits', fill: 'operation', title: 'title', ariaLabel: 'title', className: 'usage-bars' })],
        });
      }}
    />
  );
}
