import ipaddr from 'ipaddr.js';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { ValidationError } from '../../src/domain/domain.errors';
import { newEventId } from '../../src/event-store/event-id.generator';
import type { EventStore } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import { VirtualClock } from '../../src/runtime';
import { ADDRESS_NOT_PUBLIC, checkTarget, embeddedIPv4, isPublicAddress, normalisedHost, registrationProblem } from '../../src/webhooks/webhook-address.policy';
import { WebhookDeliveryWorker } from '../../src/webhooks/webhook-delivery.worker';
import { createHttpWebhookSender } from '../../src/webhooks/webhook-sender';
import { FIRST_RETRY_WAIT_MS } from '../../src/webhooks/webhook.bounds';
import { WebhookStore } from '../../src/webhooks/webhook.store';
import type { WebhookAddresses } from '../../src/webhooks/webhook-address.policy';
import { WebhooksService } from '../../src/webhooks/webhooks.service';
import { bearer, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { FakeResolver } from './support/fake-resolver';
import { WebhookReceiver } from './support/webhook-receiver';

const SEND_TIMEOUT_MS = 5_000;
const START_MS = Date.parse('2026-12-01T10:00:00.000Z');
const NOT_LOCALHOST = /not localhost/;
const NOT_PUBLIC = /must be a public address/;

/** A Teredo address (server 65.54.227.120, as in RFC 4380) whose client is `client`, stored inverted. */
function teredo(client: string): string {
  const [a, b, c, d] = client.split('.').map(Number) as [number, number, number, number];
  const high = ((a << 8) | b) ^ 0xffff;
  const low = ((c << 8) | d) ^ 0xffff;
  return `2001:0:4136:e378:8000:63bf:${high.toString(16)}:${low.toString(16)}`;
}

describe('issue 24 finding 4: webhook address policy', () => {
  describe('an IPv6 address that embeds an IPv4 one is judged as the IPv4 address', () => {
    it.each([
      // As WHATWG URL writes them (ipaddr.js reads a dotted `::127.0.0.1` as IPv4-mapped: the same verdict).
      ['IPv4-compatible', '::7f00:1', '127.0.0.1'],
      ['IPv4-compatible', '::a9fe:a9fe', '169.254.169.254'],
      ['IPv4-compatible', '::808:808', '8.8.8.8'],
      ['IPv4-mapped', '::ffff:7f00:1', '127.0.0.1'],
      ['IPv4-mapped', '::ffff:10.0.0.1', '10.0.0.1'],
      ['IPv4-mapped', '::ffff:8.8.8.8', '8.8.8.8'],
      ['IPv4-translated', '::ffff:0:127.0.0.1', '127.0.0.1'],
      ['IPv4-translated', '::ffff:0:8.8.8.8', '8.8.8.8'],
      ['NAT64 well-known', '64:ff9b::127.0.0.1', '127.0.0.1'],
      ['NAT64 well-known', '64:ff9b::a9fe:a9fe', '169.254.169.254'],
      ['NAT64 well-known', '64:ff9b::8.8.8.8', '8.8.8.8'],
      ['NAT64 local-use', '64:ff9b:1::10.0.0.1', '10.0.0.1'],
      ['NAT64 local-use', '64:ff9b:1::100.64.0.1', '100.64.0.1'],
      ['NAT64 local-use', '64:ff9b:1::8.8.8.8', '8.8.8.8'],
      ['6to4', '2002:7f00:1::', '127.0.0.1'],
      ['6to4', '2002:a9fe:a9fe::1', '169.254.169.254'],
      ['6to4', '2002:c0a8:101:1::1', '192.168.1.1'],
      ['6to4', '2002:808:808::1', '8.8.8.8'],
      ['Teredo', teredo('127.0.0.1'), '127.0.0.1'],
      ['Teredo', teredo('10.0.0.1'), '10.0.0.1'],
      ['Teredo', teredo('169.254.169.254'), '169.254.169.254'],
      ['Teredo', teredo('8.8.8.8'), '8.8.8.8'],
    ])('%s %s embeds %s, and is public exactly when it is', (_form, address, embedded) => {
      expect(embeddedIPv4(ipaddr.IPv6.parse(address))?.toString()).toBe(embedded);
      expect(isPublicAddress(address)).toBe(isPublicAddress(embedded));
    });

    it.each([
      ['::', false],
      ['::1', false],
      ['2001:db8::1', false],
      ['2001:2::1', false],
      ['fec0::1', false],
      ['100::1', false],
      ['ff02::1', false],
      ['2606:4700:4700::1111', true],
    ])('%s embeds nothing public of its own, and is public: %s', (address, expected) => {
      expect(isPublicAddress(address)).toBe(expected);
    });
  });

  describe('hostnames are normalised before the policy: case, IDNA, trailing dots', () => {
    it.each([
      ['http://Example.COM/hook', 'example.com'],
      ['http://example.com./hook', 'example.com'],
      ['http://example.com.../hook', 'example.com'],
      ['http://ＥＸＡＭＰＬＥ．ｃｏｍ/hook', 'example.com'],
      ['http://bücher.example/hook', 'xn--bcher-kva.example'],
      ['http://127.0.0.1../hook', '127.0.0.1'],
      ['http://0x7f.1../hook', '127.0.0.1'],
      ['http://[::127.0.0.1]/hook', '::7f00:1'],
      ['http://./hook', undefined],
      ['http://.../hook', undefined],
    ])('%s is judged as %s', (url, host) => {
      expect(normalisedHost(new URL(url))).toBe(host);
    });

    it.each([
      ['http://localhost./', NOT_LOCALHOST],
      ['http://localhost../hook', NOT_LOCALHOST],
      ['http://LocalHost.../hook', NOT_LOCALHOST],
      ['http://ＬＯＣＡＬＨＯＳＴ/hook', NOT_LOCALHOST],
      ['http://api.localhost./hook', NOT_LOCALHOST],
      ['http://127.0.0.1./hook', NOT_PUBLIC],
      ['http://127.0.0.1../hook', NOT_PUBLIC],
      ['http://0x7f.1../hook', NOT_PUBLIC],
      ['http://127。0。0。1/hook', NOT_PUBLIC],
      ['http://[::127.0.0.1]/', NOT_PUBLIC],
      ['http://[::ffff:127.0.0.1]/hook', NOT_PUBLIC],
      ['http://[64:ff9b::a9fe:a9fe]/latest/meta-data', NOT_PUBLIC],
      ['http://[2002:a9fe:a9fe::]/latest/meta-data', NOT_PUBLIC],
      [`http://[${teredo('127.0.0.1')}]/hook`, NOT_PUBLIC],
      ['http://./hook', /must name a host/],
    ])('refuses to register %s under the public policy without a lookup, and allows it under any', async (url, problem) => {
      const resolver = new FakeResolver();
      expect(await registrationProblem(url, 'public', resolver)).toMatch(problem);
      expect(await registrationProblem(url, 'any', resolver)).toBeUndefined();
      expect(resolver.asked).toEqual([]);
    });

    it('resolves the normalised name', async () => {
      const resolver = new FakeResolver({ 'hooks.example.com': ['93.184.216.34'] });
      expect(await registrationProblem('https://Hooks.Example.COM../ledger', 'public', resolver)).toBeUndefined();
      expect(resolver.asked).toEqual(['hooks.example.com']);
    });
  });

  describe('control characters are refused under every policy', () => {
    it.each([
      ['CR LF in the path', 'http://example.com/hook\r\nX-Injected: 1'],
      ['LF in the host', 'http://exa\nmple.com/hook'],
      ['CR in the query', 'http://example.com/hook?a=1\rb'],
      ['TAB', 'http://example.com/\thook'],
      ['NUL', 'http://example.com/hook\u0000'],
      ['ESC', 'http://example.com/\u001bhook'],
      ['DEL', 'http://example.com/hook\u007f'],
      ['a leading LF', '\nhttp://example.com/hook'],
    ])('%s: %j', async (_what, url) => {
      const resolver = new FakeResolver({ 'example.com': ['93.184.216.34'] });
      for (const policy of ['public', 'any'] as const) {
        expect(await registrationProblem(url, policy, resolver)).toMatch(/control characters/);
      }
      expect(resolver.asked).toEqual([]);
    });

    it('a delivery to a stored URL with a control character is not sent', async () => {
      const receiver = new WebhookReceiver();
      const url = await receiver.start();
      try {
        const send = createHttpWebhookSender('any', new FakeResolver());
        expect(await send(`${url}\r\nX-Injected: 1`, '{}', {}, SEND_TIMEOUT_MS)).toEqual({ error: 'invalid url' });
        expect(receiver.connections).toBe(0);
      } finally {
        await receiver.close();
      }
    });
  });

  describe('a name is resolved at registration, and every address it has must be public', () => {
    const resolver = new FakeResolver({
      'localhost.localdomain': ['127.0.0.1'],
      '169.254.169.254.nip.io': ['169.254.169.254'],
      'mixed.example': ['93.184.216.34', '10.0.0.1'],
      'loopback6.example': ['::1'],
      'mapped.example': ['::ffff:127.0.0.1'],
      'nat64.example': ['64:ff9b::a9fe:a9fe'],
      'cgnat.example': ['100.64.0.1'],
      'empty.example': [],
      'public.example': ['93.184.216.34', '2606:4700:4700::1111'],
    });

    it.each([
      ['http://localhost.localdomain/hook', /public addresses only/],
      ['http://169.254.169.254.nip.io/latest/meta-data', /public addresses only/],
      ['http://mixed.example/hook', /public addresses only/],
      ['http://loopback6.example/hook', /public addresses only/],
      ['http://mapped.example/hook', /public addresses only/],
      ['http://nat64.example/hook', /public addresses only/],
      ['http://cgnat.example/hook', /public addresses only/],
      // Not resolving now judges nothing: registered, and each delivery resolves and judges it again.
      ['http://empty.example/hook', undefined],
      ['http://missing.example/hook', undefined],
      ['https://public.example/hook', undefined],
    ])('%s under the public policy: %s', async (url, problem) => {
      const found = await registrationProblem(url, 'public', resolver);
      if (problem === undefined) expect(found).toBeUndefined();
      else expect(found).toMatch(problem);
    });

    it('under the any policy a name is not resolved at registration', async () => {
      const quiet = new FakeResolver();
      expect(await registrationProblem('http://localhost.localdomain/hook', 'any', quiet)).toBeUndefined();
      expect(quiet.asked).toEqual([]);
    });

    it('a lookup cut off by its time bound refuses the name with timeout', async () => {
      const never = { lookup: () => new Promise<never>(() => undefined) };
      const controller = new AbortController();
      const checking = checkTarget(new URL('http://slow.example/hook'), 'public', never, controller.signal);
      controller.abort();
      expect(await checking).toEqual({ ok: false, error: 'timeout', problem: 'must name a host that resolves (timeout)', unresolved: true });
    });
  });

  describe('registration through the service, and each delivery, with an injected resolver', () => {
    let eventStore: EventStore;
    let webhooks: WebhookStore;
    let clock: VirtualClock;
    let receiver: WebhookReceiver;
    let worker: WebhookDeliveryWorker | undefined;
    let port: string;

    beforeEach(async () => {
      eventStore = await openEventStore('sqlite::memory:');
      webhooks = WebhookStore.open(':memory:');
      clock = new VirtualClock({ startMs: START_MS, autoAdvance: false });
      receiver = new WebhookReceiver();
      port = new URL(await receiver.start()).port;
      await eventStore.append(
        'account-acme',
        [{ id: newEventId(), type: 'CreditsGranted', data: { credits: 1_000, reason: 'plan', idempotencyKey: 'p1', grantedAt: new Date(START_MS).toISOString() }, metadata: { schemaVersion: 1 } }],
        { expectedRevision: 'any' },
      );
    });

    afterEach(async () => {
      await worker?.stop();
      worker = undefined;
      await receiver.close();
      webhooks.close();
      await eventStore.close();
    });

    const serviceWith = (policy: WebhookAddresses, resolver: FakeResolver) =>
      new WebhooksService(webhooks, new AggregateRepository(eventStore), eventStore, clock, { webhookAddresses: policy }, resolver);

    const startWorker = async (policy: WebhookAddresses, resolver: FakeResolver) => {
      worker = new WebhookDeliveryWorker({ eventStore, webhooks, clock, send: createHttpWebhookSender(policy, resolver) });
      await worker.start();
    };

    const cross = () =>
      eventStore.append(
        'account-acme',
        [{ id: newEventId(), type: 'CreditThresholdCrossed', data: { crossedAt: new Date(START_MS).toISOString() }, metadata: { schemaVersion: 1 } }],
        { expectedRevision: 'any' },
      );

    /** Waits until the delivery has `count` attempts recorded, then until nothing is in flight. */
    const attempts = async (webhookId: string, count: number) => {
      await new Promise<void>((resolve) => {
        const poll = (): void => ((webhooks.deliveries(webhookId, 1)[0]?.attempts.length ?? 0) >= count ? resolve() : void setImmediate(poll));
        poll();
      });
      await worker!.idle();
      return webhooks.deliveries(webhookId, 1)[0]!;
    };

    it('refuses, with a ValidationError naming url, a name that resolves to loopback, and registers nothing', async () => {
      const service = serviceWith('public', new FakeResolver({ 'localhost.localdomain': ['127.0.0.1'] }));
      const refusal = await service.register('acme', 'http://localhost.localdomain/hook', ['CreditThresholdCrossed']).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(ValidationError);
      expect(refusal).toMatchObject({ field: 'url' });
      expect(service.list('acme')).toEqual([]);
    });

    it('a rebinding name: public at registration, 127.0.0.1 at delivery, is never sent, and the refusal is a failed attempt retried as any other', async () => {
      const resolver = new FakeResolver({ 'rebind.example': ['93.184.216.34'] });
      const { webhookId } = await serviceWith('public', resolver).register('acme', `http://rebind.example:${port}/hook`, ['CreditThresholdCrossed']);
      await startWorker('public', resolver);
      resolver.answer('rebind.example', ['127.0.0.1']);

      await cross();
      const first = await attempts(webhookId, 1);
      expect(first).toMatchObject({ status: 'pending', attempts: [{ attempt: 1, error: ADDRESS_NOT_PUBLIC }] });
      expect(first.nextAttemptAt).toBe(new Date(START_MS + FIRST_RETRY_WAIT_MS).toISOString());

      await clock.advance(FIRST_RETRY_WAIT_MS);
      const second = await attempts(webhookId, 2);
      expect(second.attempts.map((attempt) => attempt.error)).toEqual([ADDRESS_NOT_PUBLIC, ADDRESS_NOT_PUBLIC]);
      // Resolved at registration and again at each attempt; no connection was ever opened.
      expect(resolver.asked).toEqual(['rebind.example', 'rebind.example', 'rebind.example']);
      expect(receiver.connections).toBe(0);
      expect(receiver.received).toHaveLength(0);
    });

    it('under the any policy the delivery connects to the address the resolver gave for a made-up name, keeping the name as Host', async () => {
      const resolver = new FakeResolver({ 'receiver.ledger.invalid': ['127.0.0.1'] });
      const { webhookId } = await serviceWith('any', resolver).register('acme', `http://receiver.ledger.invalid:${port}/hook`, ['CreditThresholdCrossed']);
      await startWorker('any', resolver);

      await cross();
      await receiver.requests(1);
      expect(await attempts(webhookId, 1)).toMatchObject({ status: 'delivered', attempts: [{ attempt: 1, statusCode: 200 }] });
      expect(receiver.received[0]!.headers.host).toBe(`receiver.ledger.invalid:${port}`);
      // Asked once, by the delivery's own check: the socket used that answer and looked nothing up.
      expect(resolver.asked).toEqual(['receiver.ledger.invalid']);
      expect(receiver.connections).toBe(1);
    });

    it('a name that no longer resolves is recorded with the lookup’s error and retried', async () => {
      const resolver = new FakeResolver({ 'gone.example': ['93.184.216.34'] });
      const { webhookId } = await serviceWith('public', resolver).register('acme', `http://gone.example:${port}/hook`, ['CreditThresholdCrossed']);
      await startWorker('public', new FakeResolver());
      await cross();
      expect(await attempts(webhookId, 1)).toMatchObject({ status: 'pending', attempts: [{ attempt: 1, error: 'ENOTFOUND' }] });
      expect(receiver.connections).toBe(0);
    });
  });

  describe('over HTTP, with the default policy', () => {
    let ledger: HttpLedger;

    beforeAll(async () => {
      ledger = await startHttpLedger({ webhookResolver: new FakeResolver({ 'localhost.localdomain': ['127.0.0.1'], '169.254.169.254.nip.io': ['169.254.169.254'] }) });
      await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 1_000, reason: 'plan', idempotencyKey: 'p1' }).expect(200);
    });

    afterAll(() => ledger.close());

    it.each([
      ['http://localhost./hook', 'not localhost'],
      ['http://[::127.0.0.1]/hook', 'public address'],
      ['http://localhost.localdomain/hook', 'public addresses only'],
      ['http://169.254.169.254.nip.io/latest/meta-data', 'public addresses only'],
      ['http://example.com/hook\r\nX-Injected: 1', 'control characters'],
      ['http://example.com/\thook', 'control characters'],
    ])('answers %j with 400 naming url, and registers nothing', async (url, message) => {
      const response = await ledger.http().post('/v1/organizations/acme/webhooks').set(bearer(TOKENS.acmeAdmin)).send({ url, events: ['InvocationSettled'] }).expect(400);
      expect(response.body.fields).toEqual({ url: [expect.stringContaining(message)] });
      const listed = await ledger.http().get('/v1/organizations/acme/webhooks').set(bearer(TOKENS.acmeAdmin)).expect(200);
      expect(listed.body).toEqual({ webhooks: [] });
    });
  });
});
