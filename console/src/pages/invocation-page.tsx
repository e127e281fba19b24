import { useEffect, useState } from 'preact/hooks';
import { segment } from '../api/client';
import type { ComponentChildren } from 'preact';
import type { AttemptHistory, AttemptRow, Explanation, ExplanationGateway, InvocationStatus } from '../api/types';
import { isFinal, usageByKind } from '../api/types';
import { useApi, type Loaded } from '../api/use-api';
import { AttemptsWaterfall, attemptLabel } from '../charts/attempts-waterfall';
import { ErrorMessage, Figures, ObjectFigures, operationHref, organizationHref, Section, Show, StateBadge, TableScroll, usePageTitle } from '../components/common';
import { formatCount, formatCountOf, formatCredits, formatDuration, formatTime, unusedKindsSentence, words } from '../format';
import { useLifecycle } from '../invocation/use-lifecycle';

/** How often a running invocation's page reads it again. */
const LIVE_POLL_INTERVAL_MS = 1_000;

/** docs/lifecycle.md's transitions into a final state, as a person reads them. */
const TRANSITIONS: Readonly<Record<number, string>> = {
  1: 'estimated → refused (the access check)',
  2: 'estimated → refused (no room for the hold or no running slot)',
  8: 'completed → settled: charged the sum of its attempt prices',
  9: 'pending → settled: no usage was reported, so charged the estimate',
  10: 'failed → settled: charged the sum of its attempt prices',
  11: 'dispatched → settled: the run broke off, so charged the estimate',
  12: 'estimated → settled by the sweep: nothing was sent, charged 0',
  13: 'reserved → settled by the sweep: nothing was sent, hold released',
  14: 'dispatched → settled by the sweep: its cost was never learned, so charged the estimate',
};

export function InvocationPage({ invocationId }: { invocationId: string }) {
  usePageTitle(`Invocation ${invocationId}`);
  const base = `/v1/invocations/${segment(invocationId)}`;
  const [tick, setTick] = useState(0);
  const status = useApi<InvocationStatus>(base, tick);
  const explanation = useApi<Explanation>(`${base}/explanation`, tick);
  const attempts = useApi<AttemptHistory>(`${base}/attempts`, tick);
  const lifecycle = useLifecycle(invocationId, status, tick);

  // Live while it runs: read again until the state and the explanation say it is over and the
  // attempts show every attempt the state counts. The three are read side by side, so the attempts
  // may have been answered just before the invocation's last commit while the state was answered after.
  const running =
    (status.status === 'ok' && !isFinal(status.data.state)) ||
    (explanation.status === 'ok' && !isFinal(explanation.data.state)) ||
    (status.status === 'ok' && attempts.status === 'ok' && attempts.data.attemptCount !== status.data.attemptCount);
  useEffect(() => {
    if (!running) return undefined;
    const timer = setTimeout(() => setTick((n) => n + 1), LIVE_POLL_INTERVAL_MS);
    return () => clearTimeout(timer);
  }, [running, tick]);

  if (status.status === 'error') {
    return (
      <>
        <h1>Invocation not found</h1>
        <ErrorMessage error={status.error} what={`invocation ${invocationId}`} />
      </>
    );
  }

  return (
    <>
      <h1>
        Invocation <code class="id">{invocationId}</code>
      </h1>
      <Show loaded={status} what="the invocation">
        {(s) => <Header status={s} running={running} />}
      </Show>
      <Section id="explanation" title="Explanation">
        <Show loaded={explanation} what="the explanation">
          {(e) => <ExplanationView explanation={e} />}
        </Show>
      </Section>
      <Section id="attempts" title="Attempts">
        <Show loaded={attempts} what="the attempts">
          {(history) => <AttemptsView history={history} status={status} />}
        </Show>
      </Section>
      <Section id="lifecycle" title="Lifecycle">
        <Show loaded={lifecycle} what="the lifecycle">
          {({ entries, partial }) => (
            <>
              {partial && <p class="muted">This token may not read the event log, so only the invocation’s own dates are shown.</p>}
              <ol class="timeline">
                {entries.map((entry) => (
                  <li key={entry.key}>
                    <time>{formatTime(entry.at)}</time>
                    <strong>{entry.type}</strong>
                    <span>{entry.summary}</span>
                  </li>
                ))}
              </ol>
            </>
          )}
        </Show>
      </Section>
    </>
  );
}

