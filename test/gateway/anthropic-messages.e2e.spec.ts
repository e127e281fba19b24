/**
 * The gateway's Messages route driven by Anthropic's own TypeScript SDK, against a local Messages API
 * on loopback: the answer comes back as Anthropic gave it, the body goes upstream byte for byte, and
 * the caller's key never leaves the gateway.
 */
import { request as httpRequest } from 'node:http';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { messageReply, MessagesApiServer, textBlock } from '../support/messages-api-server';
import { SERVICE_API_KEY, startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_ci_bot_0123456789abcdefghijklmnop';
const MODEL = 'claude-gateway-test';

function accounting(): InMemoryGatewayAccounting {
  return new InMemoryGatewayAccounting({
    keys: [{ key: KEY, keyId: 'key-ci-bot', organizationId: 'acme' }],
    models: [{ id: MODEL, attemptTimeoutMs: 30_000, maxOutputTokens: 4_096 }],
    credits: { acme: 1_000_000 },
  });
}

describe('the gateway relays a Messages call unchanged, held and settled with Anthropic’s usage (docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let ledger: InMemoryGatewayAccounting;
  let gateway: GatewayApp;

  beforeEach(async () => {
    upstream = await MessagesApiServer.start();
    ledger = accounting();
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL });
  });

  afterEach(async () => {
    await gateway.close();
    await upstream.close();
  });

  it('answers messages.create with upstream’s message, and settles once with its usage, model and stop reason', async () => {
    upstream.reply(
      messageReply({ model: 'claude-gateway-test-20260101', content: [textBlock('Forty-two.')], usage: { input_tokens: 31, output_tokens: 4, cache_read_input_tokens: 7, cache_creation_input_tokens: null } }),
    );

    const { data: message, response } = await gateway
      .client(KEY)
      .messages.create({ model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'What is 6*7?' }] })
      .withResponse();

    expect(message.content).toEqual([{ type: 'text', text: 'Forty-two.' }]);
    expect(message.model).toBe('claude-gateway-test-20260101');
    expect(response.headers.get('request-id')).toBe('req_fake_0001');
    expect(response.headers.get('llm-ledger-invocation-id')).toBe('gw-call-1');
    const [settled] = await ledger.waitForSettlements(1);
    expect(settled!.outcome).toMatchObject({
      classification: 'ok',
      httpStatus: 200,
      providerRequestId: 'req_fake_0001',
      responseModel: 'claude-gateway-test-20260101',
      stopReason: 'end_turn',
      usage: { inputTokens: 31, outputTokens: 4, cacheReadTokens: 7, cacheWriteTokens: 0 },
      timedOut: false,
      callerDisconnected: false,
    });
    expect(settled!.charge).toBe(31 + 7 + 4 * 5);
    expect(ledger.account('acme')).toMatchObject({ held: 0, running: 0, charged: 58 });
  });

  it('sends upstream the body’s bytes as they came (unknown fields, odd spacing), the beta header and the query, with the service’s key instead of the caller’s', async () => {
    upstream.reply(messageReply({}));
    const body = `{ "model":"${MODEL}", "max_tokens":16,\n  "messages":[{"role":"user","content":"héllo"}], "future_field": {"nested": [1, 2.50, null]}, "thinking":{"type":"enabled","budget_tokens":1024} }`;

    const answer = await post(gateway.port, '/anthropic/v1/messages?beta=true', body, {
      'x-api-key': KEY,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'interleaved-thinking-2025-05-14,future-beta-2099-01-01',
      'x-unrelated': 'not passed',
    });

    expect(answer.status).toBe(200);
    const [sent] = upstream.requests;
    expect(sent!.path).toBe('/v1/messages?beta=true');
    expect(sent!.bytes.equals(Buffer.from(body))).toBe(true);
    expect(sent!.headers['x-api-key']).toBe(SERVICE_API_KEY);
    expect(sent!.headers['anthropic-beta']).toBe('interleaved-thinking-2025-05-14,future-beta-2099-01-01');
    expect(sent!.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent!.headers['x-unrelated']).toBeUndefined();
    expect(JSON.stringify(sent!.headers)).not.toContain(KEY);
    expect(ledger.admitted[0]).toMatchObject({ bodyBytes: Buffer.byteLength(body), model: MODEL, maxTokens: 16, stream: false });
  });

  it('forwards a body far larger than the ledger API’s 64 KiB, byte for byte', async () => {
    upstream.reply(messageReply({}));
    const big = JSON.stringify({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'x'.repeat(600 * 1024) }] });

    const answer = await post(gateway.port, '/anthropic/v1/messages', big, { 'x-api-key': KEY });

    expect(answer.status).toBe(200);
    expect(upstream.requests[0]!.bytes.equals(Buffer.from(big))).toBe(true);
    expect(ledger.admitted[0]!.bodyBytes).toBe(Buffer.byteLength(big));
    await ledger.waitForSettlements(1);
  });

  it('takes the key as a bearer token too (what ANTHROPIC_AUTH_TOKEN makes an SDK send), and never passes it on', async () => {
    upstream.reply(messageReply({}));

    await gateway.client(KEY, { authToken: true }).messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] });

    const [sent] = upstream.requests;
    expect(sent!.headers.authorization).toBeUndefined();
    expect(sent!.headers['x-api-key']).toBe(SERVICE_API_KEY);
    await ledger.waitForSettlements(1);
  });
});

/** A POST with exactly these bytes, read back whole. */
function post(port: number, path: string, body: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    request.on('error', reject);
    request.end(body);
  });
}
