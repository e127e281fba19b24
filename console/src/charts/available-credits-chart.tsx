import * as Plot from '@observablehq/plot';
import type { LedgerEntry } from '../api/types';
import { formatCount, formatCredits } from '../format';
import { PlotFigure } from './plot-figure';

/** Room one date label needs on a time axis, gap included, in px. */
const TIME_LABEL_WIDTH_PX = 90;

export interface AvailablePoint {
  readonly at: Date;
  readonly available: number;
}

/**
 * The available credits over `[start, end)`, as a step line from ledger entries (newest first, as
 * the console reads them): the level at the start (the last entry before it), each entry inside,
 * and the level held until `end`. Empty when no entry is known before `end`.
 */
export function availableSteps(entriesNewestFirst: readonly LedgerEntry[], start: Date, end: Date): AvailablePoint[] {
  const oldestFirst = [...entriesNewestFirst].reverse();
  const before = oldestFirst.filter((entry) => new Date(entry.at) < start).at(-1);
  const inside = oldestFirst.filter((entry) => new Date(entry.at) >= start && new Date(entry.at) < end);
  const points: AvailablePoint[] = [
    ...(before === undefined ? [] : [{ at: start, available: before.availableAfter }]),
    ...inside.map((entry) => ({ at: new Date(entry.at), available: entry.availableAfter })),
  ];
  const last = points.at(-1);
  return last === undefined ? [] : [...points, { at: end, available: last.available }];
}

/** Available credits over the period, drawn beside the credits used per day. */
export function AvailableCreditsChart({ points, from, to, start, end }: { points: readonly AvailablePoint[]; from: string; to: string; start: Date; end: Date }) {
  const now = points.at(-1)?.available ?? 0;
  return (
    <PlotFigure
      label={`Available credits from ${from} to ${to}: ${formatCredits(now)} at the end`}
      data={points}
      draw={(width) =>
        Plot.plot({
          width,
          height: 200,
          marginLeft: 80,
          style: { fontSize: '12px' },
          // The whole period, like the per-day chart beside it, even where the line starts later.
          x: { type: 'utc', domain: [start, end], label: null, ticks: Math.max(2, Math.floor((width - 80) / TIME_LABEL_WIDTH_PX)) },
          y: { label: 'available credits', grid: true, tickFormat: formatCount },
          marks: [
            // The figure's label says what the line shows; the marks themselves are drawing only.
            Plot.lineY(points, { x: 'at', y: 'available', curve: 'step-after', stroke: 'currentColor', className: 'available-line', ariaHidden: 'true' }),
            Plot.ruleY([0], { ariaHidden: 'true' }),
          ],
        })
      }
    />
  );
}
