import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const UNKNOWN_INVOCATION = '00000000-0000-4000-8000-000000000000';

describe('HTTP organization scoping (docs/http.md): another organization’s resources read as not found, never as forbidden', () => {
  let ledger: HttpLedger;
  let acmeInvocation: string;

  beforeAll(async () => {
    ledger = await startHttpLedger();
    const system = bearer(TOKENS.system);
    await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(system).send(publicationBody()).expect(200);
    for (const organization of ['acme', 'globex']) {
      await ledger
        .http()
        .post(`/v1/organizations/${organization}/grants`)
        .set(system)
        .send({ credits: 100_000, reason: 'plan', idempotencyKey: `seed-${organization}` })
        .expect(200);
    }
    const run = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 6*7?' } })
      .expect(200);
    acmeInvocation = run.body.invocationId;
  });

  afterAll(() => ledger.close());

  /** The parts of a 404 a caller could compare: everything but the request id. */
  const comparable = (body: Record<string, unknown>, id: string, unknownId: string) => ({
    ...body,
    message: String(body.message).replace(id, unknownId),
    requestId: undefined,
  });

  const invocationReads = [
    ['its state', ''],
    ['its attempts', '/attempts'],
    ['its explanation', '/explanation'],
  ] as const;

  describe.each([
    ['globex’s administrator', TOKENS.globexAdmin],
    ['globex’s member', TOKENS.globexMember],
  ])('%s reading acme’s invocation', (_who, token) => {
    it.each(invocationReads)('gets 404 for %s, exactly as for an invocation that does not exist', async (_what, suffix) => {
      const foreign = await ledger.http().get(`/v1/invocations/${acmeInvocation}${suffix}`).set(bearer(token));
      const missing = await ledger.http().get(`/v1/invocations/${UNKNOWN_INVOCATION}${suffix}`).set(bearer(token));
      expect(foreign.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(comparable(foreign.body, acmeInvocation, UNKNOWN_INVOCATION)).toEqual(comparable(missing.body, UNKNOWN_INVOCATION, UNKNOWN_INVOCATION));
    });
  });

  it('gets globex’s administrator a 404 for acme’s balance, exactly as for an organization that does not exist', async () => {
    const foreign = await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.globexAdmin));
    const missing = await ledger.http().get('/v1/organizations/initech/balance').set(bearer(TOKENS.globexAdmin));
    expect(foreign.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(comparable(foreign.body, 'acme', 'initech')).toEqual(comparable(missing.body, 'initech', 'initech'));
  });

  it('refuses globex’s member a run paid by acme with 404, and writes nothing', async () => {
    const before = await ledger.http().get('/v1/streams/account-acme').set(bearer(TOKENS.auditor)).expect(200);
    const response = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.globexMember))
      .send({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 1+1?' } });
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('not_found');
    const after = await ledger.http().get('/v1/streams/account-acme').set(bearer(TOKENS.auditor)).expect(200);
    expect(after.body.events).toHaveLength(before.body.events.length);
  });

  it('answers a run for an organization that has no account with the same 404', async () => {
    const response = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.system))
      .send({ operationId: 'demo.arithmetic', organizationId: 'initech', input: { question: 'What is 1+1?' } });
    expect(response.status).toBe(404);
    expect(response.body.message).toBe('organization "initech" was not found');
  });

  it('lets acme’s own tokens, the auditor and the operator read acme’s invocation', async () => {
    for (const token of [TOKENS.acmeMember, TOKENS.acmeAdmin, TOKENS.auditor, TOKENS.system]) {
      for (const [, suffix] of invocationReads) {
        const response = await ledger.http().get(`/v1/invocations/${acmeInvocation}${suffix}`).set(bearer(token));
        expect(response.status).toBe(200);
        expect(response.body.organizationId).toBe('acme');
      }
    }
    expect((await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.acmeAdmin))).status).toBe(200);
    expect((await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.auditor))).status).toBe(200);
  });
});