function Header({ status, running }: { status: InvocationStatus; running: boolean }) {
  return (
    <div class="summary">
      <StateBadge state={status.state} />
      {status.outcome !== undefined && <span class="badge">{status.outcome}</span>}
      {status.gateway !== undefined && <span class="badge">gateway call</span>}
      {running && (
        <span class="live" role="status">
          live — updating as it runs
        </span>
      )}
      <Figures
        label="Invocation"
        entries={[
          ...(status.gateway === undefined
            ? ([
                ['Operation', <a href={`${operationHref(status.operationId)}?organization=${encodeURIComponent(status.organizationId)}`}>{status.operationId}</a>],
                ['Publication version', status.publicationVersion ?? '—'],
              ] as const)
            : ([
                ['Gateway key', <>{status.gateway.keyName} <code class="id">{status.gateway.keyId}</code></>],
                ['Model', status.gateway.model],
                ['Rate card version', status.publicationVersion ?? '—'],
              ] as const)),
          ['Organization', <a href={organizationHref(status.organizationId)}>{status.organizationId}</a>],
          [status.gateway === undefined ? 'Estimate (hold)' : 'Hold (worst case)', formatCredits(status.estimate)],
          ['Charge', isFinal(status.state) ? formatCredits(status.charge) : 'not settled yet'],
          ['Started', formatTime(status.estimatedAt)],
          ...(status.settledAt === undefined ? [] : [['Settled', formatTime(status.settledAt)] as const]),
        ]}
      />
    </div>
  );
}

function ExplanationView({ explanation: e }: { explanation: Explanation }) {
  const usedOf = (used: number, limit: number | undefined) => (limit === undefined ? formatCount(used) : `${formatCount(used)} of ${formatCount(limit)}`);
  return (
    <>
      <p class="sentence">{e.sentence}</p>
      <Figures
        label="Figures"
        entries={[
          ['State', e.state],
          ...(e.outcome === undefined ? [] : [['Outcome', e.outcome] as const]),
          ...(e.fault === undefined ? [] : [['Fault', e.fault] as const]),
          // A gateway call is one upstream attempt: its turns, tool calls and retries say nothing.
          ...(e.gateway === undefined
            ? ([
                ['Turns', usedOf(e.turns.used, e.turns.limit)],
                ['Tool calls', usedOf(e.toolCalls.used, e.toolCalls.limit)],
              ] as const)
            : gatewayFigures(e.gateway)),
          ['Credits spent', `${formatCount(e.credits.spent)} of a ${formatCount(e.credits.hold)}-credit hold`],
          ...(e.gateway === undefined ? [['Retries', formatCount(e.retries)] as const] : []),
        ]}
      />
      {e.refusal !== undefined && (
        <div class="callout" aria-labelledby="refusal-heading">
          <h3 id="refusal-heading">Refused: {e.refusal.reason}</h3>
          <p>{TRANSITIONS[e.refusal.transition] ?? `transition ${e.refusal.transition}`}</p>
          <ObjectFigures label="Refusal figures" value={e.refusal.figures} />
        </div>
      )}
      {e.endingLimit !== undefined && (
        <div class="callout" aria-labelledby="limit-heading">
          <h3 id="limit-heading">Ended by {e.endingLimit.name}</h3>
          <p>
            {e.endingLimit.name} = {formatCount(e.endingLimit.value)}, as published in{' '}
            <a href={operationHref(e.endingLimit.operationId)}>{e.endingLimit.operationId}</a> version {e.endingLimit.publicationVersion}.
          </p>
        </div>
      )}
      {e.settlement !== undefined && (
        <div class="callout" aria-labelledby="settlement-heading">
          <h3 id="settlement-heading">Settlement</h3>
          <Figures
            label="Settlement"
            entries={[
              ['Transition', `${e.settlement.transition}: ${TRANSITIONS[e.settlement.transition] ?? ''}`],
              ['Settled by', e.settlement.by],
              ['Charge', formatCredits(e.settlement.chargeCredits)],
            ]}
          />
        </div>
      )}
    </>
  );
}

/** What the explanation knows of a gateway call: its key, model, rate card version and how its attempt went. */
function gatewayFigures(gateway: ExplanationGateway): ReadonlyArray<readonly [string, ComponentChildren]> {
  return [
    ['Gateway key', `${gateway.keyName} (${gateway.keyId})`],
    ['Model', gateway.model],
    ['Rate card version', formatCount(gateway.rateCardVersion)],
    ['Streamed', gateway.stream ? 'yes' : 'no'],
    ...(gateway.classification === undefined
      ? []
      : ([['Upstream answer', `${gateway.classification}${gateway.httpStatus === undefined ? '' : `, HTTP ${gateway.httpStatus}`}${gateway.timedOut === true ? ', timed out' : ''}`]] as const)),
  ];
}

