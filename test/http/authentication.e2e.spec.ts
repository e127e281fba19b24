import { bearer, HttpLedger, LEDGER_TOKENS, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

type Method = 'get' | 'put' | 'post';
interface Route {
  readonly method: Method;
  readonly path: string;
  readonly body?: object;
}

/** The routes only an operator may use (docs/http.md, role system), each with a body it would accept. */
const SYSTEM_ROUTES: readonly Route[] = [
  { method: 'put', path: '/v1/operations/demo.arithmetic/publications', body: publicationBody() },
  { method: 'post', path: '/v1/organizations/acme/grants', body: { credits: 100, reason: 'top-up', idempotencyKey: 'forbidden-grant' } },
  { method: 'post', path: '/v1/organizations/acme/adjustments', body: { credits: -5, reason: 'fix', idempotencyKey: 'forbidden-adjust' } },
  { method: 'put', path: '/v1/organizations/acme/settings', body: { aiEnabled: false } },
  { method: 'post', path: '/v1/settlements/sweep', body: { olderThanMs: 60_000 } },
];

/** Operator and auditor routes: the log and the catalog's history are not a customer's to read. */
const OPERATOR_READ_ROUTES: readonly Route[] = [
  { method: 'get', path: '/v1/operations/demo.arithmetic/publications' },
  { method: 'get', path: '/v1/streams/account-acme' },
];

const ALL_ROUTES: readonly Route[] = [
  ...SYSTEM_ROUTES,
  ...OPERATOR_READ_ROUTES,
  { method: 'get', path: '/v1/organizations/acme/balance' },
  { method: 'post', path: '/v1/invocations', body: { operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: '1+1' } } },
  { method: 'get', path: '/v1/invocations/00000000-0000-4000-8000-000000000000' },
  { method: 'get', path: '/v1/invocations/00000000-0000-4000-8000-000000000000/attempts' },
  { method: 'get', path: '/v1/invocations/00000000-0000-4000-8000-000000000000/explanation' },
];

function call(ledger: HttpLedger, route: Route, headers: Record<string, string> = {}) {
  const test = ledger.http()[route.method](route.path).set(headers);
  return route.body === undefined ? test : test.send(route.body);
}

const label = (route: Route) => `${route.method.toUpperCase()} ${route.path}`;

