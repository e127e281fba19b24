/**
 * docs/gateway.md's path, run as a newcomer runs it, on the real service (Fastify, configureHttp, the
 * SQLite store): the rate card and a key over the API, then Anthropic's TypeScript SDK pointed at the
 * service's `/anthropic` with that key, against a local Messages API that streams. The answer
 * streams through; the call is charged Anthropic's usage at the rate card and explained.
 */
import Anthropic from '@anthropic-ai/sdk';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { MessagesApiServer, messageStream } from '../support/messages-api-server';
import { bearer, HttpLedger, startHttpLedger, TOKENS } from '../http/support/http-ledger';

const MODEL = 'claude-sonnet-5-5';
const PRICES = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000 };

/** Reads of the invocation, each waiting for the read models to reach the log, before giving up on its settlement. */
const MAX_READS_UNTIL_SETTLED = 500;

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
});
