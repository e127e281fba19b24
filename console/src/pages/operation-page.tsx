import { segment } from '../api/client';
import type { PublicationWindow, RoutingBudgets } from '../api/types';
import { useApi } from '../api/use-api';
import { Figures, Section, Show, usePageTitle } from '../components/common';
import { formatCredits, formatTime, formatValue } from '../format';
import { changesBetween, fieldsOf } from '../operation/publication-changes';
import { VersionInvocations } from '../operation/version-invocations';

export function OperationPage({ operationId }: { operationId: string }) {
  usePageTitle(`Operation ${operationId}`);
  const budgets = useApi<RoutingBudgets>(`/v1/operations/${segment(operationId)}/publications`);
  return (
    <>
      <h1>
        Operation <code class="id">{operationId}</code>
      </h1>
      <Section id="versions" title="Publication versions">
        <Show loaded={budgets} what={`the publications of ${operationId}`}>
          {(b) => <VersionsTimeline versions={b.versions} />}
        </Show>
      </Section>
      <VersionInvocations operationId={operationId} />
    </>
  );
}

function VersionsTimeline({ versions }: { versions: readonly PublicationWindow[] }) {
  return (
    <ol class="versions">
      {versions.map((version, index) => {
        const previous = index === 0 ? undefined : versions[index - 1];
        return (
          <li key={version.version} aria-labelledby={`version-${version.version}`}>
            <h3 id={`version-${version.version}`}>
              Version {version.version} {version.until === undefined && <span class="badge state-settled">in force</span>}
              {!version.enabled && <span class="badge state-refused">disabled</span>}
            </h3>
            <p class="muted">
              From {formatTime(version.from)}
              {version.until !== undefined && <> until {formatTime(version.until)}</>}
            </p>
            <Figures
              entries={[
                ['Routing', `${formatValue(version.routing.provider)} · ${formatValue(version.routing.model)}`],
                ['Credit hold', formatCredits(version.creditHold)],
                ['Max turns', formatValue(version.limits.maxTurns)],
                ['Max tool calls', formatValue(version.limits.maxToolCalls)],
              ]}
            />
            {previous === undefined ? <FirstVersion version={version} /> : <Changes previous={previous} version={version} />}
          </li>
        );
      })}
    </ol>
  );
}

function Changes({ previous, version }: { previous: PublicationWindow; version: PublicationWindow }) {
  const changes = changesBetween(previous, version);
  if (changes.length === 0) return <p>Nothing changed from version {previous.version}.</p>;
  return (
    <>
      <p>What changed from version {previous.version}:</p>
      <ul class="changes" aria-label={`Changes in version ${version.version}`}>
        {changes.map((change) => (
          <li key={change.field}>
            <code>{change.field}</code>: {formatValue(change.before)} → {formatValue(change.after)}
          </li>
        ))}
      </ul>
    </>
  );
}

function FirstVersion({ version }: { version: PublicationWindow }) {
  return (
    <details>
      <summary>Everything version {version.version} published</summary>
      <ul class="changes">
        {fieldsOf(version).map(([field, value]) => (
          <li key={field}>
            <code>{field}</code>: {formatValue(value)}
          </li>
        ))}
      </ul>
    </details>
  );
}
