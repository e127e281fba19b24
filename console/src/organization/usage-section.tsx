import { useState } from 'preact/hooks';
import { segment, withQuery } from '../api/client';
import type { GatewayTeam, LedgerEntryPage, UsageStatement } from '../api/types';
import { useApi } from '../api/use-api';
import { AvailableCreditsChart, availableSteps } from '../charts/available-credits-chart';
import { CreditsPerDayChart } from '../charts/credits-per-day-chart';
import { GROUPING_WORDS, SPEND_GROUPINGS, spendBars, SpendByGroupChart, type SpendGrouping } from '../charts/spend-by-group-chart';
import { Section, Show, TableScroll } from '../components/common';
import { formatCount, formatCountOf, formatMoney } from '../format';
import { useSession } from '../session/session';
import { KEY_READERS } from './gateway-keys-section';

/** Most ledger entries the available-credits chart reads: the API's largest page, newest first. */
const AVAILABLE_CHART_ENTRIES = 500;

/** How many days the chart covers when the page opens, today included. */
const DEFAULT_PERIOD_DAYS = 30;

const utcDay = (date: Date): string => date.toISOString().slice(0, 10);

function defaultPeriod(): { from: string; to: string } {
  const today = new Date();
  const start = new Date(today);
  start.setUTCDate(start.getUTCDate() - (DEFAULT_PERIOD_DAYS - 1));
  return { from: utcDay(start), to: utcDay(today) };
}

type Period = ReturnType<typeof defaultPeriod>;

/** The period as the user edits it (UTC days), shown on submit. */
function PeriodForm({ draft, setDraft, onShow }: { draft: Period; setDraft: (period: Period) => void; onShow: () => void }) {
  return (
    <form
      class="filters"
      onSubmit={(event) => {
        event.preventDefault();
        onShow();
      }}
    >
      <div>
        <label for="usage-from">From (UTC day)</label>
        <input id="usage-from" type="date" required value={draft.from} max={draft.to} onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })} />
      </div>
      <div>
        <label for="usage-to">To (UTC day)</label>
        <input id="usage-to" type="date" required value={draft.to} min={draft.from} onInput={(e) => setDraft({ ...draft, to: e.currentTarget.value })} />
      </div>
      <button type="submit">Show period</button>
    </form>
  );
}

