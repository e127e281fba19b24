/**
 * Webhooks cover gateway calls (docs/gateway.md "Webhooks"): a subscription to InvocationSettled and
 * InvocationRefused receives each gateway call's event, naming its invocation, the operation
 * `gateway.anthropic-messages` and `gateway: { keyId, keyName, model }`, signed as every delivery is,
 * and holding no prompt or answer text.
 */
import { GATEWAY_OPERATION_ID } from '../../src/gateway/gateway-calls.service';
import { verifySignature } from '../../src/webhooks/webhook-signature';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { messageReply, textBlock } from '../support/messages-api-server';
import { WebhookReceiver } from '../webhooks/support/webhook-receiver';
import { GATEWAY_KEY_NAME, GATEWAY_MODEL, startGatewayService, type GatewayService } from './support/gateway-service';

const QUESTION = 'Zebra question only the caller knows';
const ANSWER = 'Axolotl answer only upstream knows';

describe('docs/gateway.md "Webhooks": InvocationSettled and InvocationRefused of a gateway call are delivered with its key and model, and no body text', () => {
  let service: GatewayService;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = new WebhookReceiver();
    const url = await receiver.start();
    // The receiver listens on 127.0.0.1, which the default address policy (public only) refuses.
    service = await startGatewayService({ env: { LEDGER_WEBHOOK_ADDRESSES: 'any' } });
    const registered = await service.ledger
      .http()
      .post('/v1/organizations/acme/webhooks')
      .set(bearer(TOKENS.acmeAdmin))
      .send({ url, events: ['InvocationSettled', 'InvocationRefused'] })
      .expect(200);
    secret = (registered.body as { secret: string }).secret;
  });
  let secret: string;

  afterAll(async () => {
    await service.close();
    await receiver.close();
  });

  it('delivers the settled call with its charge, key and model, and the refused one with its reason, each signed', async () => {
    service.upstream.reply(messageReply({ content: [textBlock(ANSWER)], usage: { input_tokens: 100, output_tokens: 10 } }));
    const answered = await service
      .client()
      .messages.create({ model: GATEWAY_MODEL, max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] })
      .withResponse();
    expect(answered.data.content).toEqual([{ type: 'text', text: ANSWER }]);
    const settledId = answered.response.headers.get('llm-ledger-invocation-id')!;
    // A key whose limit is below the hold: the call is refused and recorded.
    const capped = await service
      .ledger.http()
      .post('/v1/organizations/acme/gateway-keys')
      .set(bearer(TOKENS.system))
      .send({ name: 'capped', spendLimit: { credits: 1, period: 'day' } })
      .expect(200);
    const refused = await fetch(`${service.client().baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': (capped.body as { key: string }).key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: GATEWAY_MODEL, max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] }),
    });
    expect(refused.status).toBe(402);
    const refusedId = refused.headers.get('llm-ledger-invocation-id')!;
    await refused.arrayBuffer();

    await receiver.requests(2);
    const byType = new Map(receiver.received.map((delivery) => [delivery.body.type, delivery]));
    expect(byType.get('InvocationSettled')!.body).toMatchObject({
      type: 'InvocationSettled',
      organizationId: 'acme',
      // 100 × 3 + 10 × 15 credits.
      data: { invocationId: settledId, operationId: GATEWAY_OPERATION_ID, chargeCredits: 450, gateway: { keyId: service.keyId, keyName: GATEWAY_KEY_NAME, model: GATEWAY_MODEL } },
    });
    expect(byType.get('InvocationRefused')!.body).toMatchObject({
      type: 'InvocationRefused',
      organizationId: 'acme',
      data: { invocationId: refusedId, operationId: GATEWAY_OPERATION_ID, reason: 'key_spend_limit', gateway: { keyId: (capped.body as { keyId: string }).keyId, keyName: 'capped', model: GATEWAY_MODEL } },
    });
    for (const delivery of receiver.received) {
      expect(verifySignature(secret, delivery.headers['ledger-signature'] as string, delivery.rawBody)).toBe(true);
      expect(delivery.rawBody).not.toContain('Zebra');
      expect(delivery.rawBody).not.toContain('Axolotl');
      expect(delivery.rawBody).not.toContain(service.key);
    }
  });
});
