/**
 * Issue 24, finding 5: the HTTP edges an outside attack found answered outside what the OpenAPI
 * document declares, or not as HTTP says. Each is sent here over a raw socket (net.connect), as the
 * attack sent it, so nothing a client library tidies up hides it.
 */
import type { AddressInfo } from 'node:net';
import { ObservabilityModule } from '../../src/observability/observability.module';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from './support/http-ledger';
import { rawExchange } from './support/raw-http';

const request = (method: string, path: string, headers: readonly string[] = [], body = ''): string =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((header) => `${header}\r\n`).join('')}${body === '' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`}Connection: close\r\n\r\n${body}`;
const systemToken = `Authorization: Bearer ${TOKENS.system}`;


describe('issue 24, finding 5: the HTTP edges, over a raw socket', () => {
  let ledger: HttpLedger;
  let port: number;
  let invocationId: string;

  beforeAll(async () => {
    ledger = await startHttpLedger();
    await ledger.app.listen(0, '127.0.0.1');
    port = (ledger.app.getHttpServer().address() as AddressInfo).port;
    await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(bearer(TOKENS.system)).send(publicationBody()).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 5_000, reason: 'plan', idempotencyKey: 'seed' }).expect(200);
    const invocation = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 6*7?' } }).expect(200);
    invocationId = invocation.body.invocationId as string;
  }, 60_000);

  afterAll(() => ledger.close());

  describe('the event stream honours `Connection: close` (docs/http.md "Following an invocation")', () => {
    it('sends what the stream holds, ends after the settlement and closes the socket, answering `Connection: close`', async () => {
      const answer = await rawExchange(port, request('GET', `/v1/invocations/${invocationId}/events`, [systemToken]));
      expect(answer.status).toBe(200);
      expect(answer.headers['connection']).toBe('close');
      const events = [...answer.body.matchAll(/^event: (\w+)$/gm)].map((match) => match[1]);
      expect(events[0]).toBe('InvocationEstimated');
      expect(events.at(-1)).toBe('InvocationSettled');
      expect(answer.closedByServer).toBe(true);
    }, 10_000);

    it('keeps a connection that did not ask to close open for the next request, as HTTP/1.1 does', async () => {
      const events = `GET /v1/invocations/${invocationId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n${systemToken}\r\n\r\n`;
      const answer = await rawExchange(port, events + request('GET', '/v1/me', [systemToken]));
      // Both answers came on the one socket, the second after the stream ended; then it was closed as asked.
      expect(answer.body).toContain('event: InvocationSettled');
      expect(answer.raw.indexOf('"role":"system"')).toBeGreaterThan(answer.raw.indexOf('event: InvocationSettled'));
    }, 10_000);
  });
  describe('a single-valued header sent twice is refused with 400 naming it (docs/http.md "Requests")', () => {
    const run = JSON.stringify({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 6*7?' } });
    it.each([
      ['two Idempotency-Key headers, never joined into one key "a, b"', 'POST', '/v1/invocations', ['Idempotency-Key: a', 'Idempotency-Key: b', 'Content-Type: application/json'], run, 'Idempotency-Key'],
      ['two Authorization headers, the first one valid', 'GET', '/v1/me', [`Authorization: Bearer ${TOKENS.system}`, `Authorization: Bearer ${TOKENS.acmeMember}`], '', 'Authorization'],
      ['two Last-Event-ID headers', 'GET', '/v1/invocations/{id}/events', ['Last-Event-ID: 1', 'Last-Event-ID: 2'], '', 'Last-Event-ID'],
      ['two Content-Type headers', 'POST', '/v1/invocations', ['Content-Type: application/json', 'Content-Type: text/plain'], run, 'Content-Type'],
    ])('%s', async (_case, method, path, headers, body, field) => {
      const withToken = headers.some((header) => header.startsWith('Authorization')) ? headers : [systemToken, ...headers];
      const before = await ledger.http().get('/v1/organizations/acme/invocations').set(bearer(TOKENS.system));
      const answer = await rawExchange(port, request(method, path.replace('{id}', invocationId), withToken, body));
      expect({ status: answer.status, fields: Object.keys(JSON.parse(answer.body).fields ?? {}) }).toEqual({ status: 400, fields: [field] });
      const after = await ledger.http().get('/v1/organizations/acme/invocations').set(bearer(TOKENS.system));
      expect(after.body.invocations).toHaveLength(before.body.invocations.length);
    });

    it('takes one Idempotency-Key header, and a repeated Prefer (a list by definition) as one', async () => {
      const answer = await rawExchange(port, request('POST', '/v1/invocations', [systemToken, 'Idempotency-Key: once', 'Prefer: wait=5', 'Prefer: respond-async', 'Content-Type: application/json'], run));
      expect(answer.status).toBe(202);
    });
  });

  describe('a DELETE takes no body: one with a body is 400 naming `body`, whatever its length or type (docs/http.md "Requests")', () => {
    it.each([
      ['a small JSON body', ['Content-Type: application/json'], '{}'],
      ['a JSON body past MAX_REQUEST_BODY_BYTES (no longer an undeclared 413)', ['Content-Type: application/json'], `{"x":"${'x'.repeat(70_000)}"}`],
      ['a text body', ['Content-Type: text/plain'], 'hello'],
      ['a body with no Content-Type', [], 'hello'],
    ])('%s', async (_case, headers, body) => {
      const webhook = await ledger.http().post('/v1/organizations/acme/webhooks').set(bearer(TOKENS.system)).send({ url: 'https://example.com/hooks/ledger', events: ['InvocationSettled'] }).expect(200);
      const path = `/v1/organizations/acme/webhooks/${webhook.body.webhookId}`;
      const answer = await rawExchange(port, request('DELETE', path, [systemToken, ...headers], body));
      expect({ status: answer.status, fields: Object.keys(JSON.parse(answer.body).fields ?? {}) }).toEqual({ status: 400, fields: ['body'] });
      // Refused, so not deleted: the same DELETE without a body does it.
      expect((await rawExchange(port, request('DELETE', path, [systemToken]))).status).toBe(204);
    });

    it('answers 401, and nothing about the body, to a DELETE with a body and no token', async () => {
      const answer = await rawExchange(port, request('DELETE', '/v1/organizations/acme/webhooks/w1', ['Content-Type: application/json'], '{}'));
      expect(answer.status).toBe(401);
    });
  });
  describe('an empty path segment is the route’s own 400 naming the path parameter, never an undeclared 404 (docs/http.md "Requests")', () => {
    /** A valid body for each route that takes one, so only the emptied parameter is wrong. */
    const BODIES: Record<string, unknown> = {
      'PUT /v1/operations/{operationId}/publications': publicationBody(),
      'POST /v1/organizations/{organizationId}/grants': { credits: 5, reason: 'r', idempotencyKey: 'k2' },
      'POST /v1/organizations/{organizationId}/adjustments': { credits: 5, reason: 'r', idempotencyKey: 'k3' },
      'PUT /v1/organizations/{organizationId}/settings': { maxRunning: 3 },
      'PUT /v1/organizations/{organizationId}/alerts': { thresholds: [{ kind: 'available_below', credits: 10 }] },
      'POST /v1/organizations/{organizationId}/webhooks': { url: 'https://example.com/hooks/2', events: ['InvocationSettled'] },
    };

    it('answers every route of the document with each path parameter emptied, and the trailing ones too', async () => {
      const document = (await ledger.http().get('/docs-json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
      const ids: Record<string, string> = { organizationId: 'acme', operationId: 'demo.arithmetic', invocationId, webhookId: 'w1', keyId: 'k1', streamName: 'account-acme', batchId: 'msgbatch_01', customId: 'c1' };
      const wrong: string[] = [];
      let sent = 0;
      for (const [path, methods] of Object.entries(document.paths).filter(([path]) => !path.startsWith('/anthropic'))) {
        for (const method of Object.keys(methods).map((name) => name.toUpperCase())) {
          const route = `${method} ${path}`;
          for (const emptied of [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!)) {
            const url = path.replace(/\{(\w+)\}/g, (_all, name: string) => (name === emptied ? '' : encodeURIComponent(ids[name]!)));
            // `GET /v1/gateway/models/` is `GET /v1/gateway/models`, and `GET …/gateway-batches/` is the
            // batches' list: routes of their own (trailing slashes are ignored).
            const trailing = `/{${emptied}}`;
            if (path.endsWith(trailing) && document.paths[path.slice(0, -trailing.length)]?.[method.toLowerCase()] !== undefined) continue;
            const body = BODIES[route] === undefined ? '' : JSON.stringify(BODIES[route]);
            const answer = await rawExchange(port, request(method, url, [systemToken, ...(body === '' ? [] : ['Content-Type: application/json'])], body));
            sent += 1;
            const fields = Object.keys((JSON.parse(answer.body) as { fields?: object }).fields ?? {});
            if (answer.status !== 400 || !fields.includes(emptied)) wrong.push(`${method} ${url}: ${answer.status} ${fields.join(',')}`);
          }
        }
      }
      expect(sent).toBeGreaterThan(20);
      expect(wrong).toEqual([]);
    });

    it.each([
      ['PUT', '/v1/operations//publications', 'operationId'],
      ['GET', '/v1/invocations/', 'invocationId'],
      ['GET', '/v1/invocations//events', 'invocationId'],
      ['GET', '/v1/streams/', 'streamName'],
      ['DELETE', '/v1/organizations/acme/webhooks/', 'webhookId'],
      ['GET', '/V1/Organizations//Balance/', 'organizationId'],
    ])('%s %s is 400 naming %s', async (method, path, field) => {
      const answer = await rawExchange(port, request(method, path, [systemToken]));
      expect({ status: answer.status, fields: Object.keys(JSON.parse(answer.body).fields ?? {}) }).toEqual({ status: 400, fields: [field] });
    });

    it('leaves a path that matches a route with its trailing slash as it is, and an unknown one a 404 in the error shape', async () => {
      expect((await rawExchange(port, request('GET', '/v1/organizations/acme/webhooks/', [systemToken]))).status).toBe(200);
      expect((await rawExchange(port, request('GET', '/v1/me/', [systemToken]))).status).toBe(200);
      const unknown = await rawExchange(port, request('GET', '/v1//nothing/', [systemToken]));
      expect({ status: unknown.status, code: JSON.parse(unknown.body).code }).toEqual({ status: 404, code: 'not_found' });
    });
  });
  describe('a request Node cannot parse is answered in the error shape on every path, naming the part at fault (docs/http.md "Errors")', () => {
    const PATHS = ['/health/live', '/health/ready', '/metrics', '/v1/me', '/v1/invocations', '/anthropic/v1/messages', '/docs-json', '/no/such/route'];
    const BROKEN: ReadonlyArray<readonly [string, (path: string) => string | Buffer, number, string]> = [
      ['a NUL byte in a header value', (path) => Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\n${systemToken}\r\nX-Note: a\u0000b\r\n\r\n`, 'latin1'), 400, 'headers'],
      ['a header name with a space', (path) => `GET ${path} HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n`, 400, 'headers'],
      ['headers past 16 KiB', (path) => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers'],
      ['a URL past 16 KiB', (path) => `GET ${path}?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'headers'],
      ['two different Content-Length headers', (path) => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}`, 400, 'headers'],
      ['a malformed chunk size', (path) => `POST ${path} HTTP/1.1\r\nHost: x\r\n${systemToken}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`, 400, 'body'],
      ['an unknown method', (path) => `BR3W ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, 400, 'method'],
      ['an HTTP version that is not one', (path) => `GET ${path} HTTP/7.3\r\nHost: x\r\n\r\n`, 400, 'version'],
    ];

    it.each(BROKEN)('%s: its status, the error shape, a request id, the field, on every path', async (_case, text, status, field) => {
      for (const path of PATHS) {
        const answer = await rawExchange(port, text(path));
        const body = JSON.parse(answer.body) as Record<string, unknown>;
        expect({ path, status: answer.status, code: typeof body.code, statusCode: body.statusCode, fields: Object.keys((body.fields ?? {}) as object), id: answer.headers['x-request-id'] }).toEqual({
          path,
          status,
          code: 'string',
          statusCode: status,
          fields: [field],
          id: body.requestId,
        });
        expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      }
    });

    it('says the status’s own reason phrase on the status line and in `error` (431 is not “Bad Request”)', async () => {
      const answer = await rawExchange(port, `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`);
      expect(answer.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
      expect(JSON.parse(answer.body).error).toBe('Request Header Fields Too Large');
    });

    it('answers the same on the tokenless METRICS_PORT listener, which is a bare node:http server', async () => {
      const withMetrics = await startHttpLedger({ env: { METRICS_PORT: '0' } });
      try {
        const metricsPort = withMetrics.app.get(ObservabilityModule).metricsPort!;
        // Past its headers, a POST there is answered 404 at once, before a malformed body is read.
        for (const [, text, status, field] of BROKEN.filter(([, , , field]) => field !== 'body')) {
          const answer = await rawExchange(metricsPort, text('/metrics'));
          expect({ status: answer.status, fields: Object.keys(JSON.parse(answer.body).fields ?? {}) }).toEqual({ status, fields: [field] });
        }
        const other = await rawExchange(metricsPort, request('GET', '/v1/me'));
        expect({ status: other.status, code: JSON.parse(other.body).code }).toEqual({ status: 404, code: 'not_found' });
      } finally {
        await withMetrics.close();
      }
    });
  });
});