/** The per-day chart's figures as a table, folded away. */
function UsageTable({ rows }: { rows: UsageStatement['rows'] }) {
  return (
    <details>
      <summary>The same figures as a table</summary>
      <TableScroll label="Usage table">
        <table>
          <caption class="visually-hidden">Credits per day and operation</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col">Operation</th>
              <th scope="col" class="num">Settled</th>
              <th scope="col" class="num">Credits</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={`${row.day}-${row.operationId}`}>
                <td>{row.day}</td>
                <td>{row.operationId}</td>
                <td class="num">{formatCount(row.settled)}</td>
                <td class="num">{formatCount(row.credits)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableScroll>
    </details>
  );
}

export function UsageSection({ organizationId }: { organizationId: string }) {
  const [period, setPeriod] = useState(defaultPeriod);
  const [draft, setDraft] = useState(period);
  const usage = useApi<UsageStatement>(
    withQuery(`/v1/organizations/${segment(organizationId)}/usage`, { from: period.from, to: period.to, groupBy: 'day,operation' }),
  );
  const ledger = useApi<LedgerEntryPage>(withQuery(`/v1/organizations/${segment(organizationId)}/ledger`, { order: 'newest', limit: AVAILABLE_CHART_ENTRIES }));
  return (
    <Section id="usage" title="Credits over time">
      <PeriodForm draft={draft} setDraft={setDraft} onShow={() => setPeriod(draft)} />
      <Show loaded={usage} what="the usage statement">
        {(statement) => (
          <>
            <p class="attempts-total">
              {formatCountOf(statement.totals.credits, 'credit')}
              {statement.totals.money !== undefined && ` (${formatMoney(statement.totals.money.credits, statement.totals.money.currency)})`} charged over{' '}
              {formatCountOf(statement.totals.settled, 'settled invocation')}
            </p>
            <div class="charts">
              <div role="region" aria-labelledby="per-day-heading">
                <h3 id="per-day-heading">Credits used per day by operation</h3>
                {statement.totals.credits === 0 ? (
                  <p class="empty">No usage in this period: no invocation was charged from {statement.from} to {statement.to}.</p>
                ) : (
                  <CreditsPerDayChart rows={statement.rows} from={statement.from} to={statement.to} />
                )}
              </div>
              <div role="region" aria-labelledby="available-heading">
                <h3 id="available-heading">Available credits</h3>
                <Show loaded={ledger} what="the ledger">
                  {(page) => <AvailableView entries={page.entries} truncated={page.nextCursor !== null} from={statement.from} to={statement.to} />}
                </Show>
              </div>
              <SpendByGroupView organizationId={organizationId} period={period} />
            </div>
            <UsageTable rows={statement.rows} />
          </>
        )}
      </Show>
    </Section>
  );
}

/** The available credits over the period from the newest ledger entries, or why there is no line. */
function AvailableView({ entries, truncated, from, to }: { entries: LedgerEntryPage['entries']; truncated: boolean; from: string; to: string }) {
  const start = new Date(`${from}T00:00:00Z`);
  const end = new Date(Math.min(Date.now(), Date.parse(`${to}T00:00:00Z`) + 86_400_000));
  const points = availableSteps(entries, start, end);
  if (entries.length === 0) return <p class="empty">No credits yet: nothing was ever granted to this organization.</p>;
  if (points.length === 0) return <p class="empty">No ledger entry before {to}: the organization had no credits in this period.</p>;
  const oldest = entries.at(-1);
  return (
    <>
      <AvailableCreditsChart points={points} from={from} to={to} start={start} end={end} />
      {truncated && oldest !== undefined && new Date(oldest.at) > start && (
        <p class="muted">Drawn from the newest {formatCount(entries.length)} ledger entries, back to {oldest.at.slice(0, 10)}.</p>
      )}
    </>
  );
}

/**
 * What gateway calls spent on each model over the period, by key, team, user (`metadata.user_id`) or tag
 * (`x-ledger-tags`), as the person chooses: the statement grouped by `key`, `model` and that.
 */
function SpendByGroupView({ organizationId, period }: { organizationId: string; period: Period }) {
  const [grouping, setGrouping] = useState<SpendGrouping>('key');
  const groupBy = grouping === 'key' ? 'key,model' : `key,${grouping},model`;
  const statement = useApi<UsageStatement>(withQuery(`/v1/organizations/${segment(organizationId)}/usage`, { from: period.from, to: period.to, groupBy }));
  // Teams are named from the team list, which only operators and the organization's admins may read; others see their ids.
  const { me } = useSession();
  const teams = useApi<{ teams: GatewayTeam[] }>(grouping === 'team' && KEY_READERS.has(me.role) ? `/v1/organizations/${segment(organizationId)}/teams` : undefined);
  const teamNames = new Map(teams.status === 'ok' ? teams.data.teams.map((team) => [team.teamId, team.name]) : []);
  const words = GROUPING_WORDS[grouping];
  return (
    <div role="region" aria-labelledby="by-group-heading">
      <h3 id="by-group-heading">Credits by {words.what} and model</h3>
      <label for="spend-grouping">Group by </label>
      <select id="spend-grouping" value={grouping} onChange={(e) => setGrouping(e.currentTarget.value as SpendGrouping)}>
        {SPEND_GROUPINGS.map((choice) => (
          <option key={choice} value={choice}>
            {GROUPING_WORDS[choice].what}
          </option>
        ))}
      </select>
      <Show loaded={statement} what={`the usage by ${words.noun}`}>
        {({ rows, from, to }) => {
          const bars = spendBars(rows, grouping, teamNames);
          if (bars.length === 0) return <p class="empty">No gateway key was charged from {from} to {to}.</p>;
          return (
            <>
              <SpendByGroupChart bars={bars} what={words.noun} />
              {grouping === 'tag' && <p class="muted">A call with several tags counts in each of their bars.</p>}
            </>
          );
        }}
      </Show>
    </div>
  );
}
