import { request as httpRequest } from 'node:http';
import { ALL_PROJECTIONS } from '../../projections';
import { EVENT_STORE, type EventStore, type RecordedEvent } from '../../src/event-store/event-store.port';
import { LedgerMetrics } from '../../src/observability/ledger-metrics';
import { LogMetricsFollower } from '../../src/observability/log-metrics.follower';
import { ObservabilityModule } from '../../src/observability/observability.module';
import { LiveProjections } from '../../src/projection-runner';
import { scriptedFault, scriptedToolUse } from '../../src/runtime';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { parseMetrics, samples } from './support/metrics-text';

const QUESTION = 'What is the secret number of the metrics test?';
const answering = scriptedFeature('metrics.answer', () => [
  scriptedToolUse([{ id: 'call-1', name: 'lookup', input: { q: 'x' } }], { usage: usage(100, 10) }),
  scriptedToolUse([{ id: 'call-2', name: 'submit_answer', input: { value: 42 } }], { usage: usage(100, 5, 20, 30) }),
]);
const failing = scriptedFeature('metrics.fail', () => [scriptedFault('malformed_request', { httpStatus: 400, usage: usage(200, 0) })]);
const disabled = scriptedFeature('metrics.off', () => []);

async function publish(ledger: HttpLedger, operationId: string, body: Record<string, unknown> = {}): Promise<void> {
  await ledger.http().put(`/v1/operations/${operationId}/publications`).set(bearer(TOKENS.system)).send(publicationBody(body)).expect(200);
}

async function grant(ledger: HttpLedger, organizationId: string, credits: number): Promise<void> {
  await ledger
    .http()
    .post(`/v1/organizations/${organizationId}/grants`)
    .set(bearer(TOKENS.system))
    .send({ credits, reason: 'plan', idempotencyKey: `plan-${organizationId}` })
    .expect(200);
}

async function invoke(ledger: HttpLedger, operationId: string, organizationId: string, token: string): Promise<void> {
  await ledger.http().post('/v1/invocations').set(bearer(token)).send({ operationId, organizationId, input: { question: QUESTION } }).expect(200);
}

/** What the log itself says about the run: the figures the counters must equal. */
function tallyLog(events: readonly RecordedEvent[]) {
  const operationOf = new Map<string, string>();
  const outcomeOf = new Map<string, string>();
  const invocations = new Map<string, number>();
  const refusals = new Map<string, number>();
  const charged = new Map<string, number>();
  const attempts = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, amount = 1) => map.set(key, (map.get(key) ?? 0) + amount);
  for (const event of events) {
    const data = event.data as Record<string, never>;
    switch (event.type) {
      case 'InvocationEstimated':
        operationOf.set(event.streamName, data.operationId);
        break;
      case 'InvocationCompleted':
        outcomeOf.set(event.streamName, data.outcome);
        break;
      case 'InvocationFailed':
        outcomeOf.set(event.streamName, 'failed');
        break;
      case 'InvocationRefused':
        add(invocations, `operation=${operationOf.get(event.streamName)},outcome=refused`);
        add(refusals, `operation=${operationOf.get(event.streamName)},reason=${data.reason}`);
        break;
      case 'InvocationSettled':
        add(invocations, `operation=${operationOf.get(event.streamName)},outcome=${outcomeOf.get(event.streamName) ?? 'none'}`);
        if ((data.chargeCredits as number) > 0) add(charged, `operation=${operationOf.get(event.streamName)}`, data.chargeCredits);
        break;
      case 'AttemptRecorded':
        add(attempts, `provider=scripted,model=${data.model},classification=${data.classification}`);
        break;
    }
  }
  return { invocations, refusals, charged, attempts };
}

async function scrape(ledger: HttpLedger): Promise<string> {
  const store = ledger.app.get<EventStore>(EVENT_STORE);
  const head = await store.headPosition();
  if (head !== undefined) await ledger.app.get(LogMetricsFollower).caughtUpTo(head);
  // The held-credits gauge reads the balances read model.
  await ledger.app.get(LiveProjections).caughtUp();
  const response = await ledger.http().get('/metrics').set(bearer(TOKENS.system)).expect(200);
  expect(response.headers['content-type']).toMatch(/^text\/plain;.*version=0\.0\.4/);
  return response.text;
}

