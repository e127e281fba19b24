/**
 * The gateway's provider seam (src/gateway/gateway-provider.port.ts, docs/gateway.md "Providers"):
 * an upstream that is not Anthropic's first-party API (another path, another auth header, usage in
 * its own shape, its own request id header) plugged in as GATEWAY_PROVIDER and driven end to end
 * through the real service: held, relayed, priced from its usage, settled, the hold released; its
 * error answers put in Anthropic's error shape by its `errorAnswer` (test/gateway/support/test-provider.ts).
 */
import Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { GATEWAY_PROVIDER } from '../../src/gateway/gateway-provider.port';
import { MAX_UPSTREAM_ERROR_BODY_BYTES } from '../../src/gateway/gateway-relay';
import { gatewayProviderOf } from '../../src/gateway/providers/gateway-providers';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';
import { TestUpstream, testProvider, UPSTREAM_TOKEN } from './support/test-provider';

describe('issue 34: a gateway provider is one folder and one registry line: a test upstream driven through the gateway', () => {
  let upstream: TestUpstream;
  let service: GatewayService;

  beforeEach(async () => {
    upstream = await TestUpstream.start({ text: 'Forty-two.', served_by: `${GATEWAY_MODEL}-tp`, metering: { tokens_in: 1_200, tokens_out: 30 } });
    service = await startGatewayService({ overrides: [{ token: GATEWAY_PROVIDER, value: testProvider(upstream.url) }] });
  });

  afterEach(async () => {
    await service.close();
    await upstream.close();
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
  it('puts the provider’s own error answer in Anthropic’s error shape (its errorAnswer): the SDK raises the class the type names, with the status kept and upstream’s request id', async () => {
    upstream.refuseNext({ status: 429, problem: 'generation quota used up', code: 'QUOTA' });
    const error = await service
      .client()
      .messages.create({ model: GATEWAY_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'What is 6*7?' }] })
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const apiError = error as InstanceType<typeof Anthropic.APIError>;
    expect(apiError.status).toBe(429);
    expect(apiError.error).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'generation quota used up (QUOTA)' }, request_id: 'tp-req-1' });
    expect(apiError.requestID).toBe('tp-req-1');
    expect(apiError.headers?.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify(apiError.error))));
    // Settled as the provider's reader classified it: nothing charged, the hold released.
    const balance = await service.ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.system)).expect(200);
    expect(balance.body).toMatchObject({ held: 0, running: 0, charged: 0 });
  });

  it('relays an error answer longer than MAX_UPSTREAM_ERROR_BODY_BYTES as it came, untranslated, every byte', async () => {
    const body = Buffer.from(JSON.stringify({ problem: 'x'.repeat(MAX_UPSTREAM_ERROR_BODY_BYTES), code: 'BUSY' }));
    upstream.answerNext(503, body);
    const answer = await fetch(`${service.client().baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': service.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: GATEWAY_MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(answer.status).toBe(503);
    expect(Buffer.from(await answer.arrayBuffer()).equals(body)).toBe(true);
  });
});

describe('issue 34: Anthropic’s provider relays Anthropic’s own error answers as they came', () => {
  it('is the identity: the same content type and the same bytes', () => {
    const provider = gatewayProviderOf({ anthropicApiKey: 'sk-ant-own' } as Parameters<typeof gatewayProviderOf>[0]);
    const body = Buffer.from(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_1' }));
    const answer = { status: 529, contentType: 'application/json', body, requestId: 'req_1' };
    const relayed = provider.errorAnswer(answer);
    expect(relayed.contentType).toBe('application/json');
    expect(relayed.body.equals(body)).toBe(true);
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
