import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { ApiError, describeError } from '../api/client';
import type { Loaded } from '../api/use-api';
import { formatCount, formatMoney, formatValue, words } from '../format';

/** A region of a page, named by its heading (a landmark a screen reader can jump to). */
export function Section({ id, title, children, actions }: { id: string; title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="panel" aria-labelledby={`${id}-heading`}>
      <div class="panel-head">
        <h2 id={`${id}-heading`}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

export function ErrorMessage({ error, what }: { error: unknown; what: string }) {
  // What a role may not read is how the service works, not a failure: said plainly, not as an alert.
  if (error instanceof ApiError && error.status === 403) {
    return (
      <p class="muted" role="note">
        {describeError(error, what)}
      </p>
    );
  }
  return (
    <p class="error" role="alert">
      {describeError(error, what)}
    </p>
  );
}

/** Renders what was loaded, a loading line, or the error in a person's words. */
export function Show<T>({ loaded, what, children }: { loaded: Loaded<T>; what: string; children: (data: T) => ComponentChildren }) {
  if (loaded.status === 'loading') return <p class="muted">Loading {what}…</p>;
  if (loaded.status === 'error') return <ErrorMessage error={loaded.error} what={what} />;
  return <>{children(loaded.data)}</>;
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}

/** Name/value pairs, as a definition list. */
export function Figures({ entries, label }: { entries: ReadonlyArray<readonly [string, ComponentChildren]>; label?: string }) {
  return (
    <dl class="figures" aria-label={label}>
      {entries.map(([name, value]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** Every field of a plain object as figures, names turned into words. */
export function ObjectFigures({ value, label }: { value: Readonly<Record<string, unknown>>; label?: string }) {
  return <Figures label={label} entries={Object.entries(value).map(([name, v]) => [words(name), formatValue(v)] as const)} />;
}

/** A table that scrolls sideways on a narrow screen instead of squeezing its columns. */
export function TableScroll({ children, label }: { children: ComponentChildren; label: string }) {
  return (
    <div class="table-scroll" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

export const invocationHref = (id: string) => `/console/invocations/${encodeURIComponent(id)}`;
export const organizationHref = (id: string) => `/console/organizations/${encodeURIComponent(id)}`;
export const operationHref = (id: string) => `/console/operations/${encodeURIComponent(id)}`;
export const batchHref = (organizationId: string, batchId: string) => `${organizationHref(organizationId)}/batches/${encodeURIComponent(batchId)}`;

/** The tab's title names the page, so a history list or a tab bar tells pages apart. */
export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} — llm-ledger console`;
  }, [title]);
}

/**
 * A credit figure, and under it the same figure in money when the answer carries one (the service's
 * LEDGER_CREDIT_VALUE): `money[figure]` of the answer's `money` member.
 */
export function Credits<F extends string>({ credits, money, figure }: { credits: number; money: ({ readonly currency: string } & Readonly<Record<F, string>>) | undefined; figure: F }) {
  return (
    <>
      <span class="credits">{formatCount(credits)}</span>
      {money !== undefined && <small class="money">{formatMoney(money[figure], money.currency)}</small>}
    </>
  );
}
