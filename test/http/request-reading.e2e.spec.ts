import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { MAX_ID_CHARS } from '../../src/domain/field-checks';
import { MAX_REQUEST_BODY_BYTES } from '../../src/http-kit/http.bounds';
import { bearer, HttpLedger, startHttpLedger, TOKENS } from './support/http-ledger';

const GRANTS = '/v1/organizations/acme/grants';
const grant = (idempotencyKey: string, reason = 'plan'): string => JSON.stringify({ credits: 500, reason, idempotencyKey });

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * A request sent by hand: a body in chunks with no Content-Length (chunked), or compressed bytes,
 * as supertest does not send them. Several requests on one kept-alive connection share `agent`.
 */
function send(port: number, options: { method?: string; path: string; headers?: Record<string, string>; body?: Buffer | Buffer[] }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunked = Array.isArray(options.body);
    const req = httpRequest({ host: '127.0.0.1', port, method: options.method ?? 'POST', path: options.path, headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown> }));
    });
    req.on('error', reject);
    if (chunked) Readable.from(options.body as Buffer[]).pipe(req);
    else req.end(options.body);
  });
}

/**
 * How the standalone service reads a request (Fastify, with the API's own body reader): the bounds
 * hold whatever way the body arrives, a body's problem is raised only after authentication, and
 * paths match as they always have (trailing slash and letter case ignored, any id length validated).
 */
describe('docs/http.md reading requests: bounded bodies, problems after authentication, routing', () => {
  let ledger: HttpLedger;
  let port: number;
  const json = { 'Content-Type': 'application/json', ...bearer(TOKENS.system) };

  beforeAll(async () => {
    ledger = await startHttpLedger();
    await ledger.app.listen(0, '127.0.0.1');
    port = (ledger.app.getHttpServer().address() as AddressInfo).port;
  });

  afterAll(() => ledger.close());

  it('refuses a chunked body that grows past MAX_REQUEST_BODY_BYTES with 413, with no Content-Length to go by', async () => {
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const chunks = [Buffer.from('{"credits":500,"reason":"'), ...Array.from({ length: MAX_REQUEST_BODY_BYTES / chunk.length + 1 }, () => chunk), Buffer.from('"}')];
    const answer = await send(port, { path: GRANTS, headers: json, body: chunks });
    expect(answer).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
  });

  it('refuses a gzip body that inflates past MAX_REQUEST_BODY_BYTES with 413, however small it arrives', async () => {
    const bomb = gzipSync(grant('bomb', 'x'.repeat(MAX_REQUEST_BODY_BYTES * 4)));
    expect(bomb.length).toBeLessThan(MAX_REQUEST_BODY_BYTES / 16);
    const answer = await send(port, { path: GRANTS, headers: { ...json, 'Content-Encoding': 'gzip' }, body: bomb });
    expect(answer).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
  });

  it('reads a chunked body within the bound', async () => {
    const body = Buffer.from(grant('chunked'));
    const answer = await send(port, { path: GRANTS, headers: json, body: [body.subarray(0, 10), body.subarray(10)] });
    expect(answer.status).toBe(200);
  });

  it.each([
    ['a charset other than UTF-8', { 'Content-Type': 'application/json; charset=latin1' }, grant('latin'), 415],
    ['a body that is not JSON', { 'Content-Type': 'text/plain' }, 'credits=500', 415],
    ['a body with no Content-Type', {}, grant('untyped'), 415],
    ['a bare JSON number', { 'Content-Type': 'application/json' }, '500', 400],
    ['a JSON array', { 'Content-Type': 'application/json' }, '[]', 400],
    ['a body cut short', { 'Content-Type': 'application/json' }, '{"credits":', 400],
  ])('refuses %s (%p) with its status, naming the body', async (_case, headers, body, status) => {
    const answer = await send(port, { path: GRANTS, headers: { ...bearer(TOKENS.system), ...headers }, body: Buffer.from(body) });
    expect(answer).toMatchObject({ status, body: { statusCode: status, requestId: expect.any(String) } });
    if (status === 400) expect(answer.body.fields).toHaveProperty('body');
  });

  it.each([
    ['twice', '{"credits":1,"credits":1000000,"reason":"plan","idempotencyKey":"dup-1"}', 'credits'],
    ['twice, once with an escape', '{"credits":1,"cr\\u0065dits":1000000,"reason":"plan","idempotencyKey":"dup-2"}', 'credits'],
    ['twice in a nested object', '{"credits":1,"reason":"plan","idempotencyKey":"dup-3","x":{"y":[{"z":1,"z":2}]}}', 'x.y.0.z'],
  ])('finding 3: the API refuses a body that names a member %s with 400 naming it, and grants nothing', async (_case, body, field) => {
    const balance = async () => (await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system))).body as unknown;
    const before = await balance();
    const answer = await send(port, { path: GRANTS, headers: json, body: Buffer.from(body) });
    expect(answer).toMatchObject({ status: 400, body: { code: 'invalid_request', fields: { [field]: ['is named more than once in its object'] } } });
    expect(await balance()).toEqual(before);
  });

  it('reads a Content-Type with an empty body as no body, as any request without one', async () => {
    const cancel = '/v1/invocations/00000000-0000-4000-8000-000000000000/cancel';
    for (const type of ['application/json', 'text/plain']) {
      const answer = await send(port, { path: cancel, headers: { ...bearer(TOKENS.system), 'Content-Type': type, 'Content-Length': '0' } });
      // Past the body: the unknown invocation is what is wrong.
      expect({ type, status: answer.status, code: answer.body.code }).toEqual({ type, status: 404, code: 'not_found' });
    }
  });

  it('tells a caller without a valid token only that it is not authenticated, whatever its body', async () => {
    const tooLarge = await send(port, { path: GRANTS, headers: { 'Content-Type': 'application/json', 'Content-Length': String(MAX_REQUEST_BODY_BYTES + 1) }, body: Buffer.alloc(MAX_REQUEST_BODY_BYTES + 1, 0x20) });
    const notJson = await send(port, { path: GRANTS, headers: { 'Content-Type': 'text/plain', ...bearer('not-a-token') }, body: Buffer.from('hello') });
    expect([tooLarge.status, notJson.status]).toEqual([401, 401]);
  });

  it('matches a path with a trailing slash or in other letter case as the route itself', async () => {
    for (const path of ['/v1/organizations/initech/balance/', '/V1/Organizations/initech/Balance']) {
      const answer = await send(port, { method: 'GET', path, headers: bearer(TOKENS.system) });
      // Routed (an organization with no account reads as unknown, in the API's shape), not an unknown route.
      expect({ path, status: answer.status, message: answer.body.message }).toEqual({ path, status: 404, message: expect.stringContaining('initech') });
    }
  });

  it('validates a path id of any length rather than matching no route (400 naming the field, not 404)', async () => {
    const answer = await send(port, { method: 'GET', path: `/v1/organizations/${'a'.repeat(MAX_ID_CHARS + 1)}/balance`, headers: bearer(TOKENS.system) });
    expect(answer.status).toBe(400);
    expect(answer.body.fields).toHaveProperty('organizationId');
  });
});