/** The attempts table's head: a column per usage kind some attempt used, grouped under "Usage". */
function AttemptsTableHead({ kinds, perAttemptModel }: { kinds: readonly string[]; perAttemptModel: boolean }) {
  return (
    <thead>
      {kinds.length > 0 && (
        <tr>
          <td colSpan={perAttemptModel ? 6 : 5} />
          <th scope="colgroup" colSpan={kinds.length} class="group">
            Usage
          </th>
          <td />
        </tr>
      )}
      <tr>
        <th scope="col">Attempt</th>
        <th scope="col">Wait before</th>
        <th scope="col">Duration</th>
        <th scope="col">Classification</th>
        <th scope="col">HTTP</th>
        {perAttemptModel && <th scope="col">Model</th>}
        {kinds.map((kind) => (
          <th scope="col" key={kind} class="num">
            {words(kind).replace(/ tokens$/, '')}
          </th>
        ))}
        <th scope="col" class="num">
          Price (credits)
        </th>
      </tr>
    </thead>
  );
}

function AttemptsView({ history, status }: { history: AttemptHistory; status: Loaded<InvocationStatus> }) {
  if (history.attempts.length === 0) return <p class="muted">No provider attempt was made.</p>;
  // Only the kinds some attempt used get a column; the others are named once below the table.
  const allKinds = usageByKind(history.usageTotals);
  const totals = allKinds.filter(([, count]) => count !== 0);
  const unused = allKinds.filter(([, count]) => count === 0).map(([kind]) => kind);
  const kinds = totals.map(([kind]) => kind);
  const models = [...new Set(history.attempts.map((a) => a.model))];
  const perAttemptModel = models.length > 1;
  const charge = status.status === 'ok' && isFinal(status.data.state) ? status.data.charge : undefined;
  return (
    <>
      <AttemptsWaterfall attempts={history.attempts} />
      {history.attemptsTruncated && (
        <p class="notice">
          {formatCountOf(history.attemptCount, 'attempt')} were made; the first {history.attempts.length} are kept. The totals count every attempt.
        </p>
      )}
      <p class="attempts-total">
        {formatCountOf(history.attemptCount, 'attempt')}, priced at {formatCredits(history.priceTotalCredits)}
        {charge !== undefined && <> — charged {formatCredits(charge)}</>}
        {!perAttemptModel && <span class="muted"> · model {models[0]}</span>}
      </p>
      <TableScroll label="Attempts table">
        <table>
          <caption class="visually-hidden">Attempts with their usage and price</caption>
          <AttemptsTableHead kinds={kinds} perAttemptModel={perAttemptModel} />
          <tbody>
            {history.attempts.map((attempt) => (
              <AttemptRowView key={`${attempt.turn}-${attempt.retry}`} attempt={attempt} kinds={kinds} showModel={perAttemptModel} />
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row" colSpan={perAttemptModel ? 6 : 5}>
                Total
              </th>
              {totals.map(([kind, count]) => (
                <td key={kind} class="num">
                  {formatCount(count)}
                </td>
              ))}
              <td class="num total-price">{formatCount(history.priceTotalCredits)}</td>
            </tr>
          </tfoot>
        </table>
      </TableScroll>
      {unused.length > 0 && <p class="muted">{unusedKindsSentence(unused)}</p>}
    </>
  );
}

function AttemptRowView({ attempt, kinds, showModel }: { attempt: AttemptRow; kinds: readonly string[]; showModel: boolean }) {
  const usage = attempt.usage === undefined ? undefined : new Map(usageByKind(attempt.usage));
  return (
    <tr>
      <th scope="row">{attemptLabel(attempt)}</th>
      <td>{formatDuration(attempt.waitBeforeMs)}</td>
      <td>
        {formatDuration(attempt.durationMs)}
        {attempt.timedOut === true && ' (timed out)'}
      </td>
      <td>
        <span class={`badge class-${attempt.classification === 'ok' ? 'ok' : 'fault'}`}>{attempt.classification}</span>
      </td>
      <td>{attempt.httpStatus ?? '—'}</td>
      {showModel && <td>{attempt.model}</td>}
      {kinds.map((kind) => (
        <td key={kind} class="num">
          {usage === undefined ? '—' : formatCount(usage.get(kind) ?? 0)}
        </td>
      ))}
      <td class="num price">{formatCount(attempt.priceCredits)}</td>
    </tr>
  );
}
