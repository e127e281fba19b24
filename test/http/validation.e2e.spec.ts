import { MAX_REQUEST_BODY_BYTES } from '../../src/http-kit/configure-http';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const limits = (overrides: Record<string, unknown>) =>
  publicationBody({ limits: { ...(publicationBody().limits as object), ...overrides } });
const prices = (overrides: Record<string, unknown>) =>
  publicationBody({ prices: { ...(publicationBody().prices as object), ...overrides } });
const without = (body: Record<string, unknown>, field: string) => {
  const { [field]: _dropped, ...rest } = body;
  return rest;
};
const grant = { credits: 500, reason: 'plan', idempotencyKey: 'grant-1' };
const run = { operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 6*7?' } };

type Case = readonly [description: string, method: 'put' | 'post', path: string, body: unknown, field: string];

const PUBLICATION = '/v1/operations/demo.arithmetic/publications';
const GRANTS = '/v1/organizations/acme/grants';
const ADJUSTMENTS = '/v1/organizations/acme/adjustments';
const SETTINGS = '/v1/organizations/acme/settings';
const INVOCATIONS = '/v1/invocations';
const SWEEP = '/v1/settlements/sweep';

const CASES: readonly Case[] = [
  ['a publication without limits.maxTurns', 'put', PUBLICATION, limits({ maxTurns: undefined }), 'limits.maxTurns'],
  ['a publication with zero limits.maxTurns', 'put', PUBLICATION, limits({ maxTurns: 0 }), 'limits.maxTurns'],
  ['a publication with negative limits.maxToolCalls', 'put', PUBLICATION, limits({ maxToolCalls: -1 }), 'limits.maxToolCalls'],
  ['a publication with fractional limits.totalTimeMs', 'put', PUBLICATION, limits({ totalTimeMs: 1500.5 }), 'limits.totalTimeMs'],
  ['a publication with limits.attemptTimeoutMs as a string', 'put', PUBLICATION, limits({ attemptTimeoutMs: '1000' }), 'limits.attemptTimeoutMs'],
  ['a publication with negative limits.maxOutputTokens', 'put', PUBLICATION, limits({ maxOutputTokens: -10 }), 'limits.maxOutputTokens'],
  ['a publication with fractional limits.maxAttemptsPerTurn', 'put', PUBLICATION, limits({ maxAttemptsPerTurn: 2.5 }), 'limits.maxAttemptsPerTurn'],
  ['a publication with an unknown limit', 'put', PUBLICATION, limits({ maxRetries: 9 }), 'limits.maxRetries'],
  ['a publication without limits', 'put', PUBLICATION, without(publicationBody(), 'limits'), 'limits'],
  ['a publication without prices.outputPerMTok', 'put', PUBLICATION, prices({ outputPerMTok: undefined }), 'prices.outputPerMTok'],
  ['a publication with a negative prices.inputPerMTok', 'put', PUBLICATION, prices({ inputPerMTok: -3 }), 'prices.inputPerMTok'],
  ['a publication with a fractional prices.cacheReadPerMTok', 'put', PUBLICATION, prices({ cacheReadPerMTok: 0.3 }), 'prices.cacheReadPerMTok'],
  ['a publication with prices as an array', 'put', PUBLICATION, publicationBody({ prices: [1, 2, 3, 4] }), 'prices'],
  ['a publication with a negative creditHold', 'put', PUBLICATION, publicationBody({ creditHold: -1 }), 'creditHold'],
  ['a publication with a fractional creditHold', 'put', PUBLICATION, publicationBody({ creditHold: 10.5 }), 'creditHold'],
  ['a publication routed to an unknown provider', 'put', PUBLICATION, publicationBody({ routing: { provider: 'openai', model: 'x' } }), 'routing.provider'],
  ['a publication without a model', 'put', PUBLICATION, publicationBody({ routing: { provider: 'scripted' } }), 'routing.model'],
  ['a publication naming a fallback model, which no publication may name', 'put', PUBLICATION, publicationBody({ fallbackModel: 'other' }), 'fallbackModel'],
  ['a publication with enabled as a string', 'put', PUBLICATION, publicationBody({ enabled: 'yes' }), 'enabled'],
  ['a grant of fractional credits', 'post', GRANTS, { ...grant, credits: 10.5 }, 'credits'],
  ['a grant of credits as a string', 'post', GRANTS, { ...grant, credits: '500' }, 'credits'],
  ['a grant of zero credits', 'post', GRANTS, { ...grant, credits: 0 }, 'credits'],
  ['a grant of negative credits', 'post', GRANTS, { ...grant, credits: -5 }, 'credits'],
  ['a grant without idempotency key', 'post', GRANTS, without(grant, 'idempotencyKey'), 'idempotencyKey'],
  ['a grant with a blank idempotency key', 'post', GRANTS, { ...grant, idempotencyKey: '  ' }, 'idempotencyKey'],
  ['a grant without a reason', 'post', GRANTS, without(grant, 'reason'), 'reason'],
  ['a grant with an unknown field', 'post', GRANTS, { ...grant, currency: 'EUR' }, 'currency'],
  ['an adjustment of fractional credits', 'post', ADJUSTMENTS, { ...grant, credits: -0.5 }, 'credits'],
  ['an adjustment of zero credits', 'post', ADJUSTMENTS, { ...grant, credits: 0 }, 'credits'],
  ['an adjustment without idempotency key', 'post', ADJUSTMENTS, without(grant, 'idempotencyKey'), 'idempotencyKey'],
  ['settings with a zero maxRunning', 'put', SETTINGS, { maxRunning: 0 }, 'maxRunning'],
  ['settings with a fractional maxRunning', 'put', SETTINGS, { maxRunning: 1.5 }, 'maxRunning'],
  ['settings with aiEnabled as null', 'put', SETTINGS, { aiEnabled: null }, 'aiEnabled'],
  ['settings naming neither setting', 'put', SETTINGS, {}, 'settings'],
  ['an invocation without operationId', 'post', INVOCATIONS, without(run, 'operationId'), 'operationId'],
  ['an invocation without input', 'post', INVOCATIONS, without(run, 'input'), 'input'],
  ['an invocation whose input the feature cannot use', 'post', INVOCATIONS, { ...run, input: { question: 'no numbers here' } }, 'input.question'],
  ['an invocation trying to choose its own routing', 'post', INVOCATIONS, { ...run, routing: { provider: 'anthropic', model: 'x' } }, 'routing'],
  ['a sweep without olderThanMs', 'post', SWEEP, {}, 'olderThanMs'],
  ['a sweep with a negative olderThanMs', 'post', SWEEP, { olderThanMs: -1 }, 'olderThanMs'],
  ['a sweep with a fractional olderThanMs', 'post', SWEEP, { olderThanMs: 1500.5 }, 'olderThanMs'],
  ['a sweep with olderThanMs as a string', 'post', SWEEP, { olderThanMs: '60000' }, 'olderThanMs'],
  ['a sweep with a threshold under a second, which could catch live requests', 'post', SWEEP, { olderThanMs: 10 }, 'olderThanMs'],
];

describe('HTTP bad input (docs/http.md): a 400 naming each bad field, and nothing written', () => {
  let ledger: HttpLedger;

  beforeAll(async () => {
    ledger = await startHttpLedger();
    // A funded organization and a published operation, so an invocation fails on its body alone.
    await ledger.http().put(PUBLICATION).set(bearer(TOKENS.system)).send(publicationBody()).expect(200);
    await ledger.http().post(GRANTS).set(bearer(TOKENS.system)).send({ ...grant, idempotencyKey: 'seed' }).expect(200);
  });

  afterAll(() => ledger.close());

  it.each(CASES)('refuses %s, naming the field', async (_description, method, path, body, field) => {
    const token = path === INVOCATIONS ? TOKENS.acmeMember : TOKENS.system;
    const response = await ledger.http()[method](path).set(bearer(token)).send(body as object);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'invalid_request' });
    expect(Object.keys(response.body.fields)).toContain(field);
    expect(response.body.fields[field]).toEqual([expect.any(String)]);
    expect(typeof response.body.requestId).toBe('string');
  });

  it('names every bad field of a body at once, each with what is wrong with it', async () => {
    const response = await ledger
      .http()
      .put(PUBLICATION)
      .set(bearer(TOKENS.system))
      .send(publicationBody({ limits: { maxTurns: 0 }, creditHold: -1, extra: true }));
    expect(response.status).toBe(400);
    expect(response.body.fields).toMatchObject({
      'limits.maxTurns': ['must be at least 1 turns'],
      'limits.maxToolCalls': ['is required'],
      creditHold: ['must not be negative'],
      extra: ['is not a known field'],
    });
  });

  it('refuses malformed JSON with a 400 naming the body, never a 500', async () => {
    const response = await ledger.http().post(GRANTS).set(bearer(TOKENS.system)).set('Content-Type', 'application/json').send('{"credits": 5,');
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'invalid_request', fields: { body: ['is not valid JSON'] } });
  });

  it('refuses a JSON array where an object is expected, naming the body', async () => {
    const response = await ledger.http().post(SWEEP).set(bearer(TOKENS.system)).send([{ olderThanMs: 60_000 }]);
    expect(response.status).toBe(400);
    expect(response.body.fields).toEqual({ body: ['must be a JSON object'] });
  });

  it('reads a request without a body as one with every field missing', async () => {
    const response = await ledger.http().post(SWEEP).set(bearer(TOKENS.system));
    expect(response.status).toBe(400);
    expect(response.body.fields).toEqual({ olderThanMs: ['is required'] });
  });

  it('refuses a body over MAX_REQUEST_BODY_BYTES with 413', async () => {
    const response = await ledger
      .http()
      .post(GRANTS)
      .set(bearer(TOKENS.system))
      .send({ ...grant, reason: 'x'.repeat(MAX_REQUEST_BODY_BYTES) });
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ statusCode: 413, error: 'Payload Too Large', code: 'payload_too_large' });
  });

  it('refuses a body that is not JSON with 415', async () => {
    const response = await ledger.http().post(GRANTS).set(bearer(TOKENS.system)).set('Content-Type', 'text/plain').send('credits=5');
    expect(response.status).toBe(415);
    expect(response.body.code).toBe('unsupported_media_type');
  });

  it('answers 401 before looking at the body of an unauthenticated request', async () => {
    const response = await ledger.http().post(GRANTS).set('Content-Type', 'application/json').send('{not json');
    expect(response.status).toBe(401);
  });

  it.each([
    ['a revision that is not a number', '?from=abc', 'from'],
    ['a negative revision', '?from=-1', 'from'],
    ['an unknown query parameter', '?limit=5', 'limit'],
    ['a query parameter named like an Object.prototype member', '?constructor=1', 'constructor'],
    ['a query parameter named __proto__', '?__proto__=1', '__proto__'],
  ])('refuses a stream read with %s', async (_case, query, field) => {
    const response = await ledger.http().get(`/v1/streams/account-acme${query}`).set(bearer(TOKENS.auditor));
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields)).toContain(field);
  });

  it('refuses a stream name reserved for the store’s system streams', async () => {
    const response = await ledger.http().get('/v1/streams/$all').set(bearer(TOKENS.auditor));
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields)).toEqual(['streamName']);
  });

  it('wrote nothing for any refused body: one publication, one grant, no invocation, settings untouched', async () => {
    const operation = await ledger.http().get('/v1/streams/operation-demo.arithmetic').set(bearer(TOKENS.auditor)).expect(200);
    expect(operation.body.events.map((e: { type: string }) => e.type)).toEqual(['OperationPublished']);
    const account = await ledger.http().get('/v1/streams/account-acme').set(bearer(TOKENS.auditor)).expect(200);
    expect(account.body.events.map((e: { type: string }) => e.type)).toEqual(['CreditsGranted']);
    const balance = await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(balance.body).toMatchObject({ granted: 500, held: 0, charged: 0, running: 0 });
  });
});
