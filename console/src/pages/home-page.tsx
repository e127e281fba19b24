import { useLocation } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, segment } from '../api/client';
import type { Balance, InvocationStatus, RoutingBudgets } from '../api/types';
import { invocationHref, operationHref, organizationHref, Section, usePageTitle } from '../components/common';
import { formatCountOf, formatCredits } from '../format';
import { useSession, whoIs } from '../session/session';

/** One thing the id named, with its page. */
interface Found {
  readonly kind: 'Organization' | 'Operation' | 'Invocation';
  readonly href: string;
  readonly detail: string;
}

type Search = { readonly status: 'idle' } | { readonly status: 'searching'; readonly id: string } | { readonly status: 'done'; readonly id: string; readonly found: readonly Found[]; readonly failed: readonly string[] };

/**
 * Looks one id up as an organization, an operation and an invocation at once (the API reads each by
 * its id; it has no listing of organizations or operations), and lists what exists.
 */
function useSearch(): { search: Search; run(id: string): void } {
  const { api } = useSession();
  const [search, setSearch] = useState<Search>({ status: 'idle' });
  // Only the newest search may draw its results: an earlier one that answers later is dropped.
  const newest = useRef(0);
  const run = (id: string) => {
    const searchNumber = ++newest.current;
    setSearch({ status: 'searching', id });
    const failed: string[] = [];
    const look = async <T,>(path: string, what: string, found: (data: T) => Found): Promise<Found | undefined> => {
      try {
        return found(await api.get<T>(path));
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 404) failed.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
        return undefined;
      }
    };
    void Promise.all([
      look<Balance>(`/v1/organizations/${segment(id)}/balance`, 'organizations', (b) => ({ kind: 'Organization', href: organizationHref(id), detail: `${formatCredits(b.available)} available` })),
      look<RoutingBudgets>(`/v1/operations/${segment(id)}/publications`, 'operations', (p) => ({
        kind: 'Operation',
        href: operationHref(id),
        detail: formatCountOf(p.versions.length, 'publication version'),
      })),
      look<InvocationStatus>(`/v1/invocations/${segment(id)}`, 'invocations', (i) => ({ kind: 'Invocation', href: invocationHref(id), detail: `${i.state}, ${i.operationId} for ${i.organizationId}` })),
    ]).then((results) => {
      if (searchNumber === newest.current) setSearch({ status: 'done', id, found: results.filter((r): r is Found => r !== undefined), failed });
    });
  };
  return { search, run };
}

/** The operators' and auditors' start: one search over organizations, operations and invocations. */
function SearchAcross() {
  const [value, setValue] = useState('');
  const { search, run } = useSearch();
  return (
    <Section id="search" title="Find an organization, operation or invocation">
      <form
        class="inline-form"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          const trimmed = value.trim();
          if (trimmed !== '') run(trimmed);
        }}
      >
        <label for="search-id">Organization, operation or invocation id</label>
        <input id="search-id" type="search" required spellcheck={false} value={value} onInput={(event) => setValue(event.currentTarget.value)} />
        <button type="submit">Search</button>
      </form>
      <p class="muted">Ids are matched exactly, as a ticket or a log line gives them: the API reads each by its id.</p>
      <div aria-live="polite">
        {search.status === 'searching' && <p class="muted">Searching for {search.id}…</p>}
        {search.status === 'done' && search.found.length === 0 && search.failed.length === 0 && (
          <p class="empty">No organization, operation or invocation has the id <code>{search.id}</code>.</p>
        )}
        {search.status === 'done' && search.found.length > 0 && (
          <ul class="search-results" aria-label={`Results for ${search.id}`}>
            {search.found.map((found) => (
              <li key={found.kind}>
                {found.kind} <a href={found.href}>{search.id}</a> <span class="muted">— {found.detail}</span>
              </li>
            ))}
          </ul>
        )}
        {search.status === 'done' &&
          search.failed.map((failure) => (
            <p key={failure} class="error" role="alert">
              Could not search {failure}
            </p>
          ))}
      </div>
    </Section>
  );
}

/**
 * Where each role starts: an organization's admins and members on their organization's page (the
 * only one whose figures they may read), operators and auditors on the search across them all.
 */
export function HomePage() {
  usePageTitle('Console');
  const { me } = useSession();
  const { route } = useLocation();
  const organizationId = me.organizationId;
  useEffect(() => {
    if (organizationId !== undefined) route(organizationHref(organizationId), true);
  }, [organizationId]);
  if (organizationId !== undefined) return <p class="muted">Opening {organizationId}…</p>;
  return (
    <>
      <h1>Console</h1>
      <p>
        Signed in as {whoIs(me)}: every organization and operation may be read. Each page has its own address to paste into a ticket.
      </p>
      <SearchAcross />
    </>
  );
}
