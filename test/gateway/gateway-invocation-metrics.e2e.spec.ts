/**
 * The ledger's invocation metrics cover gateway calls (docs/gateway.md "Metrics"): fed from the log
 * after commit, they count each call under the operation `gateway.anthropic-messages` by outcome,
 * its refusals by reason, the credits it was charged and its one upstream attempt, on the real
 * service with Anthropic's SDK as the caller.
 */
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { GATEWAY_OPERATION_ID } from '../../src/gateway/gateway-calls.service';
import { LogMetricsFollower } from '../../src/observability/log-metrics.follower';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { parseMetrics, samples } from '../observability/support/metrics-text';
import { errorReply, messageReply, messageStream } from '../support/messages-api-server';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

const SERVED_MODEL = `${GATEWAY_MODEL}-20261001`;
const OPERATION = `operation=${GATEWAY_OPERATION_ID}`;

describe('docs/gateway.md "Metrics": ledger_invocations_total, ledger_refusals_total, ledger_credits_charged_total and ledger_attempts_total count gateway calls', () => {
  let service: GatewayService;
  const charges: number[] = [];

  beforeAll(async () => {
    service = await startGatewayService();
    const system = bearer(TOKENS.system);
    // A second key whose day limit is below any hold: its call is refused (key_spend_limit).
    const capped = await service.ledger
      .http()
      .post('/v1/organizations/acme/gateway-keys')
      .set(system)
      .send({ name: 'capped', spendLimit: { credits: 1, period: 'day' } })
      .expect(200);
    service.upstream.reply(
      messageReply({ model: SERVED_MODEL, usage: { input_tokens: 100, output_tokens: 10 } }),
      { kind: 'sse', steps: messageStream({ model: SERVED_MODEL, startUsage: { input_tokens: 200, output_tokens: 1 }, deltaUsage: { output_tokens: 20 } }) },
      errorReply(529, 'overloaded_error', 'Overloaded'),
    );
    const client = service.client();
    const prompt = { model: GATEWAY_MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'Hi' }] };
    const ids: string[] = [];
    ids.push((await client.messages.create(prompt).withResponse()).response.headers.get('llm-ledger-invocation-id')!);
    const stream = client.messages.stream(prompt);
    await stream.finalMessage();
    ids.push((await stream.withResponse()).response.headers.get('llm-ledger-invocation-id')!);
    const failed = (await client.messages.create(prompt).catch((error: unknown) => error)) as { status?: number; headers?: Headers };
    expect(failed.status).toBe(529);
    ids.push(failed.headers!.get('llm-ledger-invocation-id')!);
    const refused = await fetch(service.client().baseURL + '/v1/messages', {
      method: 'POST',
      headers: { 'x-api-key': (capped.body as { key: string }).key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(prompt),
    });
    expect(refused.status).toBe(402);
    await refused.arrayBuffer();
    for (const id of ids) charges.push((await settledView(service.ledger, id)).charge as number);
  });

  afterAll(() => service.close());

  it('counts each call by its outcome and its refusal by reason, the credits charged and each upstream attempt by model and classification', async () => {
    const store = service.ledger.app.get<EventStore>(EVENT_STORE);
    await service.ledger.app.get(LogMetricsFollower).caughtUpTo((await store.headPosition())!);
    const text = (await service.ledger.http().get('/metrics').set(bearer(TOKENS.system)).expect(200)).text;
    const families = parseMetrics(text);

    expect(samples(families, 'ledger_invocations_total', ['operation', 'outcome'])).toEqual(
      new Map([
        [`${OPERATION},outcome=completed`, 2],
        [`${OPERATION},outcome=failed`, 1],
        [`${OPERATION},outcome=refused`, 1],
      ]),
    );
    expect(samples(families, 'ledger_refusals_total', ['operation', 'reason'])).toEqual(new Map([[`${OPERATION},reason=key_spend_limit`, 1]]));
    // 100 × 3 + 10 × 15 = 450 and 200 × 3 + 20 × 15 = 900; the overloaded call reported no usage: 0.
    expect(charges).toEqual([450, 900, 0]);
    expect(samples(families, 'ledger_credits_charged_total', ['operation'])).toEqual(new Map([[OPERATION, 1_350]]));
    expect(samples(families, 'ledger_attempts_total', ['provider', 'model', 'classification'])).toEqual(
      new Map([
        [`provider=anthropic,model=${SERVED_MODEL},classification=ok`, 2],
        // No answer named a model: the attempt is recorded under the rate card's.
        [`provider=anthropic,model=${GATEWAY_MODEL},classification=overloaded`, 1],
      ]),
    );
  });
});
