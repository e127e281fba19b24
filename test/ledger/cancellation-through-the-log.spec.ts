import { invocationIdFor } from '../../src/invocations/invocation-ids';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { WAITING_OPERATION, waitingScript } from './fixtures/cancel-child.fixture';
import { startChildInstance } from './fixtures/cancel-child.process';
import { scriptedFeature } from '../support/scripted-feature';
import { publication, seed, startLedgerApp } from '../support/ledger-app';
import { CancelInvocationCommand } from '../../src/invocations/cancel-invocation.command';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { UnknownInvocationError } from '../../src/invocations/invocation-errors';
import { IllegalTransitionError } from '../../src/domain/domain.errors';

const HOLD_CREDITS = 700;

type StreamEvent = { type: string; data: Record<string, unknown> };

describe('cancellation through the log (docs/http.md POST /v1/invocations/:id/cancel, docs/rules.md step 1, docs/lifecycle.md settlement)', () => {
  let ledger: HttpLedger;
  const events = async (stream: string): Promise<StreamEvent[]> =>
    (await ledger.http().get(`/v1/streams/${stream}`).set(bearer(TOKENS.auditor)).expect(200)).body.events;

  beforeAll(async () => {
    ledger = await startHttpLedger({ keepDirectory: true, features: [scriptedFeature(WAITING_OPERATION, () => waitingScript())] });
    await ledger.http().put(`/v1/operations/${WAITING_OPERATION}/publications`).set(bearer(TOKENS.system)).send(publicationBody({ creditHold: HOLD_CREDITS })).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 10_000, reason: 'plan', idempotencyKey: 'plan' }).expect(200);
  });

  afterAll(() => ledger.close());

  it('ends an invocation running on instance B cancelled when instance A is asked, settled once, its hold released', async () => {
    const key = 'cross-process-1';
    const invocationId = invocationIdFor('acme', key);
    const child = startChildInstance(ledger.directory, key);
    try {
      await child.next(/^in-attempt$/);
      const cancel = await ledger.http().post(`/v1/invocations/${invocationId}/cancel`).set(bearer(TOKENS.acmeMember));
      expect(cancel.status).toBe(202);
      expect(cancel.body).toMatchObject({ invocationId, state: 'dispatched', requestedBy: 'org_member of acme', requestedAt: expect.any(String) });

      const [, json] = await child.next(/^result (.*)$/);
      expect(JSON.parse(json!)).toMatchObject({ invocationId, state: 'settled', outcome: 'cancelled', charge: HOLD_CREDITS });
    } finally {
      child.process.kill();
    }
    const invocation = await events(`invocation-${invocationId}`);
    expect(invocation.filter((event) => event.type === 'InvocationCancellationRequested')).toHaveLength(1);
    expect(invocation.filter((event) => event.type === 'InvocationSettled')).toHaveLength(1);
    const holds = (await events('account-acme')).filter((event) => event.data.invocationId === invocationId);
    expect(holds.map((event) => event.type)).toEqual(['HoldPlaced', 'HoldSettled']);
    const balance = await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(balance.body).toMatchObject({ held: 0, running: 0, charged: HOLD_CREDITS });

    const explanation = await ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.acmeMember)).expect(200);
    expect(explanation.body.cancellation).toEqual({ requestedBy: 'org_member of acme', requestedAt: cancel_at(invocation) });
    expect(explanation.body.sentence).toMatch(/^Cancelled: org_member of acme asked at \S+ to stop it;/);
  });

  it('refuses to cancel an invocation that has ended with 409, and appends nothing', async () => {
    const invocationId = invocationIdFor('acme', 'cross-process-1');
    const before = await events(`invocation-${invocationId}`);
    const response = await ledger.http().post(`/v1/invocations/${invocationId}/cancel`).set(bearer(TOKENS.system));
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('conflict');
    expect(await events(`invocation-${invocationId}`)).toEqual(before);
  });

  it('answers 404 for an unknown invocation and for another organization’s, and 403 for an auditor', async () => {
    const invocationId = invocationIdFor('acme', 'cross-process-1');
    expect((await ledger.http().post(`/v1/invocations/${invocationId}/cancel`).set(bearer(TOKENS.globexMember))).status).toBe(404);
    expect((await ledger.http().post(`/v1/invocations/${invocationIdFor('acme', 'never')}/cancel`).set(bearer(TOKENS.system))).status).toBe(404);
    expect((await ledger.http().post(`/v1/invocations/${invocationId}/cancel`).set(bearer(TOKENS.auditor))).status).toBe(403);
  });
});

describe('CancelInvocationCommand in process (docs/embedding.md): the run of this process ends cancelled, the request recorded once', () => {
  it('ends a local run at its next boundary and keeps the first request when asked twice', async () => {
    let attemptStarted!: () => void;
    const started = new Promise<void>((resolve) => (attemptStarted = resolve));
    const ledger = await startLedgerApp({ features: [scriptedFeature(WAITING_OPERATION, () => waitingScript(() => attemptStarted()))] });
    try {
      await seed(ledger, { operationId: WAITING_OPERATION, organizationId: 'acme', publication: publication({ creditHold: HOLD_CREDITS }) });
      const running = ledger.commandBus.execute(
        new RunOperationCommand({ operationId: WAITING_OPERATION, organizationId: 'acme', input: {}, idempotencyKey: 'local-1' }),
      );
      await started;
      const invocationId = invocationIdFor('acme', 'local-1');
      const first = await ledger.commandBus.execute(new CancelInvocationCommand(invocationId, 'billing job 7'));
      const again = await ledger.commandBus.execute(new CancelInvocationCommand(invocationId, 'someone else'));
      expect(again).toEqual(first);
      expect(await running).toMatchObject({ state: 'settled', outcome: 'cancelled' });
      const recorded = (await ledger.store.readStream(`invocation-${invocationId}`)).filter((event) => event.type === 'InvocationCancellationRequested');
      expect(recorded.map((event) => event.data)).toEqual([{ requestedBy: 'billing job 7', requestedAt: first.requestedAt }]);
      await expect(ledger.commandBus.execute(new CancelInvocationCommand(invocationId, 'late'))).rejects.toBeInstanceOf(IllegalTransitionError);
      await expect(ledger.commandBus.execute(new CancelInvocationCommand(invocationId, 'x', 'globex'))).rejects.toBeInstanceOf(UnknownInvocationError);
    } finally {
      await ledger.close();
    }
  });
});

/** The requestedAt the log recorded. */
function cancel_at(events: readonly StreamEvent[]): string {
  return events.find((event) => event.type === 'InvocationCancellationRequested')!.data.requestedAt as string;
}
