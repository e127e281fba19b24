import { ADDRESS_NOT_PUBLIC, isPublicAddress, registrationProblem } from '../../src/webhooks/webhook-address.policy';
import { createHttpWebhookSender } from '../../src/webhooks/webhook-sender';
import { bearer, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { WebhookReceiver } from './support/webhook-receiver';

const SEND_TIMEOUT_MS = 5_000;

describe('SPEC §13 webhooks go to public addresses only, unless LEDGER_WEBHOOK_ADDRESSES=any', () => {
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
  ])('refuses to register %s under the public policy, and allows it under any', (url) => {
    expect(registrationProblem(url, 'public')).toMatch(/must/);
    expect(registrationProblem(url, 'any')).toBeUndefined();
  });

  it('registers a public name or address under the public policy (what a name resolves to is checked at delivery)', () => {
    expect(registrationProblem('https://example.com/hooks/ledger', 'public')).toBeUndefined();
    expect(registrationProblem('http://8.8.8.8/hook', 'public')).toBeUndefined();
  });

  describe('the sender', () => {
    let receiver: WebhookReceiver;
    let url: string;

    beforeEach(async () => {
      receiver = new WebhookReceiver();
      url = await receiver.start();
    });

    afterEach(() => receiver.close());

    it('connects to nothing private under the public policy: an address literal, or a name that resolves to loopback', async () => {
      const send = createHttpWebhookSender('public');
      const port = new URL(url).port;
      expect(await send(`http://127.0.0.1:${port}/hook`, '{}', {}, SEND_TIMEOUT_MS)).toEqual({ error: ADDRESS_NOT_PUBLIC });
      expect(await send(`http://localhost:${port}/hook`, '{}', {}, SEND_TIMEOUT_MS)).toEqual({ error: ADDRESS_NOT_PUBLIC });
      expect(receiver.received).toHaveLength(0);
    });

    it('delivers to the same receiver under the any policy', async () => {
      const send = createHttpWebhookSender('any');
      const port = new URL(url).port;
      expect(await send(`http://localhost:${port}/hook`, '{}', {}, SEND_TIMEOUT_MS)).toMatchObject({ statusCode: expect.any(Number) });
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
