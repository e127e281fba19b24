import * as Plot from '@observablehq/plot';
import type { UsageStatementRow } from '../api/types';
import { formatCount, formatCredits } from '../format';
import { PlotFigure } from './plot-figure';

/** Room one bar needs, its gap included, in px. */
const BAR_ROW_PX = 30;
/** Characters of a key id added to a name two keys share, so their bars stay apart. */
const KEY_ID_PREFIX_CHARS = 8;

export interface SpendBar {
  /** What the bar is: a key's name, say. */
  readonly group: string;
  readonly model: string;
  readonly credits: number;
  readonly title: string;
}

/**
 * A statement grouped by `key,model` as bars: one per key, named by its name (with the start of its id
 * where two keys share one), one stacked part per model. Invocations no key made (operations') are left out.
 */
export function keyModelBars(rows: readonly UsageStatementRow[]): SpendBar[] {
  const charged = rows.filter((row) => row.credits > 0 && row.keyId !== undefined && row.keyId !== '');
  const nameOf = (row: UsageStatementRow): string => row.keyName ?? row.keyId ?? '';
  const keysByName = new Map<string, Set<string | undefined>>();
  for (const row of charged) keysByName.set(nameOf(row), (keysByName.get(nameOf(row)) ?? new Set()).add(row.keyId));
  return charged.map((row) => {
    const name = nameOf(row);
    const group = keysByName.get(name)!.size > 1 ? `${name} (${(row.keyId ?? '').slice(0, KEY_ID_PREFIX_CHARS)})` : name;
    const model = row.model === undefined || row.model === '' ? 'no model' : row.model;
    return { group, model, credits: row.credits, title: `${group} · ${model}: ${formatCredits(row.credits)}` };
  });
}

/** Credits charged per group (a key, say), one stacked colour per model, the largest group first. */
export function SpendByGroupChart({ bars, what }: { bars: readonly SpendBar[]; what: string }) {
  const totals = new Map<string, number>();
  for (const bar of bars) totals.set(bar.group, (totals.get(bar.group) ?? 0) + bar.credits);
  const order = [...totals].sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).map(([group]) => group);
  const total = bars.reduce((sum, bar) => sum + bar.credits, 0);
  return (
    <PlotFigure
      label={`Credits charged by ${what} and model: ${formatCredits(total)} in all, over ${order.length} ${order.length === 1 ? what : `${what}s`}`}
      data={bars}
      draw={(width) =>
        Plot.plot({
          width,
          height: 60 + BAR_ROW_PX * order.length,
          marginLeft: Math.min(220, Math.max(80, 7 * Math.max(...order.map((group) => group.length)))),
          style: { fontSize: '12px' },
          x: { label: 'credits', grid: true, tickFormat: formatCount },
          y: { label: null, domain: order },
          color: { legend: true, type: 'categorical' },
          marks: [Plot.barX(bars, { x: 'credits', y: 'group', fill: 'model', title: 'title', ariaLabel: 'title', className: 'spend-bars' }), Plot.ruleX([0], { ariaHidden: 'true' })],
        })
      }
    />
  );
}