describe('HTTP authentication and roles (docs/http.md: 401 without a valid token, 403 for a role the route does not allow)', () => {
  let ledger: HttpLedger;

  beforeAll(async () => {
    ledger = await startHttpLedger();
  });

  afterAll(() => ledger.close());

  describe('401 without a valid token', () => {
    it.each(ALL_ROUTES.map((route) => [label(route), route] as const))('refuses %s without a token, and says which scheme to use', async (_label, route) => {
      const response = await call(ledger, route);
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ statusCode: 401, error: 'Unauthorized', code: 'unauthorized' });
      expect(response.headers['www-authenticate']).toMatch(/^Bearer /);
    });

    it.each([
      ['another scheme', 'Basic dGVzdDp0ZXN0'],
      ['the scheme alone', 'Bearer'],
      ['an empty token', 'Bearer '],
      ['two tokens', `Bearer ${TOKENS.system} ${TOKENS.system}`],
      ['a token with characters a bearer token cannot hold', 'Bearer abc;def'],
      ['the token without its scheme', TOKENS.system],
      ['an overlong token', `Bearer ${'a'.repeat(600)}`],
    ])('refuses a malformed Authorization header (%s) as an invalid token', async (_case, header) => {
      const response = await ledger.http().get('/v1/organizations/acme/balance').set('Authorization', header);
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('unauthorized');
      expect(response.headers['www-authenticate']).toContain('error="invalid_token"');
    });

    it('refuses a well-formed token it does not know', async () => {
      const response = await ledger.http().get('/v1/organizations/acme/balance').set(bearer('not-a-ledger-token'));
      expect(response.status).toBe(401);
      expect(response.body.message).toBe('the bearer token is not valid');
    });

    it('reads the scheme name case-insensitively, as RFC 7235 asks', async () => {
      const response = await ledger.http().get('/v1/streams/account-nobody').set('Authorization', `bearer ${TOKENS.auditor}`);
      expect(response.status).toBe(404);
    });

    it('serves the health probes and the OpenAPI document without a token', async () => {
      expect((await ledger.http().get('/health/live')).status).toBe(200);
      expect((await ledger.http().get('/health/ready')).status).toBe(200);
      expect((await ledger.http().get('/docs-json')).status).toBe(200);
    });
  });

  describe('403 for a customer’s administrator on every system route, and nothing written', () => {
    it.each(SYSTEM_ROUTES.map((route) => [label(route), route] as const))('refuses org_admin on %s, because the route is system', async (_label, route) => {
      const response = await call(ledger, route, bearer(TOKENS.acmeAdmin));
      expect(response.status).toBe(403);
      expect(response.body).toMatchObject({ statusCode: 403, error: 'Forbidden', code: 'forbidden' });
    });

    it.each(OPERATOR_READ_ROUTES.map((route) => [label(route), route] as const))('refuses org_admin on %s, an operator and auditor read', async (_label, route) => {
      const response = await call(ledger, route, bearer(TOKENS.acmeAdmin));
      expect(response.status).toBe(403);
    });

    it.each(SYSTEM_ROUTES.map((route) => [label(route), route] as const))('refuses the read-only auditor on %s', async (_label, route) => {
      expect((await call(ledger, route, bearer(TOKENS.auditor))).status).toBe(403);
    });

    it('refuses an org_member the balance, which is its administrator’s to read', async () => {
      expect((await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.acmeMember))).status).toBe(403);
    });

    it('refuses the auditor a run: reading everything is not acting for anyone', async () => {
      const route = ALL_ROUTES.find((r) => r.path === '/v1/invocations')!;
      expect((await call(ledger, route, bearer(TOKENS.auditor))).status).toBe(403);
    });

    it('wrote nothing for any refused request', async () => {
      for (const stream of ['operation-demo.arithmetic', 'account-acme']) {
        const response = await ledger.http().get(`/v1/streams/${stream}`).set(bearer(TOKENS.system));
        expect(response.status).toBe(404);
      }
    });
  });

  describe('structured request logs', () => {
    it('writes one line per request with method, path, status, duration and request id, and never a token or a body', async () => {
      const secretReason = 'reason-that-must-not-be-logged';
      const response = await ledger
        .http()
        .post('/v1/organizations/acme/grants?trace=1')
        .set(bearer(TOKENS.system))
        .set('X-Request-Id', 'client-chosen-id-1')
        .send({ credits: 10, reason: secretReason, idempotencyKey: 'log-check' });
      expect(response.status).toBe(200);
      expect(response.headers['x-request-id']).toBe('client-chosen-id-1');

      const lines = ledger.logs.filter((line) => line.includes('client-chosen-id-1'));
      const requestLines = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.message === 'request');
      expect(requestLines).toHaveLength(1);
      const [requestLine] = requestLines;
      expect(requestLine).toMatchObject({
        context: 'Http',
        method: 'POST',
        path: '/v1/organizations/acme/grants',
        status: 200,
        requestId: 'client-chosen-id-1',
        role: 'system',
      });
      expect(typeof requestLine?.durationMs).toBe('number');
      // pino's own fields and the request's, nothing else: no header, query or body.
      expect(Object.keys(requestLine!).sort()).toEqual(
        ['context', 'durationMs', 'hostname', 'level', 'message', 'method', 'path', 'pid', 'requestId', 'role', 'status', 'time'].sort(),
      );

      const everything = ledger.logs.join('\n');
      for (const token of Object.keys(JSON.parse(LEDGER_TOKENS) as object)) expect(everything).not.toContain(token);
      expect(everything).not.toContain(secretReason);
    });
  });
});
