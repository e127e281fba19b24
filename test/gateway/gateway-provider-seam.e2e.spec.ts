/**
 * The gateway's provider seam (src/gateway/gateway-provider.port.ts, docs/gateway.md "Providers"):
 * an upstream that is not Anthropic's first-party API (another path, another auth header, usage in
 * its own shape, its own request id header) plugged in as GATEWAY_PROVIDER and driven end to end
 * through the real service: held, relayed, priced from its usage, settled, the hold released.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { GATEWAY_PROVIDER, type GatewayAnswer, type GatewayAnswerReader, type GatewayProvider } from '../../src/gateway/gateway-provider.port';
import { JsonAnswerReader } from '../../src/gateway/json-answer.reader';
import { NO_USAGE } from '../../src/runtime/usage';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

/** The service's own credential for the test upstream, sent as a bearer token (never the caller's key). */
const UPSTREAM_TOKEN = 'tp-own-credential';

interface SeenRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A generation API of its own: `POST /gen/v2/models/{model}:generate`, usage as `metering.tokens_in` / `tokens_out`. */
async function startTestUpstream(answer: Record<string, unknown>, status = 200): Promise<{ url: string; seen: SeenRequest[]; server: Server }> {
  const seen: SeenRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const authorized = request.headers.authorization === `Bearer ${UPSTREAM_TOKEN}`;
      response.writeHead(authorized ? status : 401, { 'content-type': 'application/json', 'x-tp-request-id': 'tp-req-1' });
      response.end(JSON.stringify(authorized ? answer : { problem: 'unauthorized' }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** The test upstream's answers: JSON only, `metering` in its own field names. */
class TestAnswerReader implements GatewayAnswerReader {
  readonly streamed = false;
  readonly atEventBoundary = false;
  private readonly json = new JsonAnswerReader(new Set(['metering', 'served_by']));

  feed(chunk: Buffer): number {
    this.json.feed(chunk);
    return -1;
  }

  read(status: number): GatewayAnswer {
    const body = this.json.answer;
    if (status < 200 || status >= 300) return { classification: 'server_error' };
    const metering = body?.metering as { tokens_in?: unknown; tokens_out?: unknown } | undefined;
    const usage =
      typeof metering?.tokens_in === 'number' && typeof metering.tokens_out === 'number' ? { ...NO_USAGE, inputTokens: metering.tokens_in, outputTokens: metering.tokens_out } : undefined;
    return { classification: 'ok', ...(usage === undefined ? {} : { usage }), ...(typeof body?.served_by === 'string' ? { responseModel: body.served_by } : {}) };
  }
}

function testProvider(baseURL: string): GatewayProvider {
  return {
    name: 'test-generation-api',
    baseURL,
    configured: true,
    requestIdHeader: 'x-tp-request-id',
    upstreamPath: (call) => (call.route === 'messages' ? `/gen/v2/models/${encodeURIComponent(call.model ?? '')}:generate${call.query}` : `/gen/v2/count${call.query}`),
    upstreamHeaders: () => ['authorization', `Bearer ${UPSTREAM_TOKEN}`, 'content-type', 'application/json'],
    answerReader: () => new TestAnswerReader(),
  };
}

describe('issue 34: a gateway provider is one folder and one registry line: a test upstream driven through the gateway', () => {
  let upstream: Awaited<ReturnType<typeof startTestUpstream>>;
  let service: GatewayService;

  beforeEach(async () => {
    upstream = await startTestUpstream({ text: 'Forty-two.', served_by: `${GATEWAY_MODEL}-tp`, metering: { tokens_in: 1_200, tokens_out: 30 } });
    service = await startGatewayService({ overrides: [{ token: GATEWAY_PROVIDER, value: testProvider(upstream.url) }] });
  });

  afterEach(async () => {
    await service.close();
    upstream.server.close();
  });

  it('holds the call, sends it to the provider’s path with its auth header, relays its answer, prices its usage shape and settles, releasing the hold', async () => {
    const body = JSON.stringify({ model: GATEWAY_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'What is 6*7?' }] });
    const answer = await fetch(`${service.client().baseURL}/v1/messages?trace=1`, {
      method: 'POST',
      headers: { 'x-api-key': service.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body,
    });

    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ text: 'Forty-two.', served_by: `${GATEWAY_MODEL}-tp`, metering: { tokens_in: 1_200, tokens_out: 30 } });
    expect(answer.headers.get('request-id')).toBe('tp-req-1');
    const [sent] = upstream.seen;
    expect(sent!.path).toBe(`/gen/v2/models/${GATEWAY_MODEL}:generate?trace=1`);
    expect(sent!.headers.authorization).toBe(`Bearer ${UPSTREAM_TOKEN}`);
    expect(sent!.headers['x-api-key']).toBeUndefined();
    expect(sent!.headers['anthropic-version']).toBeUndefined();
    expect(sent!.body).toBe(body);

    // Delivered means settled: the answer's last bytes came after the settlement.
    const invocationId = answer.headers.get('llm-ledger-invocation-id')!;
    const events = await service.ledger.app.get<EventStore>(EVENT_STORE).readStream(`invocation-${invocationId}`);
    expect(events.map((event) => event.type)).toEqual([
      'InvocationEstimated',
      'InvocationReserved',
      'InvocationDispatched',
      'AttemptRecorded',
      'InvocationCompleted',
      'InvocationSettled',
    ]);
    expect(events[3]!.data).toMatchObject({ classification: 'ok', httpStatus: 200, providerRequestId: 'tp-req-1', model: `${GATEWAY_MODEL}-tp`, priceCredits: 1_200 * 3 + 30 * 15 });
    const view = await settledView(service.ledger, invocationId);
    expect(view).toMatchObject({ state: 'settled', outcome: 'completed', charge: 4_050 });
    const balance = await service.ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200);
    expect(balance.body).toMatchObject({ held: 0, running: 0, charged: 4_050 });
  });
});

describe('issue 34: the relay and the forwarder know no upstream and carry no money', () => {
  const source = (file: string): string => readFileSync(join(__dirname, '../../src/gateway', file), 'utf8');
  const importsOf = (text: string): string[] => [...text.matchAll(/from '([^']+)'/g)].map(([, specifier]) => specifier!);

  it.each(['gateway-relay.ts', 'gateway-forwarder.ts'])('%s imports no provider’s shapes, no accounting, and takes no settle callback', (file) => {
    const text = source(file);
    expect(importsOf(text).filter((specifier) => /providers\/|gateway-calls|invocations\/|accounts\//.test(specifier))).toEqual([]);
    expect(text).not.toMatch(/\bsettle\??:/);
  });
});
