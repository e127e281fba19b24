/**
 * Money beside credits (issue 33; docs/http.md "Money beside credits"): with LEDGER_CREDIT_VALUE set,
 * the balance, the keys' and teams' spend and the usage statement carry a `money` member, each figure
 * the exact decimal string of its credits × the value; without it, no answer has one.
 */
import { bearer, TOKENS } from '../http/support/http-ledger';
import { messageReply } from '../support/messages-api-server';
import { GATEWAY_MODEL, GRANTED_CREDITS, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

/** 1,000 × 3,000,000 + 10 × 15,000,000 millionths: the call's charge, in credits. */
const CHARGE = 3_150;
const DAY_MS = 86_400_000;

describe.each([
  ['0.0001 USD', { currency: 'USD', charge: '0.315', granted: '10000', available: '9999.685' }],
  [undefined, undefined],
])('LEDGER_CREDIT_VALUE=%s: money beside credits in the balance, the keys, the teams and the statement (issue 33)', (creditValue, money) => {
  let service: GatewayService;

  beforeAll(async () => {
    service = await startGatewayService(creditValue === undefined ? {} : { env: { LEDGER_CREDIT_VALUE: creditValue } });
    service.upstream.reply(messageReply({ model: GATEWAY_MODEL, usage: { input_tokens: 1_000, output_tokens: 10 } }));
    const { response } = await service.client().messages.create({ model: GATEWAY_MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }).withResponse();
    await settledView(service.ledger, response.headers.get('llm-ledger-invocation-id')!);
    await service.ledger.http().post('/v1/organizations/acme/teams').set(bearer(TOKENS.system)).send({ name: 'payments' }).expect(200);
  });
  afterAll(() => service.close());

  it('shows each figure in money, exactly, or no money member at all without a credit value', async () => {
    const get = async (path: string) => (await service.ledger.http().get(path).set(bearer(TOKENS.acmeAdmin)).expect(200)).body;
    const balance = await get('/v1/organizations/acme/balance');
    const keys = (await get('/v1/organizations/acme/gateway-keys')).keys;
    const teams = (await get('/v1/organizations/acme/teams')).teams;
    const day = (offset: number) => new Date(Date.now() + offset).toISOString().slice(0, 10);
    const statement = await get(`/v1/organizations/acme/usage?from=${day(-DAY_MS)}&to=${day(DAY_MS)}&groupBy=key`);
    expect(balance).toMatchObject({ granted: GRANTED_CREDITS, charged: CHARGE, available: GRANTED_CREDITS - CHARGE });
    if (money === undefined) {
      for (const answer of [balance, keys[0], teams[0], statement.rows[0], statement.totals]) expect(answer).not.toHaveProperty('money');
      return;
    }
    expect(balance.money).toEqual({ currency: money.currency, granted: money.granted, adjustments: '0', held: '0', charged: money.charge, available: money.available });
    expect(keys[0].money).toEqual({ currency: money.currency, spentCredits: money.charge, heldCredits: '0' });
    expect(teams[0].money).toEqual({ currency: money.currency, spentCredits: '0', heldCredits: '0' });
    expect(statement.rows[0].money).toEqual({ currency: money.currency, credits: money.charge });
    expect(statement.totals.money).toEqual({ currency: money.currency, credits: money.charge });
  });
});
