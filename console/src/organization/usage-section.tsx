import { useState } from 'preact/hooks';
import { segment, withQuery } from '../api/client';
import type { UsageStatement } from '../api/types';
import { useApi } from '../api/use-api';
import { CreditsPerDayChart } from '../charts/credits-per-day-chart';
import { Section, Show, TableScroll } from '../components/common';
import { formatCount } from '../format';

/** How many days the chart covers when the page opens, today included. */
const DEFAULT_PERIOD_DAYS = 30;

const utcDay = (date: Date): string => date.toISOString().slice(0, 10);

function defaultPeriod(): { from: string; to: string } {
  const today = new Date();
  const start = new Date(today);
  start.setUTCDate(start.getUTCDate() - (DEFAULT_PERIOD_DAYS - 1));
  return { from: utcDay(start), to: utcDay(today) };
}

export function UsageSection({ organizationId }: { organizationId: string }) {
  const [period, setPeriod] = useState(defaultPeriod);
  const [draft, setDraft] = useState(period);
  const usage = useApi<UsageStatement>(
    withQuery(`/v1/organizations/${segment(organizationId)}/usage`, { from: period.from, to: period.to, groupBy: 'day,operation' }),
  );
  return (
    <Section id="usage" title="Credits used per day by operation">
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setPeriod(draft);
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
      <Show loaded={usage} what="the usage statement">
        {(statement) => (
          <>
            <p class="attempts-total">
              {formatCount(statement.totals.credits)} credits charged over {formatCount(statement.totals.settled)} settled invocations
            </p>
            <CreditsPerDayChart rows={statement.rows} from={statement.from} to={statement.to} />
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
                    {statement.rows.map((row) => (
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
          </>
        )}
      </Show>
    </Section>
  );
}
