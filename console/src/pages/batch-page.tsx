import { segment, withQuery } from '../api/client';
import type { BatchExplanation, BatchRequestExplanation, BatchRequestList } from '../api/types';
import { useApi } from '../api/use-api';
import { ErrorMessage, Figures, organizationHref, Section, Show, StateBadge, TableScroll, usePageTitle } from '../components/common';
import { Pager, useCursorPages } from '../components/pager';
import { formatCount, formatCredits, formatTime } from '../format';
import { resultsInWords } from '../organization/gateway-batches-section';

/** Requests per page. */
export const BATCH_REQUESTS_PAGE_ENTRIES = 50;

/** `claude-sonnet-5-5 (rate card v1, 50 % at batch rates)` */
function cardInWords(card: BatchExplanation['rateCards'][number]): string {
  const rate = card.batchBasisPoints === null ? 'whole price' : `${card.batchBasisPoints / 100} % at batch rates`;
  return `${card.model} (rate card v${card.version}, ${rate})`;
}

/** A Message Batch: its figures, its explanation, and its requests' results as charged (docs/gateway.md "Message Batches"). */
export function BatchPage({ organizationId, batchId }: { organizationId: string; batchId: string }) {
  usePageTitle(`Message Batch ${batchId}`);
  const base = `/v1/organizations/${segment(organizationId)}/gateway-batches/${segment(batchId)}`;
  const batch = useApi<BatchExplanation>(base);
  if (batch.status === 'error') {
    return (
      <>
        <h1>Message Batch not found</h1>
        <ErrorMessage error={batch.error} what={`Message Batch ${batchId}`} />
      </>
    );
  }
  return (
    <>
      <h1>
        Message Batch <code class="id">{batchId}</code>
      </h1>
      <Show loaded={batch} what="the Message Batch">
        {(b) => <BatchSummary batch={b} />}
      </Show>
      <Section id="batch-explanation" title="Explanation">
        <Show loaded={batch} what="the explanation">
          {(b) => <p class="sentence">{b.sentence}</p>}
        </Show>
      </Section>
      <BatchRequestsSection base={base} />
    </>
  );
}

function BatchSummary({ batch }: { batch: BatchExplanation }) {
  return (
    <div class="summary">
      <StateBadge state={batch.status} />
      <span class="badge">Message Batch</span>
      <Figures
        label="Message Batch"
        entries={[
          ['Organization', <a href={organizationHref(batch.organizationId)}>{batch.organizationId}</a>],
          ['Gateway key', <>{batch.keyName} <code class="id">{batch.keyId}</code></>],
          ['Models', batch.rateCards.map(cardInWords).join('; ')],
          ['Requests', formatCount(batch.requestCount)],
          ['Results', resultsInWords(batch.results)],
          ['Hold (worst case)', formatCredits(batch.holdCredits)],
          ['Charge', batch.chargeCredits === undefined ? 'not settled yet' : formatCredits(batch.chargeCredits)],
          ['Created', formatTime(batch.createdAt)],
          ['Settled', formatTime(batch.settledAt)],
          ...(batch.refusedReason === undefined ? [] : ([['Refused', batch.refusedReason]] as const)),
        ]}
      />
    </div>
  );
}

/** A request's result as a person reads it: its type, and for a success the usage it was priced at. */
function resultOf(request: BatchRequestExplanation): { readonly type: string; readonly tokens: string } {
  const result = request.result;
  if (result === undefined) return { type: 'not recorded yet', tokens: '—' };
  if (result.unmeasured !== undefined) return { type: result.type, tokens: `unmeasured (${result.unmeasured}): charged its hold` };
  if (result.usage === undefined) return { type: result.type, tokens: '—' };
  return { type: result.type, tokens: `${formatCount(result.usage.inputTokens)} in, ${formatCount(result.usage.outputTokens)} out` };
}

function BatchRequestsSection({ base }: { base: string }) {
  const pages = useCursorPages();
  const list = useApi<BatchRequestList>(withQuery(`${base}/requests`, { limit: BATCH_REQUESTS_PAGE_ENTRIES, after: pages.cursor }));
  return (
    <Section id="batch-requests" title="Requests">
      <Show loaded={list} what="the batch’s requests">
        {(page) => (
          <>
            <TableScroll label="Batch requests table">
              <table class="wrapping-table">
                <caption class="visually-hidden">The batch’s requests in the order sent, page {pages.pageNumber}</caption>
                <thead>
                  <tr>
                    <th scope="col">Request</th>
                    <th scope="col">Model</th>
                    <th scope="col">Result</th>
                    <th scope="col">Usage</th>
                    <th scope="col" class="num">Hold</th>
                    <th scope="col" class="num">Charge</th>
                  </tr>
                </thead>
                <tbody>
                  {page.requests.map((request) => {
                    const { type, tokens } = resultOf(request);
                    return (
                      <tr key={request.customId}>
                        <th scope="row">
                          <code>{request.customId}</code>
                        </th>
                        <td>{request.model}</td>
                        <td class="result">
                          <span class={`badge result-${type.replace(/ /g, '-')}`}>{type}</span>
                        </td>
                        <td class="usage">{tokens}</td>
                        <td class="num held">{formatCredits(request.holdCredits)}</td>
                        <td class="num charged">{request.result === undefined ? '—' : formatCredits(request.result.priceCredits)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </TableScroll>
            <Pager label="Requests" pageNumber={pages.pageNumber} nextCursor={page.nextAfter ?? undefined} onNext={pages.next} onPrevious={pages.previous} />
          </>
        )}
      </Show>
    </Section>
  );
}
