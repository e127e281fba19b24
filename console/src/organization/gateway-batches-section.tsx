import { segment, withQuery } from '../api/client';
import type { BatchExplanation, BatchList } from '../api/types';
import { useApi } from '../api/use-api';
import { batchHref, Section, Show, StateBadge, TableScroll } from '../components/common';
import { Pager, useCursorPages } from '../components/pager';
import { formatCount, formatCredits, formatTime } from '../format';

/** Batches per page. */
export const BATCHES_PAGE_ENTRIES = 20;

/** `2 succeeded, 1 errored`: the result types recorded so far that have any, or `none yet`. */
export function resultsInWords(results: BatchExplanation['results']): string {
  const said = Object.entries(results)
    .filter(([, count]) => count > 0)
    .map(([type, count]) => `${formatCount(count)} ${type}`);
  return said.length === 0 ? 'none yet' : said.join(', ');
}

/** The models of a batch, as its copied rate cards name them. */
export const modelsOf = (batch: BatchExplanation): string => batch.rateCards.map((card) => card.model).join(', ');

/** An organization's Message Batches, newest first, each linking to its page (docs/gateway.md "Message Batches"). */
export function GatewayBatchesSection({ organizationId }: { organizationId: string }) {
  const pages = useCursorPages();
  const list = useApi<BatchList>(withQuery(`/v1/organizations/${segment(organizationId)}/gateway-batches`, { limit: BATCHES_PAGE_ENTRIES, after: pages.cursor }));
  return (
    <Section id="gateway-batches" title="Message Batches, newest first">
      <Show loaded={list} what="the Message Batches">
        {(page) =>
          page.batches.length === 0 && pages.pageNumber === 1 ? (
            <p class="empty">No Message Batches were created through the gateway for {organizationId}.</p>
          ) : (
            <>
              <BatchesTable organizationId={organizationId} batches={page.batches} pageNumber={pages.pageNumber} />
              <Pager label="Message Batches" pageNumber={pages.pageNumber} nextCursor={page.nextAfter ?? undefined} onNext={pages.next} onPrevious={pages.previous} />
            </>
          )
        }
      </Show>
    </Section>
  );
}

function BatchesTable({ organizationId, batches, pageNumber }: { organizationId: string; batches: readonly BatchExplanation[]; pageNumber: number }) {
  return (
    <TableScroll label="Message Batches table">
      <table class="wrapping-table">
        <caption class="visually-hidden">Message Batches, newest first, page {pageNumber}</caption>
        <thead>
          <tr>
            <th scope="col">Batch</th>
            <th scope="col">Key</th>
            <th scope="col">Model</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">Requests</th>
            <th scope="col">Results</th>
            <th scope="col" class="num">Held</th>
            <th scope="col" class="num">Charged</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {batches.map((batch) => (
            <tr key={batch.batchId}>
              <th scope="row" class="batch">
                <a href={batchHref(organizationId, batch.batchId)}>
                  <code>{batch.batchId}</code>
                </a>
              </th>
              <td class="key">{batch.keyName}</td>
              <td class="model">{modelsOf(batch)}</td>
              <td class="status">
                <StateBadge state={batch.status} />
              </td>
              <td class="num requests">{formatCount(batch.requestCount)}</td>
              <td class="results">{resultsInWords(batch.results)}</td>
              <td class="num held">{formatCredits(batch.holdCredits)}</td>
              <td class="num charged">{batch.chargeCredits === undefined ? '—' : formatCredits(batch.chargeCredits)}</td>
              <td class="time">{formatTime(batch.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}
