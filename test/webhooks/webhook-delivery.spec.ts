import { openEventStore } from '../../src/event-store/open-event-store';
import type { EventStore } from '../../src/event-store/event-store.port';
import { newEventId } from '../../src/event-store/event-id.generator';
import { VirtualClock } from '../../src/runtime';
import { FIRST_RETRY_WAIT_MS, MAX_DELIVERY_ATTEMPTS, RESUBSCRIBE_WAIT_MS, retryWaitMs } from '../../src/webhooks/webhook.bounds';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import { verifySignature } from '../../src/webhooks/webhook-signature';
import { WebhookStore } from '../../src/webhooks/webhook.store';
import { WebhookReceiver } from './support/webhook-receiver';

const SECRET = 'whsec_test_secret_for_the_delivery_spec';
const START_MS = Date.parse('2026-12-01T10:00:00.000Z');
const CROSSED = {
  threshold: { kind: 'available_below', credits: 500 },
  available: 400,
  charged: 600,
  grantedCredits: 1_000,
  usedPercent: 60,
  cause: { kind: 'settlement', invocationId: 'inv-1' },
  crossedAt: '2026-12-01T10:00:00.000Z',
};

describe('README.md webhook delivery from the log: signed POSTs, growing retries, dead letters', () => {
  let eventStore: EventStore;
  let webhooks: WebhookStore;
  let clock: VirtualClock;
  let receiver: WebhookReceiver;
  let worker: WebhookDeliveryWorker;
  let url: string;

  beforeEach(async () => {
    eventStore = await openEventStore('sqlite::memory:');
    webhooks = WebhookStore.open(':memory:');
    clock = new VirtualClock({ startMs: START_MS, autoAdvance: false });
    receiver = new WebhookReceiver();
    url = await receiver.start();
    webhooks.register({
      webhookId: 'wh_1',
      organizationId: 'acme',
      url,
      events: ['CreditThresholdCrossed'],
      secret: SECRET,
      createdAt: new Date(START_MS).toISOString(),
      fromPosition: await eventStore.headPosition(),
    });
    worker = new WebhookDeliveryWorker({ eventStore, webhooks, clock });
    await worker.start();
  });

  afterEach(async () => {
    await worker.stop();
    await receiver.close();
    webhooks.close();
    await eventStore.close();
  });

  const cross = (organizationId = 'acme', data: object = CROSSED) =>
    eventStore.append(`account-${organizationId}`, [{ id: newEventId(), type: 'CreditThresholdCrossed', data, metadata: { schemaVersion: 1 } }], {
      expectedRevision: 'any',
    });
  const attemptsOf = () => webhooks.deliveries('wh_1', 10)[0]!;

  it('POSTs { deliveryId, type, organizationId, occurredAt, data } with Ledger-Delivery and a Ledger-Signature that verifies', async () => {
    await cross();
    await receiver.requests(1);
    await worker.idle();
    const [delivery] = receiver.received;
    expect(delivery!.body).toEqual({
      deliveryId: expect.stringMatching(/^dlv_[0-9a-f]{32}$/),
      type: 'CreditThresholdCrossed',
      organizationId: 'acme',
      occurredAt: CROSSED.crossedAt,
      data: CROSSED,
    });
    expect(Object.keys(delivery!.body)).toEqual(['deliveryId', 'type', 'organizationId', 'occurredAt', 'data']);
    expect(delivery!.headers['ledger-delivery']).toBe(delivery!.body.deliveryId);
    const signature = delivery!.headers['ledger-signature'] as string;
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(signature.startsWith(`t=${Math.floor(START_MS / 1_000)},`)).toBe(true);
    expect(verifySignature(SECRET, signature, delivery!.rawBody)).toBe(true);
    // Any change to the body, the time or the secret breaks it.
    expect(verifySignature(SECRET, signature, delivery!.rawBody.replace('400', '401'))).toBe(false);
    expect(verifySignature('whsec_other', signature, delivery!.rawBody)).toBe(false);
    expect(attemptsOf()).toMatchObject({ status: 'delivered', attempts: [{ attempt: 1, statusCode: 200 }] });
  });

  it('retries a receiver that fails three times, after waits that grow, and delivers on the fourth with the same delivery id', async () => {
    receiver.answerWith((request) => (request <= 3 ? 503 : 204));
    await cross();
    await receiver.requests(1);
    await worker.idle();
    for (const [attempt, wait] of [
      [2, FIRST_RETRY_WAIT_MS],
      [3, 2 * FIRST_RETRY_WAIT_MS],
      [4, 4 * FIRST_RETRY_WAIT_MS],
    ] as const) {
      expect(retryWaitMs(attempt)).toBe(wait);
      await clock.advance(wait - 1);
      expect(receiver.received).toHaveLength(attempt - 1);
      await clock.advance(1);
      await receiver.requests(attempt);
      await worker.idle();
    }
    const ids = receiver.received.map((delivery) => delivery.headers['ledger-delivery']);
    expect(new Set(ids).size).toBe(1);
    expect(new Set(receiver.received.map((delivery) => delivery.rawBody)).size).toBe(1);
    const delivery = attemptsOf();
    expect(delivery.status).toBe('delivered');
    expect(delivery.attempts.map((attempt) => attempt.statusCode)).toEqual([503, 503, 503, 204]);
    // Each attempt is signed at its own time, over the same body.
    expect(receiver.received.every((received) => verifySignature(SECRET, received.headers['ledger-signature'] as string, received.rawBody))).toBe(true);
  });

  it(`dead-letters a delivery whose receiver never answers 2xx, after ${MAX_DELIVERY_ATTEMPTS} attempts, and sends it no more`, async () => {
    receiver.answerWith(() => 500);
    await cross();
    for (let attempt = 1; attempt <= MAX_DELIVERY_ATTEMPTS; attempt++) {
      if (attempt > 1) await clock.advance(retryWaitMs(attempt));
      await receiver.requests(attempt);
      await worker.idle();
    }
    expect(attemptsOf()).toMatchObject({ status: 'dead_lettered' });
    expect(attemptsOf().attempts).toHaveLength(MAX_DELIVERY_ATTEMPTS);
    expect(attemptsOf().nextAttemptAt).toBeUndefined();
    await clock.advance(retryWaitMs(MAX_DELIVERY_ATTEMPTS) * 4);
    await worker.idle();
    expect(receiver.received).toHaveLength(MAX_DELIVERY_ATTEMPTS);
  });

  it('records a receiver that cannot be reached as an attempt with its error, and retries it', async () => {
    await receiver.close();
    await cross();
    await new Promise<void>((resolve) => {
      const poll = (): void => (webhooks.deliveries('wh_1', 1)[0]?.attempts.length ? resolve() : void setImmediate(poll));
      poll();
    });
    await worker.idle();
    expect(attemptsOf()).toMatchObject({ status: 'pending', attempts: [{ attempt: 1, error: 'ECONNREFUSED' }] });
    expect(attemptsOf().nextAttemptAt).toBe(new Date(START_MS + FIRST_RETRY_WAIT_MS).toISOString());
  });

  it('delivers only its organization’s subscribed events, and none from before the webhook existed', async () => {
    await cross('globex');
    await eventStore.append('account-acme', [{ id: newEventId(), type: 'CreditsGranted', data: { credits: 1 }, metadata: { schemaVersion: 1 } }], { expectedRevision: 'any' });
    await cross('acme');
    await receiver.requests(1);
    await worker.idle();
    expect(receiver.received.map((delivery) => delivery.body.organizationId)).toEqual(['acme']);
    expect(webhooks.deliveries('wh_1', 10)).toHaveLength(1);
  });

  it('resumes after its checkpoint on a restart: a delivery left pending is sent again with the same id', async () => {
    receiver.answerWith(() => 500);
    await cross();
    await receiver.requests(1);
    await worker.idle();
    const firstId = receiver.received[0]!.body.deliveryId;
    await worker.stop();
    receiver.answerWith(() => 200);
    worker = new WebhookDeliveryWorker({ eventStore, webhooks, clock });
    await worker.start();
    await clock.advance(FIRST_RETRY_WAIT_MS);
    await receiver.requests(2);
    await worker.idle();
    expect(receiver.received[1]!.body.deliveryId).toBe(firstId);
    expect(webhooks.deliveries('wh_1', 10)).toHaveLength(1);
    expect(attemptsOf().status).toBe('delivered');
  });

  it('follows the log again from its checkpoint after its own write failed, so the event that failed is delivered, not skipped', async () => {
    await worker.stop();
    const errors: Record<string, unknown>[] = [];
    const enqueue = webhooks.enqueue.bind(webhooks);
    let failures = 1;
    webhooks.enqueue = (...args) => {
      if (args[0].length > 0 && failures-- > 0) throw new Error('disk I/O error');
      enqueue(...args);
    };
    worker = new WebhookDeliveryWorker({ eventStore, webhooks, clock, logger: { warn: () => undefined, error: (message) => errors.push(message) } });
    await worker.start();
    await cross();
    await new Promise<void>((resolve) => {
      const poll = (): void => (errors.length > 0 ? resolve() : void setImmediate(poll));
      poll();
    });
    expect(errors[0]).toMatchObject({ error: 'disk I/O error', retryInMs: RESUBSCRIBE_WAIT_MS });
    expect(receiver.received).toHaveLength(0);
    await clock.advance(RESUBSCRIBE_WAIT_MS);
    await receiver.requests(1);
    await worker.idle();
    expect(attemptsOf()).toMatchObject({ status: 'delivered' });
  });
});
