import { useState } from 'preact/hooks';
import { segment, withQuery } from '../api/client';
import { INVOCATION_STATUSES, OUTCOMES, type InvocationPage } from '../api/types';
import { useApi } from '../api/use-api';
import { invocationHref, operationHref, Section, Show, StateBadge, TableScroll } from '../components/common';
import { Pager, useCursorPages } from '../components/pager';
import { formatCountOf, formatCredits, formatTime } from '../format';

/** Invocations per page. */
export const INVOCATIONS_PAGE_ENTRIES = 20;

interface Filters {
  readonly state: string;
  readonly outcome: string;
  readonly operationId: string;
}

const NO_FILTERS: Filters = { state: '', outcome: '', operationId: '' };

/** A labelled choice of one value or `any` (the empty string). */
function ChoiceFilter({ id, label, choices, value, onChange }: { id: string; label: string; choices: readonly string[]; value: string; onChange: (value: string) => void }) {
  return (
    <div>
      <label for={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {choices.map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    </div>
  );
}

/** The filters as the user edits them; applied (and the pages started again) on submit. */
function InvocationFilters({ draft, setDraft, onApply }: { draft: Filters; setDraft: (filters: Filters) => void; onApply: () => void }) {
  return (
    <form
      class="filters"
      aria-label="Invocation filters"
      onSubmit={(event) => {
        event.preventDefault();
        onApply();
      }}
    >
      <ChoiceFilter id="filter-state" label="State" choices={INVOCATION_STATUSES} value={draft.state} onChange={(state) => setDraft({ ...draft, state })} />
      <ChoiceFilter id="filter-outcome" label="Outcome" choices={OUTCOMES} value={draft.outcome} onChange={(outcome) => setDraft({ ...draft, outcome })} />
      <div>
        <label for="filter-operation">Operation id</label>
        <input id="filter-operation" type="text" spellcheck={false} value={draft.operationId} onInput={(e) => setDraft({ ...draft, operationId: e.currentTarget.value.trim() })} />
      </div>
      <button type="submit">Apply filters</button>
    </form>
  );
}

/** One page of invocations as a table, each linking to its page and its operation's. */
function InvocationsTable({ invocations, pageNumber }: { invocations: InvocationPage['invocations']; pageNumber: number }) {
  return (
    <TableScroll label="Invocations table">
      <table class="wrapping-table">
        <caption class="visually-hidden">Invocations, newest first, page {pageNumber}</caption>
        <thead>
          <tr>
            <th scope="col">Invocation</th>
            <th scope="col">Operation</th>
            <th scope="col">State</th>
            <th scope="col">Outcome or refusal</th>
            <th scope="col" class="num">Charge</th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {invocations.map((invocation) => (
            <tr key={invocation.invocationId}>
              <td>
                <a href={invocationHref(invocation.invocationId)}>
                  <code>{invocation.invocationId}</code>
                </a>
              </td>
              <td>
                <a href={operationHref(invocation.operationId)}>{invocation.operationId}</a>
                {invocation.publicationVersion !== undefined && <span class="muted"> v{invocation.publicationVersion}</span>}
              </td>
              <td>
                <StateBadge state={invocation.state} />
              </td>
              <td>{invocation.outcome ?? invocation.refusalReason ?? '—'}</td>
              <td class="num">{formatCredits(invocation.charge)}</td>
              <td class="time">{formatTime(invocation.estimatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/**
 * An organization's invocations, newest first, each linking to its page. State and operation are
 * filtered by the API; the API has no outcome filter, so the outcome filters the page shown.
 */
export function InvocationsSection({ organizationId, operationId }: { organizationId: string; operationId?: string }) {
  const [filters, setFilters] = useState<Filters>({ ...NO_FILTERS, operationId: operationId ?? '' });
  const [draft, setDraft] = useState(filters);
  const pages = useCursorPages();
  const list = useApi<InvocationPage>(
    withQuery(`/v1/organizations/${segment(organizationId)}/invocations`, {
      state: filters.state,
      operationId: filters.operationId,
      limit: INVOCATIONS_PAGE_ENTRIES,
      cursor: pages.cursor,
    }),
  );
  const unfiltered = filters.state === '' && filters.operationId === '' && filters.outcome === '';
  return (
    <Section id="invocations" title="Invocations, newest first">
      <InvocationFilters
        draft={draft}
        setDraft={setDraft}
        onApply={() => {
          pages.reset();
          setFilters(draft);
        }}
      />
      <Show loaded={list} what="the invocations">
        {(page) => {
          const shown = filters.outcome === '' ? page.invocations : page.invocations.filter((i) => i.outcome === filters.outcome);
          return (
            <>
              {filters.outcome !== '' && (
                <p class="muted">
                  {shown.length} of the {formatCountOf(page.invocations.length, 'invocation')} on this page ended {filters.outcome}.
                </p>
              )}
              {shown.length > 0 && <InvocationsTable invocations={shown} pageNumber={pages.pageNumber} />}
              {shown.length === 0 && (
                <p class="empty">
                  {page.invocations.length === 0 && pages.pageNumber === 1 && unfiltered
                    ? `No invocations yet: nothing has run for ${organizationId}.`
                    : 'No invocation matches these filters.'}
                </p>
              )}
              <Pager label="Invocations" pageNumber={pages.pageNumber} nextCursor={page.nextCursor ?? undefined} onNext={pages.next} onPrevious={pages.previous} />
            </>
          );
        }}
      </Show>
    </Section>
  );
}
