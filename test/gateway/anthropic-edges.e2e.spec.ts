/**
 * The gateway's edges (issue 31): one reading of a request body (finding 3), every malformed or
 * unknown key a 401 and a second Content-Type a 400 on every `/anthropic` route (finding 7), and
 * rejections before admission counted on the key and logged, through the real service. Each refusal
 * is in Anthropic's error shape, nothing is held and nothing goes upstream.
 */
import type { AddressInfo } from 'node:net';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { GatewayRejections } from '../../src/gateway/gateway-rejections';
import { messageReply } from '../support/messages-api-server';
import { rawExchange } from '../http/support/raw-http';
import { bearer, startHttpLedger, TOKENS } from '../http/support/http-ledger';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

interface ErrorBody {
  readonly type?: string;
  readonly error?: { readonly type?: string; readonly message?: string };
  readonly request_id?: string;
}

/** A valid Messages body, as text, with `members` written after `model` (which may name one twice). */
const bodyWith = (members: string): string => `{"model":${JSON.stringify(GATEWAY_MODEL)},${members},"messages":[{"role":"user","content":"Hi"}]}`;

describe('the gateway’s edges (issue 31): one reading of a body, a 401 for every key that is not one, one Content-Type', () => {
  let service: GatewayService;
  let port: number;

  beforeAll(async () => {
    service = await startGatewayService();
    port = (service.ledger.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(() => service.close());

  /** One request over a raw socket, so headers go as written (twice, in any case). */
  const send = async (method: string, path: string, headers: readonly (readonly [string, string])[], body = ''): Promise<{ status: number; body: ErrorBody; text: string; headers: Record<string, string> }> => {
    const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...headers.map(([name, value]) => `${name}: ${value}`)];
    if (body !== '' || method === 'POST') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
    const answer = await rawExchange(port, `${lines.join('\r\n')}\r\n\r\n${body}`);
    let parsed: ErrorBody = {};
    try {
      parsed = JSON.parse(answer.body) as ErrorBody;
    } catch {
      // The assertion on the shape below says what was wrong.
    }
    return { status: answer.status, body: parsed, text: answer.body, headers: answer.headers };
  };
  const nothingHeldOrSent = async (upstreamBefore: number): Promise<void> => {
    expect(service.upstream.requests).toHaveLength(upstreamBefore);
    const balance = await service.ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200);
    expect(balance.body).toMatchObject({ held: 0, running: 0 });
  };
  const anthropicError = (answer: { status: number; body: ErrorBody }, status: number, type: string, message: RegExp): void => {
    expect({ status: answer.status, shape: answer.body.type, type: answer.body.error?.type }).toEqual({ status, shape: 'error', type });
    expect(answer.body.error?.message).toMatch(message);
    expect(answer.body.request_id).toEqual(expect.any(String));
  };
  const json = (key: string): [string, string][] => [
    ['Content-Type', 'application/json'],
    ['x-api-key', key],
    ['anthropic-version', '2023-06-01'],
  ];

  describe('finding 3: a body that names a member twice is refused 400 naming it, before anything is held', () => {
    it.each<[string, string, RegExp]>([
      ['finding 3: a duplicate max_tokens is refused 400 before anything is held', bodyWith('"max_tokens":64000,"max_tokens":1'), /^max_tokens: /],
      ['finding 3: a duplicate max_tokens spelt with an escape is refused 400 before anything is held', bodyWith('"max_tokens":64000,"max_tok\\u0065ns":1'), /^max_tokens: /],
      ['finding 3: a second model is refused 400 before anything is held', `{"model":"claude-opus-dear","max_tokens":16,"model":${JSON.stringify(GATEWAY_MODEL)},"messages":[]}`, /^model: /],
      [
        'finding 3: a member named twice deep in a message is refused 400 naming its path',
        `{"model":${JSON.stringify(GATEWAY_MODEL)},"max_tokens":16,"messages":[{"role":"user","content":[{"type":"text","text":"a","type":"image"}]}]}`,
        /^messages\.0\.content\.0\.type: /,
      ],
      ['finding 3: a duplicate stream is refused 400 before anything is held', bodyWith('"max_tokens":16,"stream":false,"stream":true'), /^stream: /],
    ])('%s', async (_name, body, message) => {
      const before = service.upstream.requests.length;
      const answer = await send('POST', '/anthropic/v1/messages', json(service.key), body);
      anthropicError(answer, 400, 'invalid_request_error', message);
      await nothingHeldOrSent(before);
    });

    it('finding 3: a body that names no member twice is held and forwarded byte for byte', async () => {
      service.upstream.reply(messageReply({}));
      // The same name in two different objects, and an escaped name, are no duplicate.
      const body = bodyWith('"max_tokens":16,"metadata":{"user_id":"u"},"m\u0065tadata_note":{"user_id":"v"}');
      const answer = await send('POST', '/anthropic/v1/messages', json(service.key), body);
      expect(answer.status).toBe(200);
      expect(service.upstream.requests.at(-1)!.rawBody).toBe(body);
      // Settled before the test ends, so no other test sees its hold.
      await settledView(service.ledger, answer.headers['llm-ledger-invocation-id']!);
    });
  });
  /** The routes a key is checked on, each with what it sends. */
  const ROUTES: readonly [method: string, path: string, body: string][] = [
    ['POST', '/anthropic/v1/messages', bodyWith('"max_tokens":16')],
    ['POST', '/anthropic/v1/messages/count_tokens', bodyWith('"max_tokens":16')],
    ['GET', '/anthropic/v1/models', ''],
    ['GET', `/anthropic/v1/models/${GATEWAY_MODEL}`, ''],
  ];
  const forged = (organization: string, secret = 'A'.repeat(43)): string => `llk_${Buffer.from(organization, 'utf8').toString('base64url')}.${secret}`;
  /** Keys that are not keys of this service: the over-long organization of the finding, and every other shape. */
  const NOT_KEYS: readonly [string, string][] = [
    ['an organization part of 200 × "x" (finding 7)', forged('x'.repeat(200))],
    ['an organization part just past the id bound', forged('o'.repeat(129))],
    ['an organization part of the longest id', forged('o'.repeat(128))],
    ['an organization of control bytes', forged('\u0000\u0001acme')],
    ['an organization of "$all"', forged('$all')],
    ['an organization with a slash', forged('acme/../x')],
    ['an organization of invalid UTF-8', `llk_${Buffer.from([0xff, 0xfe, 0x41]).toString('base64url')}.${'A'.repeat(43)}`],
    ['an organization that does not exist', forged('globex')],
    ['acme with a secret of the right length that is not its key', forged('acme')],
    ['acme with a short secret', forged('acme', 'short')],
    ['no dot', `llk_${'x'.repeat(100)}`],
    ['an empty organization part', `llk_.${'A'.repeat(43)}`],
    ['padding in the organization part', `llk_YWNtZQ==.${'A'.repeat(43)}`],
    ['another prefix', `sk-ant-api03-${'x'.repeat(90)}`],
    ['the longest key form accepted', forged('x'.repeat(300)).slice(0, 512)],
  ];

  describe('finding 7: any malformed or unknown key is 401 authentication_error on every /anthropic route', () => {
    it.each(NOT_KEYS)('finding 7: a key with %s is 401 on messages, count_tokens, models and models/:id', async (_case, key) => {
      const before = service.upstream.requests.length;
      for (const [method, path, body] of ROUTES) {
        for (const header of [['x-api-key', key], ['Authorization', `Bearer ${key}`]] as [string, string][]) {
          const answer = await send(method, path, [['Content-Type', 'application/json'], header], body);
          expect({ route: `${method} ${path}`, header: header[0], status: answer.status, shape: answer.body.type, type: answer.body.error?.type }).toEqual({
            route: `${method} ${path}`,
            header: header[0],
            status: 401,
            shape: 'error',
            type: 'authentication_error',
          });
          expect(answer.text).not.toMatch(/at [\w.<>]+ \(|Error:/);
        }
      }
      await nothingHeldOrSent(before);
    });
  });

  describe('finding 7: a second Content-Type on a gateway call is 400 in Anthropic’s shape, as on the API', () => {
    it.each(ROUTES)('finding 7: two Content-Type headers on %s %s are refused 400 naming the header', async (method, path, body) => {
      const before = service.upstream.requests.length;
      const answer = await send(method, path, [['Content-Type', 'application/json'], ['content-type', 'text/plain'], ['x-api-key', service.key]], body);
      anthropicError(answer, 400, 'invalid_request_error', /^Content-Type: /);
      await nothingHeldOrSent(before);
    });

    it('finding 7: two x-api-key headers are refused 401, never read as one of them', async () => {
      const answer = await send('POST', '/anthropic/v1/messages', [['Content-Type', 'application/json'], ['x-api-key', service.key], ['x-api-key', service.key]], bodyWith('"max_tokens":16'));
      expect(answer.status).toBe(401);
    });
  });
  describe('rejections before admission are visible (issue 31)', () => {
    /** Text in every refused body: no log line may hold it. */
    const PROMPT = 'a prompt no log line may hold 7f3a';
    const call = (key: string, members: string) =>
      send('POST', '/anthropic/v1/messages', json(key), `{${members},"messages":[{"role":"user","content":${JSON.stringify(PROMPT)}}]}`);
    const issue = async (ledger: GatewayService['ledger'], body: Record<string, unknown>) =>
      (await ledger.http().post('/v1/organizations/acme/gateway-keys').set(bearer(TOKENS.system)).send(body).expect(200)).body as { key: string; keyId: string };
    const listed = async (ledger: GatewayService['ledger'], keyId: string) => {
      const { body } = await ledger.http().get('/v1/organizations/acme/gateway-keys').set(bearer(TOKENS.system)).expect(200);
      return (body.keys as { keyId: string; rejections: Record<string, number> }[]).find((key) => key.keyId === keyId)!;
    };
    const model = (name: string) => `"model":${JSON.stringify(name)}`;

    it('rejections before admission: a call refused before its hold by a known key is counted on the key per reason, logged with its key id, reason and model, never its body', async () => {
      const { key, keyId } = await issue(service.ledger, { name: 'rejected-calls' });
      const narrow = await issue(service.ledger, { name: 'narrow', models: ['claude-other'] });
      const before = service.upstream.requests.length;
      for (let index = 0; index < 3; index++) {
        anthropicError(await call(key, `${model('claude-x')},"max_tokens":16`), 404, 'not_found_error', /^model: claude-x is not on this gateway's rate card$/);
      }
      anthropicError(await call(key, `${model(GATEWAY_MODEL)},"max_tokens":100000`), 400, 'invalid_request_error', /^max_tokens: /);
      anthropicError(await call(key, model(GATEWAY_MODEL)), 400, 'invalid_request_error', /^max_tokens: Field required/);
      anthropicError(await call(key, `${model(GATEWAY_MODEL)},"max_tokens":16,"max_tokens":1`), 400, 'invalid_request_error', /^max_tokens: /);
      anthropicError(await call(narrow.key, `${model(GATEWAY_MODEL)},"max_tokens":16`), 403, 'permission_error', /may not call/);
      await nothingHeldOrSent(before);

      await service.ledger.app.get(GatewayRejections).flush();
      expect((await listed(service.ledger, keyId)).rejections).toEqual({ model_not_on_rate_card: 3, max_tokens_over_cap: 1, invalid_body: 2 });
      expect((await listed(service.ledger, narrow.keyId)).rejections).toEqual({ model_not_allowed: 1 });
      const lines = service.ledger.logs.filter((line) => line.includes('refused before its hold'));
      expect(lines.filter((line) => line.includes(keyId))).toHaveLength(6);
      expect(lines.some((line) => line.includes(keyId) && line.includes('"reason":"model_not_on_rate_card"') && line.includes('"model":"claude-x"'))).toBe(true);
      expect(lines.some((line) => line.includes(narrow.keyId) && line.includes('"reason":"model_not_allowed"'))).toBe(true);
      expect(service.ledger.logs.filter((line) => line.includes(PROMPT) || line.includes(key))).toEqual([]);
    });

    it('rejections before admission: the counts survive a restart, and a flood of refused calls grows the log by one event per key per flush', async () => {
      const own = await startGatewayService({ keepDirectory: true });
      const { key, keyId } = await issue(own.ledger, { name: 'flooded' });
      const ownPort = (own.ledger.app.getHttpServer().address() as AddressInfo).port;
      const flood = 60;
      for (let index = 0; index < flood; index++) {
        const body = `{${model('claude-x')},"max_tokens":16,"messages":[]}`;
        const answer = await rawExchange(ownPort, `POST /anthropic/v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nx-api-key: ${key}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        expect(answer.status).toBe(404);
      }
      // Closing flushes what was counted; the next process reads it from the log.
      await own.close();
      const restarted = await startHttpLedger({ directory: own.ledger.directory });
      try {
        expect((await listed(restarted as GatewayService['ledger'], keyId)).rejections).toEqual({ model_not_on_rate_card: flood });
        const events = await restarted.app.get<EventStore>(EVENT_STORE).readStream('account-acme');
        expect(events.filter((event) => event.type === 'GatewayCallsRejected')).toHaveLength(1);
      } finally {
        await restarted.close();
      }
    });
  });
});
