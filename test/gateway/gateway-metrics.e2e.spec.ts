/**
 * The gateway's metrics: `ledger_gateway_calls_total{model,status}` and the histogram
 * `ledger_gateway_overhead_seconds`, published by the HTTP side on its diagnostics channel and
 * counted by the ledger's metrics registry, with bounded labels only (a refused call's model, which
 * the caller wrote, is never a label).
 */
import { gatewayCallChannel, type GatewayCallTiming } from '../../src/gateway/gateway-http.channels';
import { LedgerMetrics } from '../../src/observability/ledger-metrics';
import { parseMetrics, samples } from '../observability/support/metrics-text';
import { InMemoryGatewayAccounting } from '../support/in-memory-gateway-accounting';
import { startLedgerApp } from '../support/ledger-app';
import { errorReply, messageReply, MessagesApiServer, messageStream } from '../support/messages-api-server';
import { startGateway, type GatewayApp } from './support/gateway-app';

const KEY = 'llk_acme_metrics_0123456789abcdefghijklmnop';
const MODEL = 'claude-gateway-test';

describe('the gateway’s calls are counted by model and status, and its overhead timed (docs/gateway.md)', () => {
  let upstream: MessagesApiServer;
  let gateway: GatewayApp;
  let ledger: InMemoryGatewayAccounting;
  const metrics = new LedgerMetrics({ organizationLabels: false });
  const count = (message: unknown): void => metrics.gatewayCallObserved(message as GatewayCallTiming);

  beforeAll(async () => {
    gatewayCallChannel.subscribe(count);
    upstream = await MessagesApiServer.start();
    ledger = new InMemoryGatewayAccounting({
      keys: [{ key: KEY, keyId: 'key-metrics', organizationId: 'acme' }],
      models: [{ id: MODEL, attemptTimeoutMs: 30_000, maxOutputTokens: 4_096 }],
      credits: { acme: 1_000_000 },
    });
    gateway = await startGateway({ accounting: ledger, upstreamURL: upstream.baseURL });
  });

  afterAll(async () => {
    gatewayCallChannel.unsubscribe(count);
    await gateway.close();
    await upstream.close();
  });

  it('counts each Messages call once with the status its caller got, and times the overhead of each answer relayed whole', async () => {
    upstream.reply(messageReply({}), { kind: 'sse', steps: messageStream({}) }, errorReply(529, 'overloaded_error', 'busy'));
    const client = gateway.client(KEY);
    const prompt = { model: MODEL, max_tokens: 16, messages: [{ role: 'user' as const, content: 'Hi' }] };
    await client.messages.create(prompt);
    await client.messages.stream(prompt).finalMessage();
    await client.messages.create(prompt).catch(() => undefined);
    await gateway.client('llk_unknown_0123456789abcdefghijklmnop').messages.create({ ...prompt, model: 'claude-the-caller-made-up' }).catch(() => undefined);
    await client.messages.create({ ...prompt, model: 'claude-also-made-up' }).catch(() => undefined);
    await client.messages.countTokens({ model: MODEL, messages: prompt.messages }).catch(() => undefined);
    await ledger.waitForSettlements(3);

    const families = parseMetrics(await metrics.registry.metrics());
    expect(Object.fromEntries(samples(families, 'ledger_gateway_calls_total', ['model', 'status']))).toEqual({
      [`model=${MODEL},status=200`]: 2,
      [`model=${MODEL},status=529`]: 1,
      'model=none,status=401': 1,
      'model=none,status=404': 1,
    });
    const overhead = families.get('ledger_gateway_overhead_seconds')!.metrics[0] as unknown as { count: string; sum: string };
    expect(Number(overhead.count)).toBe(3);
    expect(Number(overhead.sum)).toBeGreaterThan(0);
  });
});

describe('the service’s metrics registry counts what the gateway publishes (docs/gateway.md)', () => {
  it('shows a published gateway call in ledger_gateway_calls_total and its overhead in the histogram', async () => {
    const app = await startLedgerApp();
    try {
      gatewayCallChannel.publish({ model: MODEL, status: 200, overheadSeconds: 0.0004 } satisfies GatewayCallTiming);
      const families = parseMetrics(await app.app.get(LedgerMetrics).registry.metrics());
      expect(samples(families, 'ledger_gateway_calls_total', ['model', 'status']).get(`model=${MODEL},status=200`)).toBe(1);
      const buckets = (families.get('ledger_gateway_overhead_seconds')!.metrics[0] as unknown as { buckets: Record<string, string> }).buckets;
      expect(Number(buckets['0.0005'])).toBe(1);
      expect(Number(buckets['0.00025'])).toBe(0);
    } finally {
      await app.close();
    }
  });
});
