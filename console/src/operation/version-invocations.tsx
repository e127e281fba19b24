import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { segment, withQuery } from '../api/client';
import type { InvocationListEntry, InvocationPage } from '../api/types';
import { useApi } from '../api/use-api';
import { invocationHref, Section, Show, StateBadge } from '../components/common';
import { formatCountOf, formatCredits, formatTime } from '../format';

/** The newest invocations an operation page groups by version (one page of the API's list). */
export const VERSION_INVOCATIONS_LIMIT = 200;

/** The invocations of one organization grouped by the version they ran under, newest version first. */
function byVersion(invocations: readonly InvocationListEntry[]): Array<[number | undefined, InvocationListEntry[]]> {
  const groups = new Map<number | undefined, InvocationListEntry[]>();
  for (const invocation of invocations) {
    const group = groups.get(invocation.publicationVersion) ?? [];
    group.push(invocation);
    groups.set(invocation.publicationVersion, group);
  }
  return [...groups.entries()].sort(([a], [b]) => (b ?? 0) - (a ?? 0));
}

/**
 * The invocations that ran under each version, for the organization named (the API lists
 * invocations per organization; `?organization=` in the address fills it in).
 */
export function VersionInvocations({ operationId }: { operationId: string }) {
  const { query, route, path } = useLocation();
  const organizationId = query['organization'] ?? '';
  const [draft, setDraft] = useState(organizationId);
  const list = useApi<InvocationPage>(
    organizationId === ''
      ? undefined
      : withQuery(`/v1/organizations/${segment(organizationId)}/invocations`, { operationId, limit: VERSION_INVOCATIONS_LIMIT }),
  );
  return (
    <Section id="version-invocations" title="Invocations under each version">
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          route(withQuery(path, { organization: draft.trim() }), true);
        }}
      >
        <div>
          <label for="version-organization">Organization id</label>
          <input id="version-organization" type="text" required spellcheck={false} value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
        </div>
        <button type="submit">Show its invocations</button>
      </form>
      {organizationId !== '' && (
        <Show loaded={list} what={`the invocations of ${organizationId}`}>
          {(page) =>
            page.invocations.length === 0 ? (
              <p class="muted">
                No invocation of {operationId} for {organizationId}.
              </p>
            ) : (
              <>
                {page.nextCursor !== null && <p class="muted">The newest {formatCountOf(page.invocations.length, 'invocation')} {page.invocations.length === 1 ? 'is' : 'are'} shown.</p>}
                {byVersion(page.invocations).map(([version, invocations]) => (
                  <div key={version ?? 'none'} class="callout" aria-labelledby={`under-${version ?? 'none'}`}>
                    <h3 id={`under-${version ?? 'none'}`}>
                      {version === undefined ? 'Never published' : `Version ${version}`}: {invocations.length}{' '}
                      {invocations.length === 1 ? 'invocation' : 'invocations'}
                    </h3>
                    <ul class="changes">
                      {invocations.map((invocation) => (
                        <li key={invocation.invocationId}>
                          <a href={invocationHref(invocation.invocationId)}>
                            <code>{invocation.invocationId}</code>
                          </a>{' '}
                          <StateBadge state={invocation.state} /> {invocation.outcome ?? invocation.refusalReason ?? ''} · {formatCredits(invocation.charge)} ·{' '}
                          {formatTime(invocation.estimatedAt)}
                        </li>
                      ))}
                    </ul>
                  </div>
                ))}
              </>
            )
          }
        </Show>
      )}
    </Section>
  );
}
