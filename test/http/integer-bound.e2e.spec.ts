import { randomUUID } from 'node:crypto';
import { MAX_ACCOUNT_TOTAL_CREDITS, MAX_HOLD_OVERRUN_CREDITS } from '../../src/accounts/account.bounds';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { scriptedToolUse } from '../../src/runtime';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const BOUND = MAX_ACCOUNT_TOTAL_CREDITS; // 9,007,199,254,740,991
const OPERATION = 'test.bound';
const FEATURE = scriptedFeature(OPERATION, function* () {
  yield scriptedToolUse([{ id: 'answer-1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(10, 2) });
});
const AT = new Date(0).toISOString();

describe('finding 1 of issue 24: an account at the exact-integer bound still runs invocations and can be brought down (docs/http.md, STATE-PFM-LLM-001 transition 2)', () => {
  let ledger: HttpLedger;
  const system = bearer(TOKENS.system);

  /** Records events as if the commands they stand for had run (9,007 maximal grants are one event of their total). */
  const record = async (organizationId: string, events: { type: string; data: Record<string, unknown> }[]) => {
    const store = ledger.app.get<EventStore>(EVENT_STORE);
    await store.append(
      `account-${organizationId}`,
      events.map((event) => ({ id: randomUUID(), ...event, metadata: { schemaVersion: 1 } })),
      { expectedRevision: 'no_stream' },
    );
  };
  const invoke = async (organizationId: string) =>
    (await ledger.http().post('/v1/invocations').set(system).send({ operationId: OPERATION, organizationId, input: { question: 'q' } })) as {
      status: number;
      body: { invocationId: string; state: string; outcome?: string; refusalReason?: string; charge: number };
    };
  const balance = async (organizationId: string) => (await ledger.http().get(`/v1/organizations/${organizationId}/balance`).set(system).expect(200)).body;
  const streamTypes = async (invocationId: string) =>
    ((await ledger.http().get(`/v1/streams/invocation-${invocationId}`).set(bearer(TOKENS.auditor)).expect(200)).body.events as { type: string }[]).map((e) => e.type);

  beforeAll(async () => {
    ledger = await startHttpLedger({ features: [FEATURE] });
    await ledger.http().put(`/v1/operations/${OPERATION}/publications`).set(system).send(publicationBody({ creditHold: 5_000 })).expect(200);
    await record('bound', [{ type: 'CreditsGranted', data: { credits: BOUND, reason: 'r', idempotencyKey: 'all', grantedAt: AT } }]);
  });

  afterAll(() => ledger.close());

  it('runs an invocation on an account granted 9,007,199,254,740,991 credits: settled, never a 400 naming credits', async () => {
    const { status, body } = await invoke('bound');
    expect(status).toBe(200);
    expect(body).toMatchObject({ state: 'settled', outcome: 'completed' });
    expect(await streamTypes(body.invocationId)).toEqual(['InvocationEstimated', 'InvocationReserved', 'InvocationDispatched', 'AttemptRecorded', 'InvocationCompleted', 'InvocationSettled']);
    expect(await balance('bound')).toMatchObject({ granted: BOUND, held: 0, charged: body.charge, available: BOUND - body.charge, running: 0 });
  });

  it('still refuses one more credit by grant or by adjustment, naming credits', async () => {
    for (const path of ['grants', 'adjustments']) {
      const response = await ledger.http().post(`/v1/organizations/bound/${path}`).set(system).send({ credits: 1, reason: 'one more', idempotencyKey: `more-${path}` });
      expect(response.status).toBe(400);
      expect(response.body.fields.credits).toEqual([`would take the account's totals past ${BOUND} credits, the exact-integer range`]);
    }
  });

  it('accepts the negative adjustment that brings the account back down', async () => {
    const before = await balance('bound');
    await ledger.http().post('/v1/organizations/bound/adjustments').set(system).send({ credits: -1_000_000_000_000, reason: 'correction', idempotencyKey: 'down' }).expect(200);
    expect(await balance('bound')).toMatchObject({ adjustments: -1_000_000_000_000, available: before.available - 1_000_000_000_000 });
    // And the credits taken back can be adjusted in again (granted itself stays at the bound).
    await ledger.http().post('/v1/organizations/bound/adjustments').set(system).send({ credits: 1_000_000_000_000, reason: 'undo', idempotencyKey: 'up' }).expect(200);
    expect(await balance('bound')).toMatchObject({ adjustments: 0, available: before.available });
  });

  it('refuses a hold that cannot fit beside what was charged with ledger_totals_bound, recorded as transition 2 and explained, nothing left half-written', async () => {
    // All but 4,000 credits of room already charged (the pair stands for the invocations that charged it).
    const charged = BOUND - MAX_HOLD_OVERRUN_CREDITS - 4_000;
    await record('spent', [
      { type: 'CreditsGranted', data: { credits: BOUND, reason: 'r', idempotencyKey: 'all', grantedAt: AT } },
      { type: 'HoldPlaced', data: { invocationId: 'earlier', credits: charged, placedAt: AT } },
      { type: 'HoldSettled', data: { invocationId: 'earlier', heldCredits: charged, chargedCredits: charged, settledAt: AT } },
    ]);
    const { status, body } = await invoke('spent');
    expect(status).toBe(200);
    expect(body).toMatchObject({ state: 'refused', refusalReason: 'ledger_totals_bound', charge: 0 });
    expect(await streamTypes(body.invocationId)).toEqual(['InvocationEstimated', 'InvocationRefused']);
    const explained = (await ledger.http().get(`/v1/invocations/${body.invocationId}/explanation`).set(system).expect(200)).body;
    expect(explained.refusal).toEqual({
      reason: 'ledger_totals_bound',
      transition: 2,
      figures: { committedCredits: charged, creditHold: 5_000, overrunRoomCredits: MAX_HOLD_OVERRUN_CREDITS, maxTotalCredits: BOUND },
    });
    expect(explained.sentence).toBe(
      `Refused: ledger_totals_bound — committed ${charged} + hold 5000 + settlement room ${MAX_HOLD_OVERRUN_CREDITS} > ${BOUND}, the exact-integer bound of the account's totals.`,
    );
    expect(await balance('spent')).toMatchObject({ held: 0, running: 0, charged });
  });
});
