import * as Plot from '@observablehq/plot';
import type { UsageStatementRow } from '../api/types';
import { formatCount, formatCredits } from '../format';
import { PlotFigure } from './plot-figure';

/** Room one bar needs, its gap included, in px. */
const BAR_ROW_PX = 30;
/** Characters of a key id added to a name two keys share, so their bars stay apart. */
const KEY_ID_PREFIX_CHARS = 8;

export interface SpendBar {
  /** What the bar is: a key's name, a user id, a tag. */
  readonly group: string;
  readonly model: string;
  readonly credits: number;
  readonly title: string;
}

/** What the chart groups gateway calls by, beside their model: a dimension of the usage statement. */
export const SPEND_GROUPINGS = ['key', 'team', 'user', 'tag'] as const;
export type SpendGrouping = (typeof SPEND_GROUPINGS)[number];

/** How each grouping is named in words, and how a row's group reads when the calls sent none. */
export const GROUPING_WORDS: Readonly<Record<SpendGrouping, { readonly what: string; readonly noun: string; readonly none: string }>> = {
  key: { what: 'gateway key', noun: 'key', none: '' },
  team: { what: 'team', noun: 'team', none: 'no team' },
  user: { what: 'user', noun: 'user', none: 'no user id' },
  tag: { what: 'tag', noun: 'tag', none: 'no tag' },
};

/** A key's name, with the start of its id where two charged keys share the name, so their bars stay apart. */
function keyNames(rows: readonly UsageStatementRow[]): (row: UsageStatementRow) => string {
  const nameOf = (row: UsageStatementRow): string => row.keyName ?? row.keyId ?? '';
  const keysByName = new Map<string, Set<string | undefined>>();
  for (const row of rows) keysByName.set(nameOf(row), (keysByName.get(nameOf(row)) ?? new Set()).add(row.keyId));
  return (row) => (keysByName.get(nameOf(row))!.size > 1 ? `${nameOf(row)} (${(row.keyId ?? '').slice(0, KEY_ID_PREFIX_CHARS)})` : nameOf(row));
}

/**
 * A statement grouped by `key`, `model` and the grouping as bars: one per group (a key, a team, a user
 * id, a tag), one stacked part per model, the credits of its rows summed over the keys. Only gateway
 * calls count: rows no key made (operations') are left out. A team reads as its name in `teamNames`,
 * else as its id (a deleted team, or a reader who may not list teams).
 */
export function spendBars(rows: readonly UsageStatementRow[], grouping: SpendGrouping, teamNames: ReadonlyMap<string, string> = new Map()): SpendBar[] {
  const charged = rows.filter((row) => row.credits > 0 && row.keyId !== undefined && row.keyId !== '');
  const keyName = keyNames(charged);
  const groupOf = (row: UsageStatementRow): string => {
    const value = grouping === 'key' ? keyName(row) : grouping === 'team' ? (teamNames.get(row.teamId ?? '') ?? row.teamId) : grouping === 'user' ? row.userId : row.tag;
    return value === undefined || value === '' ? GROUPING_WORDS[grouping].none : value;
  };
  const sums = new Map<string, { group: string; model: string; credits: number }>();
  for (const row of charged) {
    const group = groupOf(row);
    const model = row.model === undefined || row.model === '' ? 'no model' : row.model;
    const id = JSON.stringify([group, model]);
    sums.set(id, { group, model, credits: (sums.get(id)?.credits ?? 0) + row.credits });
  }
  return [...sums.values()].map((bar) => ({ ...bar, title: `${bar.group} · ${bar.model}: ${formatCredits(bar.credits)}` }));
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
