import { statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { idempotencySecretPathFor } from '../../src/composition/idempotency-secret.provider';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const run = (question: string, extra: Record<string, unknown> = {}) => ({
  operationId: 'demo.arithmetic',
  organizationId: 'acme',
  input: { question },
  ...extra,
});

async function fund(ledger: HttpLedger): Promise<void> {
  await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 2_000 })).expect(200);
  await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 100_000, reason: 'plan', idempotencyKey: 'order#123' }).expect(200);
}

describe('docs/http.md idempotency keys: printable ASCII, body or header, recognised by a keyed fingerprint, never by the input', () => {
  let ledger: HttpLedger;
  const post = (body: unknown, key?: string) => {
    const request = ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember));
    return (key === undefined ? request : request.set('Idempotency-Key', key)).send(body as object);
  };
  const estimatedEvents = async (invocationId: string) => {
    const stream = await ledger.http().get(`/v1/streams/invocation-${invocationId}`).set(bearer(TOKENS.auditor)).expect(200);
    return stream.body.events as Array<{ type: string; data: Record<string, unknown> }>;
  };

  beforeAll(async () => {
    ledger = await startHttpLedger({ keepDirectory: true });
    await fund(ledger);
  });

  afterAll(() => ledger.close());

  it.each(['order#123', 'user@example.com/req 1', '~!"$%&\'()*+,;<=>?[\\]^`{|}', 'k'.repeat(255)])('accepts the key %j', async (key) => {
    const response = await post(run('What is 6*7?', { idempotencyKey: key }));
    expect(response.status).toBe(200);
    expect(response.body.state).toBe('settled');
  });

  it.each([
    ['256 characters', 'k'.repeat(256)],
    ['a character outside ASCII', 'clé-1'],
    ['a control character', 'a\tb'],
    ['only spaces', '   '],
  ])('refuses a key of %s with a 400 naming idempotencyKey', async (_case, key) => {
    const response = await post(run('What is 6*7?', { idempotencyKey: key }));
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields)).toEqual(['idempotencyKey']);
  });

  it('takes the key from the Idempotency-Key header, plain or as a quoted string, and the body’s when both agree', async () => {
    const first = await post(run('What is 2+3?'), 'header key 1').expect(200);
    const quoted = await post(run('What is 2+3?'), '"header key 1"').expect(200);
    const both = await post(run('What is 2+3?', { idempotencyKey: 'header key 1' }), 'header key 1').expect(200);
    expect(quoted.body).toEqual(first.body);
    expect(both.body).toEqual(first.body);
    const differing = await post(run('What is 2+3?', { idempotencyKey: 'another' }), 'header key 1');
    expect(differing.status).toBe(400);
    expect(Object.keys(differing.body.fields)).toEqual(['idempotencyKey']);
    const bad = await post(run('What is 2+3?'), 'k'.repeat(256));
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.fields)).toEqual(['Idempotency-Key']);
  });

  it('refuses the same key with another input with 422 idempotency_key_reused, and appends nothing', async () => {
    const first = await post(run('What is 7*6?', { idempotencyKey: 'req/7' })).expect(200);
    const before = await estimatedEvents(first.body.invocationId);
    const reused = await post(run('What is 7*7?', { idempotencyKey: 'req/7' }));
    expect(reused.status).toBe(422);
    expect(reused.body).toMatchObject({ statusCode: 422, code: 'idempotency_key_reused', fields: { idempotencyKey: [expect.any(String)] } });
    expect(await estimatedEvents(first.body.invocationId)).toEqual(before);
  });

  it('reads an input with its keys in another order as the same input', async () => {
    const first = await post({ ...run('What is 1+2?', { idempotencyKey: 'order-a' }) }).expect(200);
    const reordered = await post({ idempotencyKey: 'order-a', input: { question: 'What is 1+2?' }, organizationId: 'acme', operationId: 'demo.arithmetic' }).expect(200);
    expect(reordered.body).toEqual(first.body);
  });

  it('records a keyed fingerprint of operation and input in the first event, never the input', async () => {
    const first = await post(run('What is 9*9? (a private question)', { idempotencyKey: 'private-1' })).expect(200);
    const [estimated] = await estimatedEvents(first.body.invocationId);
    expect(estimated!.type).toBe('InvocationEstimated');
    expect(estimated!.data.requestFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(estimated)).not.toContain('private question');
    expect(JSON.stringify(estimated)).not.toContain('9*9');
  });

  it('lets a concurrent repeat wait for the first and answer with its result: one invocation, run once', async () => {
    const [a, b, c] = await Promise.all([0, 1, 2].map(() => post(run('What is 3*3?', { idempotencyKey: 'together' }))));
    expect(a!.status).toBe(200);
    expect(b!.body).toEqual(a!.body);
    expect(c!.body).toEqual(a!.body);
    const events = await estimatedEvents(a!.body.invocationId);
    expect(events.filter((event) => event.type === 'InvocationEstimated')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'InvocationSettled')).toHaveLength(1);
  });

  it('keeps its generated secret beside the embedded store, readable by its owner only, so a restart recognises the same requests', async () => {
    const secretPath = idempotencySecretPathFor(join(ledger.directory, 'ledger.sqlite'));
    expect(existsSync(secretPath)).toBe(true);
    expect(statSync(secretPath).mode & 0o777).toBe(0o600);
    const first = await post(run('What is 5*5?', { idempotencyKey: 'across-restart' })).expect(200);
    const directory = ledger.directory;
    await ledger.close();
    ledger = await startHttpLedger({ directory, keepDirectory: false });
    const again = await post(run('What is 5*5?', { idempotencyKey: 'across-restart' })).expect(200);
    expect(again.body).toEqual(first.body);
    expect((await post(run('What is 5*6?', { idempotencyKey: 'across-restart' }))).status).toBe(422);
  });
});

describe('docs/http.md the fingerprint secret a deployment configures (LEDGER_IDEMPOTENCY_SECRET)', () => {
  it('uses LEDGER_IDEMPOTENCY_SECRET and keeps no file; another secret reads the same request as another one', async () => {
    const secret = 's'.repeat(32);
    const ledger = await startHttpLedger({ env: { LEDGER_IDEMPOTENCY_SECRET: secret }, keepDirectory: true });
    const directory = ledger.directory;
    try {
      await fund(ledger);
      expect(existsSync(idempotencySecretPathFor(join(directory, 'ledger.sqlite')))).toBe(false);
      const body = run('What is 4*4?', { idempotencyKey: 'configured' });
      const first = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send(body).expect(200);
      await ledger.close();
      const same = await startHttpLedger({ directory, env: { LEDGER_IDEMPOTENCY_SECRET: secret }, keepDirectory: true });
      expect((await same.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send(body).expect(200)).body).toEqual(first.body);
      await same.close();
      const other = await startHttpLedger({ directory, env: { LEDGER_IDEMPOTENCY_SECRET: 't'.repeat(32) } });
      expect((await other.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send(body)).status).toBe(422);
      await other.close();
    } catch (error) {
      await ledger.close().catch(() => undefined);
      throw error;
    }
  });
});
