import { scriptedToolUse } from '../../src/runtime';
import { verifySignature } from '../../src/webhooks/webhook-signature';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { WebhookReceiver } from './support/webhook-receiver';

// 450 credits per invocation (100 input and 10 output tokens at 3 and 15 credits each), exactly the hold.
const feature = scriptedFeature('webhooks.answer', () => [
  scriptedToolUse([{ id: 'a1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(100, 10) }),
]);
const WEBHOOKS = '/v1/organizations/acme/webhooks';

describe('README.md webhooks over HTTP: register (secret shown once), list, deliveries, delete', () => {
  let ledger: HttpLedger;
  let receiver: WebhookReceiver;
  let url: string;

  beforeAll(async () => {
    receiver = new WebhookReceiver();
    url = await receiver.start();
    // The receiver listens on 127.0.0.1, which the default address policy (public only) refuses.
    ledger = await startHttpLedger({ features: [feature], env: { LEDGER_WEBHOOK_ADDRESSES: 'any' } });
    await ledger.http().put('/v1/operations/webhooks.answer/publications').set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 450 })).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 1_000, reason: 'plan', idempotencyKey: 'p1' }).expect(200);
  });

  afterAll(async () => {
    await ledger.close();
    await receiver.close();
  });

  it('delivers a signed CreditThresholdCrossed and InvocationSettled to the registered URL, and lists them with their attempts', async () => {
    const registered = await ledger
      .http()
      .post(WEBHOOKS)
      .set(bearer(TOKENS.acmeAdmin))
      .send({ url, events: ['CreditThresholdCrossed', 'InvocationSettled'] })
      .expect(200);
    expect(Object.keys(registered.body).sort()).toEqual(['secret', 'webhookId']);
    const { webhookId, secret } = registered.body as { webhookId: string; secret: string };
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);

    await ledger.http().put('/v1/organizations/acme/alerts').set(bearer(TOKENS.acmeAdmin)).send({ thresholds: [{ kind: 'available_below', credits: 600 }] }).expect(200);
    const run = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ operationId: 'webhooks.answer', organizationId: 'acme', input: { question: 'q' } })
      .expect(200);
    await receiver.requests(2);

    const byType = new Map(receiver.received.map((delivery) => [delivery.body.type, delivery]));
    const crossed = byType.get('CreditThresholdCrossed')!;
    expect(crossed.body).toMatchObject({ organizationId: 'acme', data: { threshold: { kind: 'available_below', credits: 600 }, available: 550 } });
    expect(verifySignature(secret, crossed.headers['ledger-signature'] as string, crossed.rawBody)).toBe(true);
    const settled = byType.get('InvocationSettled')!;
    expect(settled.body).toMatchObject({ organizationId: 'acme', data: { invocationId: run.body.invocationId, operationId: 'webhooks.answer', chargeCredits: 450 } });
    expect(verifySignature(secret, settled.headers['ledger-signature'] as string, settled.rawBody)).toBe(true);

    const listed = await ledger.http().get(WEBHOOKS).set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(listed.body).toEqual({ webhooks: [{ webhookId, organizationId: 'acme', url, events: ['CreditThresholdCrossed', 'InvocationSettled'], createdAt: expect.any(String) }] });
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const deliveries = await ledger.http().get(`${WEBHOOKS}/${webhookId}/deliveries`).set(bearer(TOKENS.system)).expect(200);
    expect(deliveries.body.deliveries.map((delivery: { type: string }) => delivery.type).sort()).toEqual(['CreditThresholdCrossed', 'InvocationSettled']);
    for (const delivery of deliveries.body.deliveries) {
      expect(delivery).toMatchObject({ status: 'delivered', attempts: [{ attempt: 1, statusCode: 200 }] });
    }
    // A secret is not conversation text, but it is a secret: never in a log line.
    expect(ledger.logs.some((line) => line.includes(secret))).toBe(false);

    await ledger.http().delete(`${WEBHOOKS}/${webhookId}`).set(bearer(TOKENS.acmeAdmin)).expect(204);
    await ledger.http().get(`${WEBHOOKS}/${webhookId}/deliveries`).set(bearer(TOKENS.acmeAdmin)).expect(404);
    await ledger.http().delete(`${WEBHOOKS}/${webhookId}`).set(bearer(TOKENS.acmeAdmin)).expect(404);
    expect((await ledger.http().get(WEBHOOKS).set(bearer(TOKENS.acmeAdmin)).expect(200)).body).toEqual({ webhooks: [] });
  });

  it('keeps webhooks to the system role and that organization’s admin: 403 for members and auditors, 404 for another organization', async () => {
    const body = { url, events: ['InvocationRefused'] };
    await ledger.http().post(WEBHOOKS).set(bearer(TOKENS.acmeMember)).send(body).expect(403);
    await ledger.http().get(WEBHOOKS).set(bearer(TOKENS.auditor)).expect(403);
    await ledger.http().post(WEBHOOKS).set(bearer(TOKENS.globexAdmin)).send(body).expect(404);
    await ledger.http().get(WEBHOOKS).set(bearer(TOKENS.globexAdmin)).expect(404);
    await ledger.http().post('/v1/organizations/nobody/webhooks').set(bearer(TOKENS.system)).send(body).expect(404);
  });

  it.each([
    [{ url: 'ftp://example.com/hook', events: ['InvocationSettled'] }, 'url'],
    [{ url: 'not a url', events: ['InvocationSettled'] }, 'url'],
    [{ events: ['InvocationSettled'] }, 'url'],
    [{ url: 'https://example.com/hook', events: [] }, 'events'],
    [{ url: 'https://example.com/hook', events: ['HoldPlaced'] }, 'events'],
    [{ url: 'https://example.com/hook', events: ['InvocationSettled', 'InvocationSettled'] }, 'events'],
    [{ url: 'https://example.com/hook', events: ['InvocationSettled'], secret: 'mine' }, 'secret'],
  ])('answers %j with 400 naming %s and registers nothing', async (body, field) => {
    const response = await ledger.http().post(WEBHOOKS).set(bearer(TOKENS.system)).send(body).expect(400);
    expect(Object.keys(response.body.fields ?? {}).some((name) => name === field || name.startsWith(`${field}.`))).toBe(true);
  });
});
