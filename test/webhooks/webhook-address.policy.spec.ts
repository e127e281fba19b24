import { ADDRESS_NOT_PUBLIC, isPublicAddress, registrationProblem } from '../../src/webhooks/webhook-address.policy';
import { createHttpWebhookSender } from '../../src/webhooks/webhook-sender';
import { bearer, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { FakeResolver } from './support/fake-resolver';
import { WebhookReceiver } from './support/webhook-receiver';

const SEND_TIMEOUT_MS = 5_000;

describe('README.md webhooks go to public addresses only, unless LEDGER_WEBHOOK_ADDRESSES=any', () => {
  it.each([
    ['8.8.8.8', true],
    ['93.184.216.34', true],
    ['2606:4700:4700::1111', true],
    ['::ffff:8.8.8.8', true],
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['255.255.255.255', false],
    ['224.0.0.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['::ffff:127.0.0.1', false],
    ['example.com', false],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://[::1]/hook',
    'http://localhost/hook',
    'http://ledger.localhost/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://0x7f.1/hook',
    'http://[::ffff:10.0.0.1]/hook',
  ])('refuses to register %s under the public policy, and allows it under any', async (url) => {
    const resolver = new FakeResolver();
    expect(await registrationProblem(url, 'public', resolver)).toMatch(/must/);
    expect(await registrationProblem(url, 'any', resolver)).toBeUndefined();
    // An address literal or a localhost name is judged without any lookup.
    expect(resolver.asked).toEqual([]);
  });

  it('registers a public name or address under the public policy (a name is checked again at each delivery)', async () => {
    const resolver = new FakeResolver({ 'example.com': ['93.184.216.34'] });
    expect(await registrationProblem('https://example.com/hooks/ledger', 'public', resolver)).toBeUndefined();
    expect(await registrationProblem('http://8.8.8.8/hook', 'public', resolver)).toBeUndefined();
    expect(resolver.asked).toEqual(['example.com']);
  });

  describe('the sender', () => {
    let receiver: WebhookReceiver;
    let url: string;

    beforeEach(async () => {
      receiver = new WebhookReceiver();
      url = await receiver.start();
    });

    afterEach(() => receiver.close());

    it('connects to nothing private under the public policy: an address literal, localhost, or a name that resolves to loopback', async () => {
      const send = createHttpWebhookSender('public', new FakeResolver({ 'loopback.example': ['127.0.0.1'] }));
      const port = new URL(url).port;
      expect(await send(`http://127.0.0.1:${port}/hook`, '{}', {}, SEND_TIMEOUT_MS)).toEqual({ error: ADDRESS_NOT_PUBLIC });
      expect(await send(`http://localhost:${port}/hook`, '{}', {}, SEND_TIMEOUT_MS)).toEqual({ error: ADDRESS_NOT_PUBLIC });
      expect(await send(`http://loopback.example:${port}/hook`, '{}', {}, SEND_TIMEOUT_MS)).toEqual({ error: ADDRESS_NOT_PUBLIC });
      expect(receiver.received).toHaveLength(0);
      expect(receiver.connections).toBe(0);
    });

    it('delivers to the same receiver under the any policy', async () => {
      const send = createHttpWebhookSender('any', new FakeResolver({ 'loopback.example': ['127.0.0.1'] }));
      const port = new URL(url).port;
      expect(await send(`http://loopback.example:${port}/hook`, '{}', {}, SEND_TIMEOUT_MS)).toEqual({ statusCode: 200 });
      expect(receiver.received).toHaveLength(1);
    });
  });

  describe('over HTTP, with the default policy', () => {
    let ledger: HttpLedger;

    beforeAll(async () => {
      ledger = await startHttpLedger({});
      await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 1_000, reason: 'plan', idempotencyKey: 'p1' }).expect(200);
    });

    afterAll(() => ledger.close());

    it('answers a private webhook URL with 400 naming url, and registers nothing', async () => {
      const response = await ledger
        .http()
        .post('/v1/organizations/acme/webhooks')
        .set(bearer(TOKENS.acmeAdmin))
        .send({ url: 'http://169.254.169.254/latest/meta-data', events: ['InvocationSettled'] })
        .expect(400);
      expect(response.body.fields).toEqual({ url: [expect.stringContaining('public address')] });
      const listed = await ledger.http().get('/v1/organizations/acme/webhooks').set(bearer(TOKENS.acmeAdmin)).expect(200);
      expect(listed.body).toEqual({ webhooks: [] });
    });
  });
});
