import * as Plot from '@observablehq/plot';
import type { AttemptRow } from '../api/types';
import { formatCredits, formatDuration } from '../format';
import { PlotFigure } from './plot-figure';

/** The smallest bar drawn, as a share of the axis, so an attempt of 0 ms still shows. */
const MIN_BAR_SHARE = 0.006;

interface Bar {
  readonly label: string;
  readonly start: number;
  readonly end: number;
  readonly classification: string;
  readonly title: string;
}

export const attemptLabel = (attempt: AttemptRow): string => `turn ${attempt.turn} · try ${attempt.retry + 1}`;

/**
 * Each attempt as a bar on a time axis from the first send: its wait before (grey) then its own
 * duration, coloured by classification. The table beside it holds the same figures as text.
 */
export function AttemptsWaterfall({ attempts }: { attempts: readonly AttemptRow[] }) {
  const origin = Math.min(...attempts.map((a) => a.startedAtMs - a.waitBeforeMs));
  const span = Math.max(1, ...attempts.map((a) => a.startedAtMs + a.durationMs - origin));
  const minWidth = span * MIN_BAR_SHARE;
  const runs: Bar[] = attempts.map((a) => {
    const start = a.startedAtMs - origin;
    return {
      label: attemptLabel(a),
      start,
      end: Math.max(start + a.durationMs, start + minWidth),
      classification: a.classification,
      title: `${attemptLabel(a)}: ${a.classification}, ${formatDuration(a.durationMs)}, ${formatCredits(a.priceCredits)}`,
    };
  });
  const waits: Bar[] = attempts
    .filter((a) => a.waitBeforeMs > 0)
    .map((a) => ({
      label: attemptLabel(a),
      start: a.startedAtMs - a.waitBeforeMs - origin,
      end: a.startedAtMs - origin,
      classification: 'wait',
      title: `${attemptLabel(a)}: waited ${formatDuration(a.waitBeforeMs)} before sending`,
    }));
  const order = runs.map((bar) => bar.label);
  const faults = [...new Set(attempts.map((a) => a.classification).filter((c) => c !== 'ok'))];

  return (
    <PlotFigure
      label={`Attempts waterfall: ${attempts.length} ${attempts.length === 1 ? 'attempt' : 'attempts'} over ${formatDuration(span)}`}
      data={attempts}
      draw={(width) =>
        Plot.plot({
          width,
          height: 48 + 28 * runs.length,
          marginLeft: 110,
          style: { fontSize: '12px' },
          x: { label: 'ms since the first send', grid: true, domain: [0, span] },
          y: { label: null, domain: order },
          // ok in green, waits in grey, each fault in its own warm colour.
          color: {
            legend: true,
            domain: ['ok', ...faults, ...(waits.length > 0 ? ['wait'] : [])],
            range: [OK_COLOUR, ...faults.map((_, index) => FAULT_COLOURS[index % FAULT_COLOURS.length]!), ...(waits.length > 0 ? [WAIT_COLOUR] : [])],
          },
          marks: [
            Plot.barX(waits, { x1: 'start', x2: 'end', y: 'label', fill: 'classification', fillOpacity: 0.5, title: 'title', className: 'wait-bars' }),
            Plot.barX(runs, { x1: 'start', x2: 'end', y: 'label', fill: 'classification', title: 'title', ariaLabel: 'title', className: 'attempt-bars' }),
          ],
        })
      }
    />
  );
}

const OK_COLOUR = '#2f7d4f';
const WAIT_COLOUR = '#9aa0a6';
const FAULT_COLOURS = ['#c0392b', '#d68910', '#8e44ad', '#1f618d', '#a04000'];

