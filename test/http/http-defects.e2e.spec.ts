import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import { MAX_LEDGER_ENTRY_CREDITS } from '../../src/accounts/account.bounds';
import { accountStreamName } from '../../src/accounts/account.events';
import { snapshotStreamName } from '../../src/aggregates/aggregate-snapshots';
import { operationStreamName } from '../../src/catalog/operation.events';
import { MAX_ID_CHARS } from '../../src/domain/field-checks';
import { MAX_STREAM_NAME_LENGTH } from '../../src/event-store/event-store-input.validation';
import { invocationStreamName } from '../../src/invocations/invocation.events';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const grant = { credits: 500, reason: 'plan', idempotencyKey: 'grant-1' };

/** A raw request to the listening server, for what supertest cannot send (huge headers, raw bytes). */
function raw(port: number, options: { method: string; path: string; headers?: Record<string, string>; body?: Buffer | string }): Promise<{ status: number; body: string; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: options.method, path: options.path, headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), type: res.headers['content-type'] }));
    });
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

describe('docs/http.md every stream name made from an id fits the store (MAX_ID_CHARS, MAX_STREAM_NAME_LENGTH)', () => {
  it('fits the longest id in each stream it names, snapshots included', () => {
    const id = 'x'.repeat(MAX_ID_CHARS);
    for (const name of [accountStreamName(id), operationStreamName(id), invocationStreamName(id)]) {
      expect(snapshotStreamName(name).length).toBeLessThanOrEqual(MAX_STREAM_NAME_LENGTH);
    }
  });
});

