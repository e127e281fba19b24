import { bearer, startHttpLedger, TOKENS, type HttpLedger } from './support/http-ledger';

describe('GET /v1/me: who the bearer token is (issue 26, finding 4)', () => {
  let ledger: HttpLedger;
  beforeAll(async () => {
    ledger = await startHttpLedger({ env: { LEDGER_DEMO: '1' } });
  });
  afterAll(() => ledger?.close());

  it.each([
    [TOKENS.system, { role: 'system' }],
    [TOKENS.auditor, { role: 'auditor' }],
    [TOKENS.acmeAdmin, { role: 'org_admin', organizationId: 'acme' }],
    [TOKENS.globexMember, { role: 'org_member', organizationId: 'globex' }],
    ['demo-member-token', { role: 'org_member', organizationId: 'demo-org' }],
  ])('answers the role and organization of %s, and nothing else', async (token, expected) => {
    const response = await ledger.http().get('/v1/me').set(bearer(token)).expect(200);
    expect(response.body).toEqual(expected);
  });

  it('answers 401 in the error shape to no token and to a token it does not know', async () => {
    const missing = await ledger.http().get('/v1/me').expect(401);
    expect(missing.body).toMatchObject({ statusCode: 401, message: 'a bearer token is required', requestId: expect.any(String) });
    const unknown = await ledger.http().get('/v1/me').set(bearer('not-a-token')).expect(401);
    expect(unknown.body).toMatchObject({ statusCode: 401, message: 'the bearer token is not valid' });
    expect(unknown.headers['www-authenticate']).toContain('error="invalid_token"');
  });

  it('is declared in the OpenAPI document with the answers it can give: 200, 400, 401, 408 and 431', async () => {
    const document = (await ledger.http().get('/docs-json').expect(200)).body as {
      paths: Record<string, { get?: { responses: Record<string, unknown>; security?: unknown[] } }>;
    };
    const route = document.paths['/v1/me']?.get;
    expect(Object.keys(route?.responses ?? {}).sort()).toEqual(['200', '400', '401', '408', '431']);
    expect(route?.security).toEqual([{ bearer: [] }]);
  });
});
