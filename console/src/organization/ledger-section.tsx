import { segment, withQuery } from '../api/client';
import type { LedgerEntry, LedgerEntryPage } from '../api/types';
import { useApi } from '../api/use-api';
import { invocationHref, Section, Show, TableScroll } from '../components/common';
import { Pager, useCursorPages } from '../components/pager';
import { formatCount, formatSignedCredits, formatTime } from '../format';

/** Ledger entries per page. */
export const LEDGER_PAGE_ENTRIES = 20;

/** What an entry does to the available credits: grants and releases add, holds and charges take away. */
export function signedCredits(entry: Pick<LedgerEntry, 'kind' | 'credits'>): number {
  return entry.kind === 'hold' || entry.kind === 'charge' ? -entry.credits : entry.credits;
}

/** The ledger newest first, like every list of the console, each amount signed by what it does to the available credits. */
export function LedgerSection({ organizationId }: { organizationId: string }) {
  const pages = useCursorPages();
  const ledger = useApi<LedgerEntryPage>(
    withQuery(`/v1/organizations/${segment(organizationId)}/ledger`, { order: 'newest', limit: LEDGER_PAGE_ENTRIES, cursor: pages.cursor }),
  );
  return (
    <Section id="ledger" title="Ledger, newest first">
      <Show loaded={ledger} what="the ledger">
        {(page) =>
          page.entries.length === 0 && pages.pageNumber === 1 ? (
            <p class="empty">No ledger entries yet: nothing was granted to {organizationId}, and nothing has run.</p>
          ) : (
            <>
              <TableScroll label="Ledger table">
                <table>
                  <caption class="visually-hidden">Ledger entries, newest first, page {pages.pageNumber}</caption>
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">Entry</th>
                      <th scope="col" class="num">
                        Credits (+ in, − out)
                      </th>
                      <th scope="col">For</th>
                      <th scope="col" class="num">
                        Available after
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.entries.map((entry) => (
                      <tr key={entry.sequence}>
                        <td>{formatTime(entry.at)}</td>
                        <td>{entry.kind}</td>
                        <td class="num credits">{formatSignedCredits(signedCredits(entry))}</td>
                        <td>
                          {entry.invocationId !== undefined ? (
                            <a href={invocationHref(entry.invocationId)}>invocation {entry.invocationId}</a>
                          ) : (
                            <>
                              {entry.reason} <code>{entry.idempotencyKey}</code>
                            </>
                          )}
                        </td>
                        <td class="num">{formatCount(entry.availableAfter)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroll>
              <Pager label="Ledger" pageNumber={pages.pageNumber} nextCursor={page.nextCursor ?? undefined} onNext={pages.next} onPrevious={pages.previous} />
            </>
          )
        }
      </Show>
    </Section>
  );
}
