import type { OperationFeature } from '../../src/features/operation-feature';
import { scriptedFeature } from '../support/scripted-feature';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const PUBLICATION = '/v1/operations/demo.arithmetic/publications';
const run = (question: string, extra: Record<string, unknown> = {}) => ({
  operationId: 'demo.arithmetic',
  organizationId: 'acme',
  input: { question },
  ...extra,
});

/** A feature whose preparation fails in a way nobody anticipated. */
const broken: OperationFeature = {
  operationId: 'test.broken',
  prepare() {
    throw new Error('secret internal detail: /srv/ledger/feature.ts line 12');
  },
};

describe('demo.arithmetic end to end over HTTP on a file-backed SQLite store', () => {
  let ledger: HttpLedger;

  beforeAll(async () => {
    // A second registered operation, so an idempotency key can be reused for a different one.
    ledger = await startHttpLedger({ features: [scriptedFeature('test.other', () => []), broken] });
    await ledger.http().put(PUBLICATION).set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 2_000 })).expect(200, { operationId: 'demo.arithmetic', version: 1 });
    await ledger
      .http()
      .post('/v1/organizations/acme/grants')
      .set(bearer(TOKENS.system))
      .send({ credits: 50_000, reason: 'plan', idempotencyKey: 'plan-1' })
      .expect(200);
  });

  afterAll(() => ledger.close());

  it('runs a question to a settled, accepted answer and returns the documented result once settled', async () => {
    const response = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send(run('What is (6+1)*6?'));
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(
      ['answer', 'charge', 'estimate', 'invocationId', 'outcome', 'publicationVersion', 'state', 'toolCallsUsed', 'turnsUsed'].sort(),
    );
    expect(response.body).toMatchObject({ state: 'settled', outcome: 'completed', estimate: 2_000, turnsUsed: 2, toolCallsUsed: 1 });
    expect(response.body.answer).toEqual({ value: 42 });
    const { invocationId, charge } = response.body as { invocationId: string; charge: number };
    expect(Number.isInteger(charge) && charge > 0).toBe(true);

    const status = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(status.body).toMatchObject({ invocationId, state: 'settled', outcome: 'completed', publicationVersion: 1, estimate: 2_000, charge });

    const attempts = await ledger.http().get(`/v1/invocations/${invocationId}/attempts`).set(bearer(TOKENS.acmeMember)).expect(200);
    expect(attempts.body.attempts.map((a: { turn: number; retry: number }) => [a.turn, a.retry])).toEqual([[1, 0], [2, 0]]);
    expect(attempts.body.priceTotalCredits).toBe(charge);

    const explanation = await ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.acmeMember)).expect(200);
    expect(explanation.body).toMatchObject({ state: 'settled', outcome: 'completed', credits: { charge } });
    expect(explanation.body.sentence).toEqual(expect.stringContaining('Completed'));

    // The caller reads its own write: the balance already shows the charge.
    const balance = await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(balance.body).toEqual({ organizationId: 'acme', granted: 50_000, adjustments: 0, held: 0, charged: charge, available: 50_000 - charge, running: 0 });
  });

  it('returns the accepted answer of "What is 6*7?" in the result: the submit_answer input (README.md "The answer")', async () => {
    const response = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send(run('What is 6*7?')).expect(200);
    expect(response.body).toMatchObject({ state: 'settled', outcome: 'completed', answer: { value: 42 } });
    // The status read comes from the read models, which never hold the answer.
    const status = await ledger.http().get(`/v1/invocations/${response.body.invocationId}`).set(bearer(TOKENS.acmeMember)).expect(200);
    expect(status.body.answer).toBeUndefined();
  });

  it('answers a repeated idempotency key with the first result, and a reuse for another operation with 422 idempotency_key_reused', async () => {
    const first = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send(run('What is 2*21?', { idempotencyKey: 'req-1' })).expect(200);
    const again = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeAdmin)).send(run('What is 2*21?', { idempotencyKey: 'req-1' })).expect(200);
    expect(again.body).toEqual(first.body);
    const reused = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ ...run('What is 2*21?', { idempotencyKey: 'req-1' }), operationId: 'test.other' });
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe('idempotency_key_reused');
  });

  it('answers a refused admission with its reason, as a result rather than an error', async () => {
    await ledger.http().put('/v1/organizations/acme/settings').set(bearer(TOKENS.system)).send({ aiEnabled: false }).expect(200, {
      organizationId: 'acme',
      aiEnabled: false,
      maxRunning: 10,
    });
    const refused = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send(run('What is 1+1?')).expect(200);
    expect(refused.body).toMatchObject({ state: 'refused', refusalReason: 'ai_disabled', charge: 0 });
    await ledger.http().put('/v1/organizations/acme/settings').set(bearer(TOKENS.system)).send({ aiEnabled: true }).expect(200);
  });

  it('answers a grant repeated with its key with the first result, and the key reused for another amount with 422 (docs/lifecycle.md)', async () => {
    const grant = { credits: 1_000, reason: 'bonus', idempotencyKey: 'bonus-1' };
    const first = await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send(grant).expect(200);
    expect(first.body.repeated).toBe(false);
    const again = await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send(grant).expect(200);
    expect(again.body).toMatchObject({ repeated: true, balance: first.body.balance });
    const conflict = await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ ...grant, credits: 2_000 });
    expect(conflict.status).toBe(422);
    expect(conflict.body).toMatchObject({ statusCode: 422, error: 'Unprocessable Entity', code: 'idempotency_key_reused', fields: { idempotencyKey: [expect.any(String)] } });
  });

  it('adjusts credits down with a negative integer', async () => {
    const response = await ledger
      .http()
      .post('/v1/organizations/acme/adjustments')
      .set(bearer(TOKENS.system))
      .send({ credits: -250, reason: 'correction', idempotencyKey: 'fix-1' })
      .expect(200);
    expect(response.body).toMatchObject({ kind: 'adjustment', credits: -250, repeated: false, balance: { adjustments: -250 } });
  });

  it('lists every publication with its window, and keeps the earlier window closed when a new version is published', async () => {
    await ledger.http().put(PUBLICATION).set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 3_000 })).expect(200, { operationId: 'demo.arithmetic', version: 2 });
    const history = await ledger.http().get(PUBLICATION).set(bearer(TOKENS.auditor)).expect(200);
    expect(history.body.operationId).toBe('demo.arithmetic');
    const [v1, v2] = history.body.versions as Array<{ version: number; creditHold: number; from: string; until?: string }>;
    expect(v1).toMatchObject({ version: 1, creditHold: 2_000, until: v2!.from });
    expect(v2).toMatchObject({ version: 2, creditHold: 3_000 });
    expect(v2!.until).toBeUndefined();
    expect((await ledger.http().get('/v1/operations/never.published/publications').set(bearer(TOKENS.system))).status).toBe(404);
  });

  it('reads a stream in order with string revisions and positions, from a revision, and 404 for a stream that does not exist', async () => {
    const all = await ledger.http().get('/v1/streams/account-acme').set(bearer(TOKENS.auditor)).expect(200);
    const revisions = (all.body.events as Array<{ revision: string; position: string }>).map((event) => event.revision);
    expect(revisions).toEqual(revisions.map((_, index) => String(index)));
    const positions = (all.body.events as Array<{ position: string }>).map((event) => BigInt(event.position));
    expect(positions).toEqual([...positions].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(all.body.events[0]).toMatchObject({ type: 'CreditsGranted', data: { credits: 50_000 } });
    expect(all.body.nextFrom).toBeUndefined();

    const tail = await ledger.http().get('/v1/streams/account-acme?from=2').set(bearer(TOKENS.system)).expect(200);
    expect(tail.body.from).toBe('2');
    expect(tail.body.events).toEqual(all.body.events.slice(2));

    const past = await ledger.http().get(`/v1/streams/account-acme?from=${revisions.length + 10}`).set(bearer(TOKENS.system)).expect(200);
    expect(past.body.events).toEqual([]);

    const missing = await ledger.http().get('/v1/streams/invocation-does-not-exist').set(bearer(TOKENS.auditor));
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 'not_found', message: 'stream "invocation-does-not-exist" was not found' });
  });

  it('sweeps with a staleness threshold and reports that nothing live was settled', async () => {
    const response = await ledger.http().post('/v1/settlements/sweep').set(bearer(TOKENS.system)).send({ olderThanMs: 60_000 }).expect(200);
    expect(response.body).toEqual({ olderThanMs: 60_000, settled: [], releasedHolds: [] });
  });

  it('answers an unexpected failure with 500 "internal error" and the request id, keeping the details for the log line', async () => {
    const response = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.system)).send({ ...run('What is 1+1?'), operationId: 'test.broken' });
    expect(response.status).toBe(500);
    expect(response.body).toEqual({
      statusCode: 500,
      error: 'Internal Server Error',
      code: 'internal_error',
      message: 'internal error',
      requestId: response.headers['x-request-id'],
    });
    expect(JSON.stringify(response.body)).not.toContain('secret');
    const logged = ledger.logs.filter((line) => line.includes(response.body.requestId));
    expect(logged.some((line) => line.includes('secret internal detail'))).toBe(true);
  });

  it('reports liveness, and readiness with the store’s head and every projection’s lag', async () => {
    expect((await ledger.http().get('/health/live').expect(200)).body.status).toBe('ok');
    const ready = await ledger.http().get('/health/ready').expect(200);
    expect(ready.body.info.eventStore.status).toBe('up');
    expect(ready.body.info.projections).toMatchObject({ status: 'up', state: 'live' });
    expect(Object.keys(ready.body.info.projections.lag)).toEqual(
      expect.arrayContaining(['invocations', 'balances', 'attempts', 'explanations', 'routing-budgets']),
    );
  });

  it('documents every route of docs/http.md in OpenAPI, behind bearer auth', async () => {
    const document = (await ledger.http().get('/docs-json').expect(200)).body as {
      paths: Record<string, Record<string, { security?: unknown[]; description?: string }>>;
      components: { securitySchemes: Record<string, { scheme: string }> };
    };
    const routes = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(routes).toEqual(
      expect.arrayContaining([
        'PUT /v1/operations/{operationId}/publications',
        'GET /v1/operations/{operationId}/publications',
        'POST /v1/organizations/{organizationId}/grants',
        'POST /v1/organizations/{organizationId}/adjustments',
        'PUT /v1/organizations/{organizationId}/settings',
        'GET /v1/organizations/{organizationId}/balance',
        'POST /v1/invocations',
        'GET /v1/invocations/{invocationId}',
        'GET /v1/invocations/{invocationId}/attempts',
        'GET /v1/invocations/{invocationId}/explanation',
        'GET /v1/streams/{streamName}',
        'POST /v1/settlements/sweep',
      ]),
    );
    expect(Object.values(document.components.securitySchemes).map((scheme) => scheme.scheme)).toContain('bearer');
    for (const [path, methods] of Object.entries(document.paths)) {
      if (!path.startsWith('/v1/')) continue;
      for (const operation of Object.values(methods)) {
        expect(operation.security).toBeDefined();
        expect(operation.description).toEqual(expect.any(String));
      }
    }
  });
});
