/**
 * Settlement never loses money in silence (docs/gateway.md "Settlement"), through the real service and
 * the `/anthropic` route against a local Messages API: usage the upstream reports malformed is unknown
 * usage, charged the hold (transitions 7 and 9) and explained so; an attempt priced above its hold is
 * charged its hold and the difference recorded as an overrun, shown in the invocation's view and
 * explanation, counted in `ledger_gateway_overrun_credits_total` and delivered as a signed webhook.
 */
import { LedgerMetrics } from '../../src/observability/ledger-metrics';
import { MAX_REPORTED_USAGE_COUNT } from '../../src/providers/anthropic/anthropic-response.mapper';
import type { UsageStatement } from '../../src/queries/get-usage.query';
import { verifySignature } from '../../src/webhooks/webhook-signature';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { parseMetrics, samples } from '../observability/support/metrics-text';
import { messageStream, type SseStep } from '../support/messages-api-server';
import { WebhookReceiver } from '../webhooks/support/webhook-receiver';
import { GATEWAY_KEY_NAME, GATEWAY_MODEL, GATEWAY_PRICES, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

/** A model whose web searches are priced: 10,000 credits each. */
const SEARCH_MODEL = 'claude-searching-5';
const QUESTION = 'Quokka question only the caller knows';

/** A non-streamed answer whose `usage` is the JSON text given, written as is (no number is rounded on the way). */
const answerWithUsage = (usageJson: string): string =>
  `{"id":"msg_1","type":"message","role":"assistant","model":"${GATEWAY_MODEL}","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":${usageJson}}`;

/** A streamed answer whose last message_delta carries `usage` as the JSON text given. */
const streamWithDeltaUsage = (usageJson: string): SseStep[] =>
  messageStream({ model: GATEWAY_MODEL }).map((step) =>
    'event' in step && step.event === 'message_delta'
      ? { raw: `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":${usageJson}}\n\n` }
      : step,
  );

describe('settlement never loses money in silence (issue 31; docs/gateway.md "Settlement", STATE-PFM-LLM-001 transitions 7 and 9)', () => {
  let service: GatewayService;
  let receiver: WebhookReceiver;
  let secret: string;

  const call = async (model: string, stream: boolean): Promise<{ status: number; invocationId: string; body: string }> => {
    const response = await fetch(`${service.client().baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': service.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, max_tokens: 64, stream, messages: [{ role: 'user', content: QUESTION }] }),
    });
    return { status: response.status, invocationId: response.headers.get('llm-ledger-invocation-id')!, body: await response.text() };
  };
  const explanation = async (invocationId: string) =>
    (await service.ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.system)).expect(200)).body as Record<string, unknown> & { sentence: string };
  const attempts = async (invocationId: string) =>
    ((await service.ledger.http().get(`/v1/invocations/${invocationId}/attempts`).set(bearer(TOKENS.system)).expect(200)).body as { attempts: Record<string, unknown>[] }).attempts;
  const grouped = (credits: number): string => credits.toLocaleString('en-US');

  beforeAll(async () => {
    receiver = new WebhookReceiver();
    const url = await receiver.start();
    service = await startGatewayService({ env: { LEDGER_WEBHOOK_ADDRESSES: 'any' } });
    await service.ledger
      .http()
      .put(`/v1/gateway/models/${SEARCH_MODEL}`)
      .set(bearer(TOKENS.system))
      .send({ prices: { ...GATEWAY_PRICES, webSearchPerThousand: 10_000_000 }, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true })
      .expect(200);
    const registered = await service.ledger.http().post('/v1/organizations/acme/webhooks').set(bearer(TOKENS.acmeAdmin)).send({ url, events: ['InvocationOverrun'] }).expect(200);
    secret = (registered.body as { secret: string }).secret;
  });

  afterAll(async () => {
    await service.close();
    await receiver.close();
  });

  /** The call is settled at its hold through pending, its attempt names the field, and its sentence says why. */
  const expectChargedHoldForMalformed = async (invocationId: string, field: string): Promise<void> => {
    const view = await settledView(service.ledger, invocationId);
    expect(view).toMatchObject({ state: 'settled', charge: view.estimate });
    expect(view.estimate).toBeGreaterThan(0);
    const [attempt] = await attempts(invocationId);
    expect(attempt).toMatchObject({ malformedUsage: field, priceCredits: 0 });
    expect(attempt).not.toHaveProperty('usage');
    const explained = await explanation(invocationId);
    expect(explained).toMatchObject({ settlement: { transition: 9, chargeCredits: view.estimate }, gateway: { malformedUsage: field } });
    expect(explained.sentence).toBe(
      `Gateway call by key "${GATEWAY_KEY_NAME}" to ${GATEWAY_MODEL}: the upstream reported malformed usage (${field}), so it was charged its ${grouped(view.estimate as number)}-credit hold.`,
    );
  };

  const MALFORMED_OUTPUT_TOKENS = [
    ['1e20', '1e20'],
    ['2^53+1', '9007199254740993'],
    ['−100000', '-100000'],
    ['9.5', '9.5'],
    ['"9000"', '"9000"'],
  ] as const;

  it.each(MALFORMED_OUTPUT_TOKENS)('finding 5: output_tokens of %s is malformed usage, charged the hold and explained so (non-streamed)', async (_name, value) => {
    service.upstream.reply({ kind: 'raw', status: 200, body: answerWithUsage(`{"input_tokens":10,"output_tokens":${value}}`), headers: { 'content-type': 'application/json' } });
    const answered = await call(GATEWAY_MODEL, false);
    expect(answered.status).toBe(200);
    await expectChargedHoldForMalformed(answered.invocationId, 'output_tokens');
  });

  it.each(MALFORMED_OUTPUT_TOKENS)('finding 5: output_tokens of %s in message_delta is malformed usage, charged the hold and explained so (streamed)', async (_name, value) => {
    service.upstream.reply({ kind: 'sse', steps: streamWithDeltaUsage(`{"output_tokens":${value}}`) });
    const answered = await call(GATEWAY_MODEL, true);
    expect(answered.status).toBe(200);
    expect(answered.body).toContain('event: message_stop');
    await expectChargedHoldForMalformed(answered.invocationId, 'output_tokens');
  });

  it('finding 5: web_search_requests of 9e15 prices past the exact-integer range: malformed usage, settled at once at the hold, never left dispatched for recovery', async () => {
    service.upstream.reply({
      kind: 'raw',
      status: 200,
      body: answerWithUsage('{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_search_requests":9000000000000000}}').replace(GATEWAY_MODEL, SEARCH_MODEL),
      headers: { 'content-type': 'application/json' },
    });
    const answered = await call(SEARCH_MODEL, false);
    expect(answered.status).toBe(200);
    const view = await settledView(service.ledger, answered.invocationId);
    expect(view).toMatchObject({ state: 'settled', charge: view.estimate });
    expect((await attempts(answered.invocationId))[0]).toMatchObject({ malformedUsage: 'server_tool_use.web_search_requests' });
    const explained = await explanation(answered.invocationId);
    expect(explained.settlement).toMatchObject({ transition: 9 });
    expect(explained.sentence).toContain('the upstream reported malformed usage (server_tool_use.web_search_requests), so it was charged its');
  });

  it.each([
    ['the bound + 1', String(MAX_REPORTED_USAGE_COUNT + 1)],
    ['2^53−1', String(Number.MAX_SAFE_INTEGER)],
  ])('a count of %s, past MAX_REPORTED_USAGE_COUNT, is malformed usage, charged the hold and explained so', async (_name, value) => {
    service.upstream.reply({ kind: 'raw', status: 200, body: answerWithUsage(`{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":${value}}`), headers: { 'content-type': 'application/json' } });
    const answered = await call(GATEWAY_MODEL, false);
    expect(answered.status).toBe(200);
    await expectChargedHoldForMalformed(answered.invocationId, 'cache_read_input_tokens');
  });

  it('an upstream reporting 2^53−1 cache-read tokens twice does not stop the read side: /health/ready is 200 and the statement answers', async () => {
    const invocationIds: string[] = [];
    const settledDays: string[] = [];
    for (const stream of [false, true]) {
      const usage = `{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":${Number.MAX_SAFE_INTEGER}}`;
      if (stream) service.upstream.reply({ kind: 'sse', steps: streamWithDeltaUsage(usage) });
      else service.upstream.reply({ kind: 'raw', status: 200, body: answerWithUsage(usage), headers: { 'content-type': 'application/json' } });
      const answered = await call(GATEWAY_MODEL, stream);
      expect(answered.status).toBe(200);
      invocationIds.push(answered.invocationId);
      settledDays.push(((await settledView(service.ledger, answered.invocationId)).settledAt as string).slice(0, 10));
    }
    // The statement waits for the usage-statements read model to reach the log's head, so readiness then sees it there.
    const statement = await service.ledger.http().get(`/v1/organizations/acme/usage?from=${settledDays[0]}&to=${settledDays[1]}&groupBy=key`).set(bearer(TOKENS.system));
    expect(statement.status).toBe(200);
    const { totals } = statement.body as UsageStatement;
    expect(totals.settled).toBeGreaterThanOrEqual(2);
    expect(totals.tokens.cacheReadTokens).toBeLessThan(MAX_REPORTED_USAGE_COUNT);
    expect(totals).not.toHaveProperty('usageSaturated');
    expect((await service.ledger.http().get('/health/ready')).status).toBe(200);
    for (const invocationId of invocationIds) await expectChargedHoldForMalformed(invocationId, 'cache_read_input_tokens');
  });

  it('finding 4: an attempt priced above its hold is charged its hold and the overrun recorded: view, explanation, metric and signed webhook', async () => {
    service.upstream.reply({ kind: 'raw', status: 200, body: answerWithUsage('{"input_tokens":150000,"output_tokens":10}'), headers: { 'content-type': 'application/json' } });
    const answered = await call(GATEWAY_MODEL, false);
    expect(answered.status).toBe(200);
    // 150,000 input tokens × 3 + 10 output tokens × 15 credits.
    const price = 450_150;
    const view = await settledView(service.ledger, answered.invocationId);
    const hold = view.estimate as number;
    expect(hold).toBeLessThan(price);
    expect(view).toMatchObject({ state: 'settled', charge: hold, spentCredits: price, overrunCredits: price - hold });

    const explained = await explanation(answered.invocationId);
    expect(explained.settlement).toMatchObject({ transition: 8, chargeCredits: hold, overrunCredits: price - hold });
    expect(explained.sentence).toBe(
      `Gateway call by key "${GATEWAY_KEY_NAME}" to ${GATEWAY_MODEL}: 150,000 input and 10 output tokens, priced at ${grouped(price)}; held ${grouped(hold)}, charged ${grouped(hold)}; the ${grouped(price - hold)} credits over the hold are recorded as an overrun.`,
    );

    const metrics = service.ledger.app.get(LedgerMetrics);
    const overrunCounted = async () => samples(parseMetrics(await metrics.registry.metrics()), 'ledger_gateway_overrun_credits_total', ['model']).get(`model=${GATEWAY_MODEL}`);
    while ((await overrunCounted()) === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await overrunCounted()).toBe(price - hold);

    await receiver.requests(1);
    const [delivery] = receiver.received;
    expect(delivery!.body).toMatchObject({
      type: 'InvocationOverrun',
      organizationId: 'acme',
      data: { invocationId: answered.invocationId, gateway: { keyId: service.keyId, keyName: GATEWAY_KEY_NAME, model: GATEWAY_MODEL }, priceCredits: price, holdCredits: hold, chargeCredits: hold, overrunCredits: price - hold },
    });
    expect(verifySignature(secret, delivery!.headers['ledger-signature'] as string, delivery!.rawBody)).toBe(true);
    expect(delivery!.rawBody).not.toContain('Quokka');
    expect(receiver.received).toHaveLength(1);
  });
});
