/**
 * docs/gateway.md's path, run as a newcomer runs it, on the real service (Fastify, configureHttp, the
 * SQLite store): the rate card and a key over the API, then Anthropic's TypeScript SDK pointed at the
 * service's `/anthropic` with that key, against a local Messages API that streams. The answer
 * streams through; the call is charged Anthropic's usage at the rate card and explained.
 */
import Anthropic from '@anthropic-ai/sdk';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { MessagesApiServer, messageStream } from '../support/messages-api-server';
import { bearer, HttpLedger, startHttpLedger, TOKENS } from '../http/support/http-ledger';

const MODEL = 'claude-sonnet-5-5';
const PRICES = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000 };

/** Reads of the invocation, each waiting for the read models to reach the log, before giving up on its settlement. */
const MAX_READS_UNTIL_SETTLED = 500;

/** docs/gateway.md's set-up block, as a newcomer copies it. */
const SET_UP = (() => {
  const page = readFileSync(join(__dirname, '../../docs/gateway.md'), 'utf8');
  const section = page.slice(page.indexOf('## Set-up in three commands'));
  return section.slice(section.indexOf('```sh'), section.indexOf('```', section.indexOf('```sh') + 5));
})();
/** Each `curl … -X <method> http://localhost:3000<path> … -d '<body>'` of the set-up, in order. */
const setUpCommands = (): { method: string; path: string; body: Record<string, unknown> }[] =>
  [...SET_UP.matchAll(/curl -s -X (PUT|POST) http:\/\/localhost:3000(\S+) [^\n]*\\\n\s*-d '([^']+)'/g)].map(([, method, path, body]) => ({ method: method!, path: path!, body: JSON.parse(body!) }));
/** What Claude Code sends in `anthropic-beta` beside its calls (its features; forwarded unchanged). */
const CLAUDE_CODE_BETAS = 'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14';
/** Claude Code's `metadata.user_id`: its installation, account and session (159 characters, within MAX_CALL_USER_ID_CHARS). */
const CLAUDE_CODE_USER_ID = `user_${'a1'.repeat(32)}_account_0b7e8f7e-1c2d-4e5f-8a9b-0c1d2e3f4a5b_session_6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9`;

