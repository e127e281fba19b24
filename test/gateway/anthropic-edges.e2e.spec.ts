/**
 * The gateway's edges (issue 31): one reading of a request body (finding 3), every malformed or
 * unknown key a 401 and a second Content-Type a 400 on every `/anthropic` route (finding 7), through
 * the real service. Each refusal is in Anthropic's error shape, nothing is held and nothing goes
 * upstream.
 */
import type { AddressInfo } from 'node:net';
import { messageReply } from '../support/messages-api-server';
import { rawExchange } from '../http/support/raw-http';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { GATEWAY_MODEL, startGatewayService, type GatewayService } from './support/gateway-service';

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
  const send = async (method: string, path: string, headers: readonly [string, string][], body = ''): Promise<{ status: number; body: ErrorBody; text: string }> => {
    const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...headers.map(([name, value]) => `${name}: ${value}`)];
    if (body !== '' || method === 'POST') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
    const answer = await rawExchange(port, `${lines.join('\r\n')}\r\n\r\n${body}`);
    let parsed: ErrorBody = {};
    try {
      parsed = JSON.parse(answer.body) as ErrorBody;
    } catch {
      // The assertion on the shape below says what was wrong.
    }
    return { status: answer.status, body: parsed, text: answer.body };
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
    });
  });
});
