import { segment, withQuery } from '../api/client';
import type { LedgerEntryPage } from '../api/types';
import { useApi } from '../api/use-api';
import { invocationHref, Section, Show, TableScroll } from '../components/common';
import { Pager, useCursorPages } from '../components/pager';
import { formatCount, formatTime } from '../format';

/** Ledger entries per page. */
export const LEDGER_PAGE_ENTRIES = 20;

export function LedgerSection({ organizationId }: { organizationId: string }) {
  const pages = useCursorPages();
  const ledger = useApi<LedgerEntryPage>(
    withQuery(`/v1/organizations/${segment(organizationId)}/ledger`, { limit: LEDGER_PAGE_ENTRIES, cursor: pages.cursor }),
  );
  return (
    <Section id="ledger" title="Ledger">
      <Show loaded={ledger} what="the ledger">
        {(page) => (
          <>
            <TableScroll label="Ledger table">
              <table>
                <caption class="visually-hidden">Ledger entries, oldest first, page {pages.pageNumber}</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Entry</th>
                    <th scope="col" class="num">Credits</th>
                    <th scope="col">For</th>
                    <th scope="col" class="num">Available after</th>
                  </tr>
                </thead>
                <tbody>
                  {page.entries.map((entry) => (
                    <tr key={entry.sequence}>
                      <td>{formatTime(entry.at)}</td>
                      <td>{entry.kind}</td>
                      <td class="num">{formatCount(entry.credits)}</td>
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
            {page.entries.length === 0 && <p class="muted">No entries.</p>}
            <Pager label="Ledger" pageNumber={pages.pageNumber} nextCursor={page.nextCursor ?? undefined} onNext={pages.next} onPrevious={pages.previous} />
          </>
        )}
      </Show>
    </Section>
  );
}
