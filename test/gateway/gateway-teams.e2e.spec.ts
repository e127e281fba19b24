/**
 * Teams, weekly limits and budget alerts over HTTP (docs/gateway.md "Teams", "Budget alerts"): the
 * team routes with their roles and bounds, a call refused as `team_spend_limit` in Anthropic's error
 * shape and explained, and GatewayBudgetThresholdCrossed delivered signed, once per threshold.
 */
import { verifySignature } from '../../src/webhooks/webhook-signature';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { messageReply, textBlock } from '../support/messages-api-server';
import { WebhookReceiver } from '../webhooks/support/webhook-receiver';
import { GATEWAY_MODEL, startGatewayService, type GatewayService } from './support/gateway-service';

const QUESTION = 'Quokka question only the caller knows';
/** Above one call's worst-case hold here (about 26,000 credits), below two. */
const TEAM_LIMIT = 40_000;

describe('docs/gateway.md "Teams": a spend limit shared by a team’s keys, decided with the organization’s credits and the key’s limit', () => {
  let service: GatewayService;
  let receiver: WebhookReceiver;
  let secret: string;
  const system = bearer(TOKENS.system);

  beforeAll(async () => {
    receiver = new WebhookReceiver();
    const url = await receiver.start();
    service = await startGatewayService({ env: { LEDGER_WEBHOOK_ADDRESSES: 'any' } });
    const registered = await service.ledger.http().post('/v1/organizations/acme/webhooks').set(bearer(TOKENS.acmeAdmin)).send({ url, events: ['GatewayBudgetThresholdCrossed'] }).expect(200);
    secret = (registered.body as { secret: string }).secret;
  });

  afterAll(async () => {
    await service.close();
    await receiver.close();
  });

  const http = () => service.ledger.http();
  const call = (key: string) =>
    fetch(`${service.client().baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: GATEWAY_MODEL, max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] }),
    });

  it('refuses bad team settings with 400 naming the field, and another organization’s admin gets 404', async () => {
    const fields = async (body: Record<string, unknown>) => Object.keys(((await http().post('/v1/organizations/acme/teams').set(system).send(body).expect(400)).body as { fields: object }).fields);
    expect(await fields({ name: '' })).toContain('name');
    expect(await fields({ name: 'x', spendLimit: { credits: 10, period: 'fortnight' } })).toContain('spendLimit.period');
    expect(await fields({ name: 'x', alertAt: [50] })).toEqual(['alertAt']);
    expect(await fields({ name: 'x', spendLimit: { credits: 10, period: 'week' }, alertAt: [0] })).toEqual(['alertAt.0']);
    await http().post('/v1/organizations/acme/teams').set(bearer(TOKENS.globexAdmin)).send({ name: 'x' }).expect(404);
    await http().get('/v1/organizations/acme/teams').set(bearer(TOKENS.globexAdmin)).expect(404);
    await http().patch('/v1/organizations/acme/teams/no-such-team').set(system).send({ name: 'x' }).expect(404);
  });

  it('refuses a call past the team’s limit as 402 billing_error team_spend_limit in Anthropic’s shape, records and explains it; a key naming an unknown team is 400 naming teamId', async () => {
    const created = await http().post('/v1/organizations/acme/teams').set(bearer(TOKENS.acmeAdmin)).send({ name: 'tiny', spendLimit: { credits: 1, period: 'week' } }).expect(200);
    const { teamId } = created.body as { teamId: string };
    expect(created.body).toMatchObject({ teamId, name: 'tiny', spendLimit: { credits: 1, period: 'week' }, keyIds: [], period: expect.stringMatching(/^\d{4}-W\d{2}$/), spentCredits: 0, heldCredits: 0 });
    const unknown = await http().post('/v1/organizations/acme/gateway-keys').set(system).send({ name: 'lost', teamId: 'no-such-team' }).expect(400);
    expect(Object.keys((unknown.body as { fields: object }).fields)).toEqual(['teamId']);
    const issued = await http().post('/v1/organizations/acme/gateway-keys').set(system).send({ name: 'tiny-bot', teamId }).expect(200);
    expect(issued.body).toMatchObject({ teamId });

    const refused = await call((issued.body as { key: string }).key);
    expect(refused.status).toBe(402);
    const invocationId = refused.headers.get('llm-ledger-invocation-id')!;
    const body = (await refused.json()) as { type: string; error: { type: string; message: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'billing_error', message: expect.stringMatching(/^team "tiny" spend limit: 1 credits per UTC week \(\d{4}-W\d{2}\); its keys spent 0, held 0, 1 remain < hold \d+$/) } });
    const view = await http().get(`/v1/invocations/${invocationId}`).set(system).expect(200);
    expect(view.body).toMatchObject({ state: 'refused', refusalReason: 'team_spend_limit', gateway: { keyName: 'tiny-bot', teamId } });
    const explanation = await http().get(`/v1/invocations/${invocationId}/explanation`).set(system).expect(200);
    expect(explanation.body.sentence).toMatch(/refused \(402 team_spend_limit\): the key's team "tiny" may spend 1 credits in \d{4}-W\d{2} \(UTC week\); its keys spent 0 and hold 0, so 1 remain < hold [\d,]+\.$/);

    // A team a live key names is not deleted; once the key is revoked it is.
    const conflict = await http().delete(`/v1/organizations/acme/teams/${teamId}`).set(system).expect(409);
    expect(JSON.stringify(conflict.body)).toContain((issued.body as { keyId: string }).keyId);
    await http().delete(`/v1/organizations/acme/gateway-keys/${(issued.body as { keyId: string }).keyId}`).set(system).expect(200);
    await http().delete(`/v1/organizations/acme/teams/${teamId}`).set(bearer(TOKENS.acmeAdmin)).expect(200);
    await http().delete(`/v1/organizations/acme/teams/${teamId}`).set(system).expect(404);
  });

  it('counts the team’s calls in its week, and delivers GatewayBudgetThresholdCrossed signed, once per threshold per period, for the key and the team', async () => {
    const created = await http().post('/v1/organizations/acme/teams').set(system).send({ name: 'platform', spendLimit: { credits: TEAM_LIMIT, period: 'week' }, alertAt: [2, 1] }).expect(200);
    const { teamId } = created.body as { teamId: string };
    const issued = await http().post('/v1/organizations/acme/gateway-keys').set(system).send({ name: 'platform-bot', teamId, spendLimit: { credits: TEAM_LIMIT, period: 'week' }, alertAt: [1] }).expect(200);
    const { key, keyId } = issued.body as { key: string; keyId: string };
    // 100 × 3 + 10 × 15 = 450 credits a call: the first reaches 1 % (400) of both limits, the second 2 % (800) of the team's.
    for (let index = 0; index < 2; index += 1) {
      service.upstream.reply(messageReply({ content: [textBlock('ok')], usage: { input_tokens: 100, output_tokens: 10 } }));
      const answered = await call(key);
      expect(answered.status).toBe(200);
      await answered.arrayBuffer();
    }
    const listed = await http().get('/v1/organizations/acme/teams').set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect((listed.body as { teams: unknown[] }).teams).toEqual([expect.objectContaining({ teamId, alertAt: [1, 2], keyIds: [keyId], spentCredits: 900, heldCredits: 0 })]);

    await receiver.requests(3);
    const deliveries = receiver.received.map((delivery) => delivery.body as unknown as { type: string; organizationId: string; data: { budget: Record<string, string>; percent: number; spentCredits: number; limitCredits: number; period: string } });
    expect(deliveries.map(({ data }) => [data.budget.kind, data.percent, data.spentCredits])).toEqual([
      ['key', 1, 450],
      ['team', 1, 450],
      ['team', 2, 900],
    ]);
    expect(deliveries[2]).toMatchObject({ type: 'GatewayBudgetThresholdCrossed', organizationId: 'acme', data: { budget: { kind: 'team', teamId, name: 'platform' }, limitCredits: TEAM_LIMIT, period: 'week' } });
    for (const delivery of receiver.received) {
      expect(verifySignature(secret, delivery.headers['ledger-signature'] as string, delivery.rawBody)).toBe(true);
      expect(delivery.rawBody).not.toContain('Quokka');
    }
  });
});