describe('docs/gateway.md from a newcomer’s side: three commands, then a streamed answer through the SDK with its charge and explanation', () => {
  let upstream: MessagesApiServer;
  let ledger: HttpLedger;
  let baseURL: string;

  beforeAll(async () => {
    upstream = await MessagesApiServer.start();
    ledger = await startHttpLedger({ env: { ANTHROPIC_BASE_URL: upstream.baseURL, ANTHROPIC_API_KEY: 'sk-ant-the-service-own' } });
    const server = ledger.app.getHttpServer() as Server;
    if (!server.listening) {
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
    }
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/anthropic`;
  });
  afterAll(async () => {
    await ledger.close();
    await upstream.close();
  });

  it('streams the answer, charges Anthropic’s usage at the rate card, releases the rest of the hold, and explains the call', async () => {
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 10_000_000, reason: 'start', idempotencyKey: 'g-1' }).expect(200);
    await ledger.http().put(`/v1/gateway/models/${MODEL}`).set(bearer(TOKENS.system)).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
    const issued = await ledger.http().post('/v1/organizations/acme/gateway-keys').set(bearer(TOKENS.system)).send({ name: 'ci-bot', spendLimit: { credits: 1_000_000, period: 'day' } }).expect(200);
    const key = issued.body.key as string;

    upstream.reply({
      kind: 'sse',
      steps: messageStream({ model: MODEL, texts: ['Hello', ', newcomer'], startUsage: { input_tokens: 1_234, output_tokens: 1 }, deltaUsage: { output_tokens: 56 } }),
    });
    const client = new Anthropic({ baseURL, apiKey: key, maxRetries: 0 });
    const stream = client.messages.stream({ model: MODEL, max_tokens: 1_024, messages: [{ role: 'user', content: 'Hello' }] });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const message = await stream.finalMessage();
    expect(text).toBe('Hello, newcomer');
    expect(message.usage.output_tokens).toBe(56);
    // The caller's key never reaches upstream; the service's own does.
    expect(upstream.requests[0]!.headers['x-api-key']).toBe('sk-ant-the-service-own');

    const invocationId = (await stream.withResponse()).response.headers.get('llm-ledger-invocation-id')!;
    expect(invocationId).toEqual(expect.any(String));
    // 1,234 × 3,000,000 + 56 × 15,000,000 millionths = 4,542 credits.
    // The settlement is in the log before the answer's last bytes (docs/gateway.md, Settlement), but
    // the read models follow the log after commit: a read at that moment may not show it yet.
    let status = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system)).expect(200);
    for (let read = 0; status.body.state !== 'settled' && read < MAX_READS_UNTIL_SETTLED; read++) {
      status = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system)).expect(200);
    }
    expect(status.body).toMatchObject({ state: 'settled', charge: 4_542 });
    const balance = await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200);
    expect(balance.body).toMatchObject({ held: 0, running: 0, charged: 4_542 });
    const explanation = await ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.system)).expect(200);
    expect(explanation.body.sentence).toContain('ci-bot');
    expect(explanation.body.sentence).toContain('charged 4,542');
    const keys = await ledger.http().get('/v1/organizations/acme/gateway-keys').set(bearer(TOKENS.system)).expect(200);
    expect(keys.body.keys[0]).toMatchObject({ name: 'ci-bot', spentCredits: 4_542, heldCredits: 0 });
  });

  it('runs docs/gateway.md’s set-up as written, then Claude Code’s own call through it: 128,000 max_tokens to its default model, streamed, its beta headers and user id (issue 33)', async () => {
    const commands = setUpCommands();
    expect(commands.map(({ method, path }) => `${method} ${path}`)).toEqual([
      'PUT /v1/gateway/models/claude-sonnet-4-6',
      'PUT /v1/gateway/models/claude-opus-4-7',
      'PUT /v1/gateway/models/claude-haiku-4-5-20251001',
      'POST /v1/organizations/demo-org/gateway-keys',
    ]);
    // The page's organization is the demo's, granted the demo's 1,000,000 credits; here it is `globex`, granted as much.
    await ledger.http().post('/v1/organizations/globex/grants').set(bearer(TOKENS.system)).send({ credits: 1_000_000, reason: 'demo grant', idempotencyKey: 'g-cc' }).expect(200);
    let key = '';
    for (const { method, path, body } of commands) {
      const request = method === 'PUT' ? ledger.http().put(path) : ledger.http().post(path.replace('/demo-org/', '/globex/'));
      const answer = await request.set(bearer(TOKENS.system)).send(body).expect(200);
      if (method === 'POST') key = answer.body.key as string;
    }
    for (const model of ['claude-sonnet-4-6', 'claude-opus-4-7']) {
      const card = await ledger.http().get(`/v1/gateway/models/${model}`).set(bearer(TOKENS.globexAdmin)).expect(200);
      expect(card.body.versions.at(-1).maxOutputTokens).toBeGreaterThanOrEqual(128_000);
    }

    upstream.reply({
      kind: 'sse',
      steps: messageStream({ model: 'claude-sonnet-4-6', texts: ['I will', ' read the file.'], startUsage: { input_tokens: 3, output_tokens: 1, cache_creation_input_tokens: 12_000, cache_read_input_tokens: 20_000 }, deltaUsage: { output_tokens: 40 } }),
    });
    const body = JSON.stringify({
      model: 'claude-sonnet-4-6',
      max_tokens: 128_000,
      stream: true,
      metadata: { user_id: CLAUDE_CODE_USER_ID },
      system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'Read', description: 'Reads a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is in README.md?', cache_control: { type: 'ephemeral' } }] }],
    });
    const before = upstream.requests.length;
    const answer = await fetch(`${baseURL}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01', 'anthropic-beta': CLAUDE_CODE_BETAS, 'content-type': 'application/json', 'x-app': 'cli' },
      body,
    });
    const streamed = await answer.text();
    expect(answer.status).toBe(200);
    expect(streamed).toContain(' read the file.');
    const sent = upstream.requests[before]!;
    expect(sent.path).toBe('/v1/messages?beta=true');
    expect(sent.headers['anthropic-beta']).toBe(CLAUDE_CODE_BETAS);
    expect(sent.rawBody).toBe(body);

    const invocationId = answer.headers.get('llm-ledger-invocation-id')!;
    let status = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system)).expect(200);
    for (let read = 0; status.body.state !== 'settled' && read < MAX_READS_UNTIL_SETTLED; read++) {
      status = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system)).expect(200);
    }
    // 3 × 30,000 + 12,000 × 37,500 + 20,000 × 3,000 + 40 × 150,000 millionths = 516.09, rounded up once: 517 credits.
    expect(status.body).toMatchObject({ state: 'settled', charge: 517, gateway: { model: 'claude-sonnet-4-6', userId: CLAUDE_CODE_USER_ID } });
    // Held at its worst case first: 128,000 output tokens alone are 19,200 credits.
    expect(status.body.estimate).toBeGreaterThan(19_200);
  });
});
