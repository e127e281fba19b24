import * as Plot from '@observablehq/plot';
import type { UsageStatementRow } from '../api/types';
import { formatCredits } from '../format';
import { PlotFigure } from './plot-figure';

/** At most this many day labels on the axis; the others are left blank. */
const MAX_DAY_LABELS = 10;

/** Every UTC day from `from` to `to` (`YYYY-MM-DD`, both included), so days without use still show. */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = new Date(`${from}T00:00:00Z`); day.toISOString().slice(0, 10) <= to; day.setUTCDate(day.getUTCDate() + 1)) {
    days.push(day.toISOString().slice(0, 10));
  }
  return days;
}

/** Credits charged per UTC day, one stacked colour per operation. */
export function CreditsPerDayChart({ rows, from, to }: { rows: readonly UsageStatementRow[]; from: string; to: string }) {
  const days = daysBetween(from, to);
  const every = Math.max(1, Math.ceil(days.length / MAX_DAY_LABELS));
  const bars = rows
    .filter((row) => row.credits > 0)
    .map((row) => ({ day: row.day ?? from, operation: row.operationId ?? '—', credits: row.credits, title: `${row.day} · ${row.operationId}: ${formatCredits(row.credits)}` }));
  const total = bars.reduce((sum, bar) => sum + bar.credits, 0);
  return (
    <PlotFigure
      label={`Credits used per day by operation, ${from} to ${to}: ${formatCredits(total)} in all`}
      data={rows}
      draw={(width) =>
        Plot.plot({
          width,
          height: 260,
          marginLeft: 60,
          style: { fontSize: '12px' },
          x: { domain: days, label: null, tickFormat: (day: string, index: number) => (index % every === 0 ? day.slice(5) : '') },
          y: { label: 'credits', grid: true },
          color: { legend: true, type: 'categorical' },
          marks: [Plot.barY(bars, { x: 'day', y: 'credits', fill: 'operation', title: 'title', ariaLabel: 'title', className: 'usage-bars' })],
        })
      }
    />
  );
}