function getPlain(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, method: 'GET' }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('README.md GET /metrics, fed from the log after commit', () => {
  let ledger: HttpLedger;

  beforeAll(async () => {
    ledger = await startHttpLedger({ features: [answering, failing, disabled], env: { METRICS_PORT: '0' } });
    await publish(ledger, 'metrics.answer');
    await publish(ledger, 'metrics.fail');
    await publish(ledger, 'metrics.off', { enabled: false });
    await grant(ledger, 'acme', 50_000);
    await grant(ledger, 'globex', 10);
    for (let index = 0; index < 3; index++) await invoke(ledger, 'metrics.answer', 'acme', TOKENS.acmeMember);
    await invoke(ledger, 'metrics.fail', 'acme', TOKENS.acmeMember);
    await invoke(ledger, 'metrics.off', 'acme', TOKENS.acmeMember);
    await invoke(ledger, 'metrics.answer', 'globex', TOKENS.globexMember);
  });

  afterAll(() => ledger.close());

  it('counts invocations by outcome, refusals by reason, credits charged and attempts exactly as the log records them', async () => {
    const families = parseMetrics(await scrape(ledger));
    const log = tallyLog(await ledger.app.get<EventStore>(EVENT_STORE).readAll());

    expect(samples(families, 'ledger_invocations_total', ['operation', 'outcome'])).toEqual(log.invocations);
    expect(samples(families, 'ledger_refusals_total', ['operation', 'reason'])).toEqual(log.refusals);
    expect(samples(families, 'ledger_credits_charged_total', ['operation'])).toEqual(log.charged);
    expect(samples(families, 'ledger_attempts_total', ['provider', 'model', 'classification'])).toEqual(log.attempts);
    // The scripted run, spelled out, so the comparison above cannot pass on two empty maps.
    expect(log.invocations).toEqual(
      new Map([
        ['operation=metrics.answer,outcome=completed', 3],
        ['operation=metrics.fail,outcome=failed', 1],
        ['operation=metrics.off,outcome=refused', 1],
        ['operation=metrics.answer,outcome=refused', 1],
      ]),
    );
    expect(log.refusals).toEqual(
      new Map([
        ['operation=metrics.off,reason=operation_disabled', 1],
        ['operation=metrics.answer,reason=insufficient_credits', 1],
      ]),
    );
    expect([...log.charged.values()].every((credits) => credits > 0)).toBe(true);
  });

  it('has the histograms, the held-credits gauge, a lag gauge per projection and the process metrics', async () => {
    const families = parseMetrics(await scrape(ledger));
    for (const name of ['ledger_provider_attempt_duration_seconds', 'ledger_accounting_overhead_seconds', 'ledger_append_duration_seconds']) {
      expect(families.get(name)?.type).toBe('HISTOGRAM');
    }
    // The parser folds labelled histograms together, so their counts are read from the registry.
    const registry = ledger.app.get(LedgerMetrics).registry;
    const count = async (name: string, labels: Record<string, string> = {}) => {
      const values = (await registry.getSingleMetric(name)!.get()).values;
      return values
        .filter((value) => (value as { metricName?: string }).metricName === `${name}_count` && Object.entries(labels).every(([key, label]) => value.labels[key] === label))
        .reduce((sum, value) => sum + value.value, 0);
    };
    expect(await count('ledger_provider_attempt_duration_seconds')).toBe(7);
    expect(await count('ledger_accounting_overhead_seconds', { operation: 'metrics.answer' })).toBe(4);
    expect(await count('ledger_append_duration_seconds')).toBeGreaterThan(0);
    // Everything settled: nothing held.
    expect(samples(families, 'ledger_credits_held', [])).toEqual(new Map([['', 0]]));
    const lag = samples(families, 'ledger_projection_lag_events', ['projection']);
    expect([...lag.keys()].sort()).toEqual(ALL_PROJECTIONS.map(({ name }) => `projection=${name}`).sort());
    expect(families.get('process_cpu_user_seconds_total')?.type).toBe('COUNTER');
    expect(families.has('nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('keeps labels bounded: no organization or invocation ids, and no conversation text', async () => {
    const text = await scrape(ledger);
    expect(text).not.toContain('acme');
    expect(text).not.toContain('globex');
    expect(text).not.toContain('invocation_id');
    expect(text).not.toContain(QUESTION);
    for (const family of parseMetrics(text).values()) {
      for (const sample of family.metrics) expect(Object.keys(sample.labels ?? {})).not.toContain('organization');
    }
  });

  it('is for the system role on the API port: 401 without a token, 403 for an organization admin', async () => {
    await ledger.http().get('/metrics').expect(401);
    await ledger.http().get('/metrics').set(bearer(TOKENS.acmeAdmin)).expect(403);
    await ledger.http().get('/metrics').set(bearer(TOKENS.auditor)).expect(403);
  });

  it('serves the same exposition without a token on METRICS_PORT, and nothing else there', async () => {
    const port = ledger.app.get(ObservabilityModule).metricsPort!;
    expect(port).toBeGreaterThan(0);
    const metrics = await getPlain(port, '/metrics');
    expect(metrics.status).toBe(200);
    expect(parseMetrics(metrics.body).has('ledger_invocations_total')).toBe(true);
    expect((await getPlain(port, '/v1/organizations/acme/balance')).status).toBe(404);
  });
});

describe('README.md organization labels, only when the operator turns them on', () => {
  it('labels the per-organization metrics with the organization under LEDGER_METRICS_ORGANIZATION_LABELS=1', async () => {
    const ledger = await startHttpLedger({ features: [answering], env: { LEDGER_METRICS_ORGANIZATION_LABELS: '1' } });
    try {
      await publish(ledger, 'metrics.answer');
      await grant(ledger, 'acme', 50_000);
      await invoke(ledger, 'metrics.answer', 'acme', TOKENS.acmeMember);
      const families = parseMetrics(await scrape(ledger));
      expect(samples(families, 'ledger_invocations_total', ['operation', 'outcome', 'organization'])).toEqual(
        new Map([['operation=metrics.answer,outcome=completed,organization=acme', 1]]),
      );
      expect([...samples(families, 'ledger_credits_held', ['organization']).keys()]).toEqual(['organization=acme']);
    } finally {
      await ledger.close();
    }
  });
});