describe('HTTP defects found by fuzzing (docs/http.md): each a 4xx in the one error shape, nothing written', () => {
  let ledger: HttpLedger;
  let port: number;

  beforeAll(async () => {
    ledger = await startHttpLedger();
    await ledger.app.listen(0, '127.0.0.1');
    port = (ledger.app.getHttpServer().address() as AddressInfo).port;
    await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(bearer(TOKENS.system)).send(publicationBody()).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ ...grant, idempotencyKey: 'seed' }).expect(200);
  });

  afterAll(() => ledger.close());

  const expectErrorShape = (body: Record<string, unknown>, status: number): void => {
    expect(body).toMatchObject({ statusCode: status, error: expect.any(String), code: expect.any(String), message: expect.any(String), requestId: expect.any(String) });
  };

  it.each([
    ['a NUL', '%00'],
    ['a reserved system stream name', '$all'],
    ['a path traversal', '..%2F..%2Fetc%2Fpasswd'],
    ['129 characters', 'a'.repeat(129)],
    ['184 characters, whose stream name would pass the store’s limit', 'a'.repeat(184)],
  ])('refuses an organizationId in the path with %s, naming it, on grants, adjustments, settings and balance', async (_case, id) => {
    for (const [method, suffix, body] of [
      ['post', 'grants', grant],
      ['post', 'adjustments', grant],
      ['put', 'settings', { maxRunning: 2 }],
      ['get', 'balance', undefined],
    ] as const) {
      const response = await ledger.http()[method](`/v1/organizations/${id}/${suffix}`).set(bearer(TOKENS.system)).send(body as object);
      expect({ suffix, status: response.status }).toEqual({ suffix, status: 400 });
      expect(Object.keys(response.body.fields)).toEqual(['organizationId']);
    }
  });

  it('refuses an operationId of 191 characters in the path, rather than failing on its stream name', async () => {
    for (const method of ['put', 'get'] as const) {
      const response = await ledger.http()[method](`/v1/operations/${'o'.repeat(191)}/publications`).set(bearer(TOKENS.system)).send(publicationBody());
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.fields)).toEqual(['operationId']);
    }
  });

  it('refuses an invocation id that no id could be, naming it', async () => {
    for (const suffix of ['', '/attempts', '/explanation']) {
      const response = await ledger.http().get(`/v1/invocations/${'%24all'}${suffix}`).set(bearer(TOKENS.system));
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.fields)).toEqual(['invocationId']);
    }
  });

  it('refuses JSON nested past MAX_JSON_DEPTH with a 400 naming the body, never a 500', async () => {
    const deep = `{"credits":5,"reason":"r","idempotencyKey":"k","x":${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
    const response = await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).set('Content-Type', 'application/json').send(deep);
    expect(response.status).toBe(400);
    expectErrorShape(response.body, 400);
    expect(response.body.fields).toEqual({ body: [expect.stringMatching(/nested/)] });
  });

  it.each([
    ['a corrupt gzip body', 'gzip', Buffer.concat([gzipSync(JSON.stringify(grant)).subarray(0, 12), Buffer.from('garbage')])],
    ['a plain body declared as br', 'br', Buffer.from(JSON.stringify(grant))],
    ['a plain body declared as deflate', 'deflate', Buffer.from(JSON.stringify(grant))],
  ])('refuses %s with a 400 naming the body, never a 500', async (_case, encoding, body) => {
    const response = await raw(port, {
      method: 'POST',
      path: '/v1/organizations/acme/grants',
      headers: { ...bearer(TOKENS.system), 'Content-Type': 'application/json', 'Content-Encoding': encoding },
      body,
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body).fields).toEqual({ body: [`could not be decompressed as ${encoding}`] });
  });

  it('refuses an unsupported Content-Encoding with 415', async () => {
    for (const encoding of ['compress', 'x-unknown']) {
      const unsupported = await raw(port, {
        method: 'POST',
        path: '/v1/organizations/acme/grants',
        headers: { ...bearer(TOKENS.system), 'Content-Type': 'application/json', 'Content-Encoding': encoding },
        body: JSON.stringify(grant),
      });
      expect({ encoding, status: unsupported.status }).toEqual({ encoding, status: 415 });
      expectErrorShape(JSON.parse(unsupported.body), 415);
    }
  });

  it('still reads a well-formed gzip body', async () => {
    const response = await raw(port, {
      method: 'POST',
      path: '/v1/organizations/acme/grants',
      headers: { ...bearer(TOKENS.system), 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ ...grant, idempotencyKey: 'gzipped' })),
    });
    expect(response.status).toBe(200);
  });

  it.each(['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf'])('refuses a key named %s as an unknown field instead of dropping it', async (key) => {
    const body = `{"credits":5,"reason":"r","idempotencyKey":"proto-${key}","${key}":{"polluted":true}}`;
    const response = await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).set('Content-Type', 'application/json').send(body);
    expect(response.status).toBe(400);
    expect(response.body.fields).toEqual({ [key]: ['is not a known field'] });
  });

  it('refuses a prototype-named key nested in a body, naming its path', async () => {
    const body = `{"operationId":"demo.arithmetic","organizationId":"acme","input":{"question":"6*7","constructor":{"prototype":1}}}`;
    const response = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).set('Content-Type', 'application/json').send(body);
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields)).toEqual(['input.constructor']);
  });

  it('answers malformed percent-encoding in a path id with a 400 naming the field', async () => {
    const response = await ledger.http().get('/v1/organizations/%E0%A4%A/balance').set(bearer(TOKENS.system));
    expect(response.status).toBe(400);
    expectErrorShape(response.body, 400);
    expect(Object.keys(response.body.fields)).toEqual(['organizationId']);
  });

  it('answers a request whose headers are too large with 431 in the one error shape', async () => {
    const response = await raw(port, { method: 'GET', path: `/v1/organizations/acme/balance?x=${'a'.repeat(20_000)}`, headers: bearer(TOKENS.system) });
    expect(response.status).toBe(431);
    expect(response.type).toMatch(/application\/json/);
    expectErrorShape(JSON.parse(response.body), 431);
  });

  it('says the real bound for credits of 1e30, not "a whole number"', async () => {
    const response = await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).set('Content-Type', 'application/json').send('{"credits":1e30,"reason":"r","idempotencyKey":"big"}');
    expect(response.status).toBe(400);
    expect(response.body.fields).toEqual({ credits: ['must be at most 1000000000000 credits'] });
  });

  it('refuses the adjustment that took available past Number.MAX_SAFE_INTEGER after 9,007 maximal grants, naming credits', async () => {
    // The 9,007 accepted grants stand as one recorded event of their total (same fold, same decision).
    const store = ledger.app.get<EventStore>(EVENT_STORE);
    const total = 9_007 * MAX_LEDGER_ENTRY_CREDITS;
    await store.append(
      'account-bigorg',
      [{ id: randomUUID(), type: 'CreditsGranted', data: { credits: total, reason: 'r', idempotencyKey: 'all', grantedAt: new Date(0).toISOString() }, metadata: { schemaVersion: 1 } }],
      { expectedRevision: 'no_stream' },
    );
    for (const path of ['grants', 'adjustments']) {
      const response = await ledger.http().post(`/v1/organizations/bigorg/${path}`).set(bearer(TOKENS.system)).send({ credits: MAX_LEDGER_ENTRY_CREDITS, reason: 'one more', idempotencyKey: `more-${path}` });
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.fields)).toEqual(['credits']);
    }
    const balance = await ledger.http().get('/v1/organizations/bigorg/balance').set(bearer(TOKENS.system)).expect(200);
    expect(balance.body).toMatchObject({ granted: total, adjustments: 0, available: total });
  });

  it('wrote nothing for any of them: the account holds the seed grant and the gzip one, no stream was made for a bad id', async () => {
    const account = await ledger.http().get('/v1/streams/account-acme').set(bearer(TOKENS.auditor)).expect(200);
    expect(account.body.events.map((e: { data: { idempotencyKey?: string } }) => e.data.idempotencyKey)).toEqual(['seed', 'gzipped']);
    const all = await ledger.http().get('/v1/streams/account-a').set(bearer(TOKENS.auditor));
    expect(all.status).toBe(404);
  });
});
