import { scriptedToolUse } from '../../src/runtime';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { scriptedFeature, usage } from '../support/scripted-feature';

// Each invocation charges 300 + 150 = 450 credits (100 input and 10 output tokens at 3 and 15 credits each),
// exactly its hold.
const feature = scriptedFeature('alerts.answer', () => [
  scriptedToolUse([{ id: 'a1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(100, 10) }),
]);
const ALERTS = '/v1/organizations/acme/alerts';

describe('README.md PUT /v1/organizations/:organizationId/alerts, and the crossings it leads to', () => {
  let ledger: HttpLedger;

  const invoke = () =>
    ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ operationId: 'alerts.answer', organizationId: 'acme', input: { question: 'q' } })
      .expect(200);
  const grant = (credits: number, key: string) =>
    ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits, reason: 'plan', idempotencyKey: key }).expect(200);
  const crossings = async () => {
    const response = await ledger.http().get('/v1/streams/account-acme').set(bearer(TOKENS.auditor)).expect(200);
    return (response.body.events as { type: string; data: Record<string, unknown> }[]).filter((event) => event.type === 'CreditThresholdCrossed');
  };

  beforeAll(async () => {
    ledger = await startHttpLedger({ features: [feature] });
    await ledger.http().put('/v1/operations/alerts.answer/publications').set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 450 })).expect(200);
    await grant(1_500, 'plan-1');
  });

  afterAll(() => ledger.close());

  it('lets the system role and that organization’s admin set the thresholds, and answers with them', async () => {
    const body = { thresholds: [{ kind: 'available_below', credits: 700 }, { kind: 'used_share_above', percent: 80 }] };
    await ledger.http().put(ALERTS).set(bearer(TOKENS.system)).send(body).expect(200, { organizationId: 'acme', thresholds: body.thresholds });
    await ledger.http().put(ALERTS).set(bearer(TOKENS.acmeAdmin)).send(body).expect(200, { organizationId: 'acme', thresholds: body.thresholds });
  });

  it('refuses members and auditors (403), another organization’s admin and unknown organizations (404)', async () => {
    const body = { thresholds: [] };
    await ledger.http().put(ALERTS).set(bearer(TOKENS.acmeMember)).send(body).expect(403);
    await ledger.http().put(ALERTS).set(bearer(TOKENS.auditor)).send(body).expect(403);
    await ledger.http().put(ALERTS).set(bearer(TOKENS.globexAdmin)).send(body).expect(404);
    await ledger.http().put('/v1/organizations/nobody/alerts').set(bearer(TOKENS.system)).send(body).expect(404);
  });

  it.each([
    [{ thresholds: [{ kind: 'available_below', credits: -5 }] }, 'thresholds.0.credits'],
    [{ thresholds: [{ kind: 'used_share_above', percent: 0.5 }] }, 'thresholds.0.percent'],
    [{ thresholds: [{ kind: 'used_share_above' }] }, 'thresholds.0.percent'],
    [{ thresholds: [{ kind: 'spent_above', credits: 5 }] }, 'thresholds.0.kind'],
    [{ thresholds: [{ kind: 'used_share_above', percent: 80, credits: 5 }] }, 'thresholds.0.credits'],
    [{ thresholds: 'all' }, 'thresholds'],
    [{}, 'thresholds'],
  ])('answers %j with 400 naming %s', async (body, field) => {
    const response = await ledger.http().put(ALERTS).set(bearer(TOKENS.system)).send(body).expect(400);
    expect(Object.keys(response.body.fields ?? {})).toContain(field);
  });

  it('appends CreditThresholdCrossed once when a settlement takes available below, not again while it stays below, and again after a grant un-crossed it', async () => {
    await ledger
      .http()
      .put(ALERTS)
      .set(bearer(TOKENS.system))
      .send({ thresholds: [{ kind: 'available_below', credits: 700 }, { kind: 'used_share_above', percent: 80 }] })
      .expect(200);
    expect(await crossings()).toEqual([]);
    await invoke(); // available 1,050
    expect(await crossings()).toEqual([]);
    await invoke(); // available 600: below 700
    const first = await crossings();
    expect(first).toHaveLength(1);
    expect(first[0]!.data).toMatchObject({ threshold: { kind: 'available_below', credits: 700 }, available: 600, charged: 900, cause: { kind: 'settlement' } });
    await invoke(); // available 150: still below, and 1,350 of 1,500 used is above 80 %
    const second = await crossings();
    expect(second.map((event) => event.data.threshold)).toEqual([
      { kind: 'available_below', credits: 700 },
      { kind: 'used_share_above', percent: 80 },
    ]);
    await grant(1_000, 'plan-2'); // available 1,150, 1,350 of 2,500 used: both un-crossed
    await invoke(); // available 700: not below; 1,800 of 2,500 used: not above 80 %
    expect(await crossings()).toHaveLength(2);
    await invoke(); // available 250 and 2,250 of 2,500 used: both crossed again
    const third = await crossings();
    expect(third.slice(2).map((event) => event.data)).toEqual([
      expect.objectContaining({ threshold: { kind: 'available_below', credits: 700 }, available: 250, usedPercent: 90 }),
      expect.objectContaining({ threshold: { kind: 'used_share_above', percent: 80 }, charged: 2_250, grantedCredits: 2_500 }),
    ]);
  });
});
