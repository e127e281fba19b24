/**
 * Bad input to the gateway: each an Anthropic-shaped 4xx (`{ type: "error", error: { type, message },
 * request_id }` with the gateway's own request id), nothing held and nothing sent upstream. A body's
 * problem is told only to a caller whose key is known.
 */
import { request as httpRequest } from 'node:http';
import { MAX_GATEWAY_BODY_BYTES } from '../../src/gateway/anthropic-body.reader';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { MessagesApiServer } from '../support/messages-api-server';
import { startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_input_0123456789abcdefghijklmnop';
const MODEL = 'claude-gateway-test';
const VALID = JSON.stringify({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] });

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: { type?: string; error?: { type?: string; message?: string }; request_id?: string };
}

/** One request on a connection of its own; `chunked` sends the body without declaring its length. */
function send(port: number, method: string, path: string, body: string | Buffer | undefined, headers: Record<string, string>, chunked = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const length = body === undefined || chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) };
    const request = httpRequest({ host: '127.0.0.1', port, path, method, agent: false, headers: { ...length, ...headers } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('bad input gets an Anthropic-shaped 4xx, nothing held, nothing sent upstream (docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;
  const json = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };

  beforeAll(async () => {
    upstream = await MessagesApiServer.start();
    ledger = new InMemoryGatewayAccounting({
      keys: [{ key: KEY, keyId: 'key-input', organizationId: 'acme' }],
      models: [{ id: MODEL, attemptTimeoutMs: 30_000, maxOutputTokens: 4_096 }],
      credits: { acme: 1_000_000 },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL });
  });

  afterAll(async () => {
    await gateway.close();
    await upstream.close();
  });

  afterEach(() => {
    expect(upstream.requests).toHaveLength(0);
    expect(ledger.admitted).toHaveLength(0);
    expect(ledger.account('acme')).toMatchObject({ held: 0, running: 0, available: 1_000_000 });
  });

  const expectAnthropicError = (answer: Answer, status: number, type: string, message?: string | RegExp): void => {
    expect({ status: answer.status, type: answer.body.type, errorType: answer.body.error?.type }).toEqual({ status, type: 'error', errorType: type });
    if (message !== undefined) expect(answer.body.error?.message).toMatch(message);
    expect(answer.body.request_id).toEqual(expect.any(String));
    expect(answer.headers['request-id']).toBe(answer.body.request_id);
    expect(answer.headers['x-request-id']).toBe(answer.body.request_id);
    expect(answer.headers['content-type']).toBe('application/json');
  };

  it.each<[string, string, string]>([
    ['malformed JSON', '{"model": "m", "max_tokens": ', 'The request body is not valid JSON.'],
    ['an empty body', '', 'The request body is not valid JSON.'],
    ['no model', JSON.stringify({ max_tokens: 16, messages: [] }), 'model: Field required'],
    ['no max_tokens', JSON.stringify({ model: MODEL, messages: [] }), 'max_tokens: Field required'],
    ['a max_tokens of 0', JSON.stringify({ model: MODEL, max_tokens: 0, messages: [] }), 'max_tokens: Input should be greater than or equal to 1'],
    ['no messages', JSON.stringify({ model: MODEL, max_tokens: 16 }), 'messages: Field required'],
  ])('refuses %s with a 400 invalid_request_error naming the field', async (_case, body, message) => {
    const answer = await send(gateway.port, 'POST', '/anthropic/v1/messages', body, { ...json, 'x-api-key': KEY });
    expectAnthropicError(answer, 400, 'invalid_request_error', message);
  });

  it('refuses a body over the bound with a 413 request_too_large before reading it', async () => {
    const answer = await send(gateway.port, 'POST', '/anthropic/v1/messages', undefined, { ...json, 'x-api-key': KEY, 'content-length': String(MAX_GATEWAY_BODY_BYTES + 1) });
    expectAnthropicError(answer, 413, 'request_too_large', String(MAX_GATEWAY_BODY_BYTES));
  });

  it('refuses a body over the bound that does not declare its length, once it passes the bound', async () => {
    const oversized = Buffer.alloc(MAX_GATEWAY_BODY_BYTES + 1, 0x20);
    const answer = await send(gateway.port, 'POST', '/anthropic/v1/messages', oversized, { ...json, 'x-api-key': KEY }, true);
    expectAnthropicError(answer, 413, 'request_too_large');
  });

  it.each<[string, Record<string, string>]>([
    ['a body that is not JSON', { 'content-type': 'text/plain' }],
    ['a compressed body', { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
  ])('refuses %s with a 415 invalid_request_error', async (_case, headers) => {
    const answer = await send(gateway.port, 'POST', '/anthropic/v1/messages', VALID, { ...headers, 'x-api-key': KEY });
    expectAnthropicError(answer, 415, 'invalid_request_error');
  });

  it.each<[string, Record<string, string>, string]>([
    ['no key', {}, 'x-api-key header is required'],
    ['a malformed key', { 'x-api-key': 'llk_with spaces' }, 'invalid x-api-key'],
    ['a key too long to be one', { 'x-api-key': `llk_${'a'.repeat(600)}` }, 'invalid x-api-key'],
    ['a bearer header that is not one', { authorization: 'Basic dXNlcjpwYXNz' }, 'invalid x-api-key'],
    ['an unknown key', { 'x-api-key': 'llk_unknown_0123456789abcdefghijklmnop' }, 'invalid x-api-key'],
  ])('refuses %s with a 401 authentication_error', async (_case, headers, message) => {
    const answer = await send(gateway.port, 'POST', '/anthropic/v1/messages', VALID, { ...json, ...headers });
    expectAnthropicError(answer, 401, 'authentication_error', message);
  });

  it('tells a caller whose key is unknown nothing about its body: 401, not the body’s 400 or 413', async () => {
    const stranger = { 'x-api-key': 'llk_unknown_0123456789abcdefghijklmnop' };
    expectAnthropicError(await send(gateway.port, 'POST', '/anthropic/v1/messages', '{oops', { ...json, ...stranger }), 401, 'authentication_error');
    expectAnthropicError(
      await send(gateway.port, 'POST', '/anthropic/v1/messages', undefined, { ...json, ...stranger, 'content-length': String(MAX_GATEWAY_BODY_BYTES + 1) }),
      401,
      'authentication_error',
    );
  });

  it('answers the accounting’s refusals in Anthropic’s shape: unknown model 404, over the cap 400', async () => {
    const unknownModel = await send(gateway.port, 'POST', '/anthropic/v1/messages', JSON.stringify({ model: 'claude-nope', max_tokens: 16, messages: [] }), { ...json, 'x-api-key': KEY });
    expectAnthropicError(unknownModel, 404, 'not_found_error', 'claude-nope');
    const overCap = await send(gateway.port, 'POST', '/anthropic/v1/messages', JSON.stringify({ model: MODEL, max_tokens: 5_000, messages: [] }), { ...json, 'x-api-key': KEY });
    expectAnthropicError(overCap, 400, 'invalid_request_error', 'max_tokens');
  });

  it.each<[string, string]>([
    ['GET', '/anthropic/v1/messages'],
    ['POST', '/anthropic/v1/complete'],
    ['GET', '/anthropic/v1/messages/batches'],
    ['GET', '/anthropic'],
    ['DELETE', '/anthropic/v1/models/claude-gateway-test'],
    ['POST', '/anthropic/v2/some/deep/path?x=1'],
  ])('answers %s %s, which the gateway does not serve, with a 404 not_found_error', async (method, path) => {
    const answer = await send(gateway.port, method, path, method === 'POST' ? VALID : undefined, { ...json, 'x-api-key': KEY });
    expectAnthropicError(answer, 404, 'not_found_error');
  });
});
