/**
 * docs/http.md "a concurrent repeat waits for the first", across processes: the key's first request runs
 * on instance B (a real child process, test/ledger/fixtures/cancel-child.fixture.ts) and the repeat
 * arrives at instance A on the same SQLite log. A waits for B's settlement, observing the log, and
 * answers with its result; it never runs the request a second time nor answers with a state the
 * first has not finished. Past MAX_KEYED_REPEAT_WAIT_MS (A's injected clock) it says the first still
 * runs (409), writing nothing. The last test does the same with two instances on EventStoreDB,
 * whose subscriptions push (the real client against a local server that speaks its protocol).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CancelInvocationCommand } from '../../src/invocations/cancel-invocation.command';
import { InvocationEndings, MAX_KEYED_REPEAT_WAIT_MS } from '../../src/invocations/invocation-endings';
import { KeyedRequestInProgressError } from '../../src/invocations/invocation-errors';
import { invocationIdFor } from '../../src/invocations/invocation-ids';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { VirtualClock } from '../../src/runtime';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { EventStoreDbWireServer } from '../support/eventstoredb-wire-server';
import { publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature } from '../support/scripted-feature';
import { WAITING_OPERATION, waitingScript } from './fixtures/cancel-child.fixture';
import { startChildInstance } from './fixtures/cancel-child.process';

const HOLD_CREDITS = 700;
/** The input instance B's invocation was made with: a repeat must carry the same. */
const CHILD_INPUT = { question: 'wait' };

/** Until this instance waits for one invocation to end (polled, never a fixed sleep). */
async function untilWaiting(endings: InvocationEndings): Promise<void> {
  while (endings.waiting === 0) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Publishes the waiting operation and funds acme, over HTTP, so the child's keyed run can start. */
async function publishAndFund(ledger: HttpLedger): Promise<void> {
  await ledger.http().put(`/v1/operations/${WAITING_OPERATION}/publications`).set(bearer(TOKENS.system)).send(publicationBody({ creditHold: HOLD_CREDITS })).expect(200);
  await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 10_000, reason: 'plan', idempotencyKey: 'plan' }).expect(200);
}

describe('docs/http.md idempotency: a keyed repeat at another instance waits for the first request’s settlement', () => {
  it('answers a repeat sent to instance A while the first runs on instance B with the first’s settled result, run once', async () => {
    const ledger = await startHttpLedger({ features: [scriptedFeature(WAITING_OPERATION, () => waitingScript())] });
    const key = 'repeat-across-1';
    const invocationId = invocationIdFor('acme', key);
    const child = startChildInstance(ledger.directory, key);
    try {
      await publishAndFund(ledger);
      await child.next(/^in-attempt$/);

      let answered = false;
      const repeat = ledger
        .http()
        .post('/v1/invocations')
        .set(bearer(TOKENS.acmeMember))
        .send({ operationId: WAITING_OPERATION, organizationId: 'acme', input: CHILD_INPUT, idempotencyKey: key })
        .then((response) => {
          answered = true;
          return response;
        });
      await untilWaiting(ledger.app.get(InvocationEndings));
      // Waiting, not answered: the first is still dispatched on B.
      expect(answered).toBe(false);

      // End the first (through the log, from A); B settles it, and A's repeat answers with that.
      await ledger.http().post(`/v1/invocations/${invocationId}/cancel`).set(bearer(TOKENS.acmeMember)).expect(202);
      const [, json] = await child.next(/^result (.*)$/);
      const first = JSON.parse(json!) as Record<string, unknown>;
      const response = await repeat;
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ invocationId, state: 'settled', outcome: 'cancelled', charge: HOLD_CREDITS });
      expect(response.body).toMatchObject({ estimate: first.estimate, charge: first.charge, turnsUsed: first.turnsUsed, outcome: first.outcome });
    } finally {
      child.process.kill();
    }
    const stream = (await ledger.http().get(`/v1/streams/invocation-${invocationId}`).set(bearer(TOKENS.auditor)).expect(200)).body.events as Array<{ type: string }>;
    expect(stream.filter((event) => event.type === 'InvocationEstimated')).toHaveLength(1);
    expect(stream.filter((event) => event.type === 'InvocationSettled')).toHaveLength(1);
    const account = (await ledger.http().get('/v1/streams/account-acme').set(bearer(TOKENS.auditor)).expect(200)).body.events as Array<{ type: string; data: { invocationId?: string } }>;
    expect(account.filter((event) => event.data.invocationId === invocationId).map((event) => event.type)).toEqual(['HoldPlaced', 'HoldSettled']);
    expect(ledger.app.get(InvocationEndings).waiting).toBe(0);
    await ledger.close();
  });

  it('says the first still runs (409 keyed_request_in_progress naming idempotencyKey) once the wait bound passes, writing nothing', async () => {
    const clock = new VirtualClock({ startMs: Date.now(), autoAdvance: false });
    // Recovery off on A: its clock is moved a minute ahead of B's, past B's lease, and recovery would
    // count B as stopped (leases assume the instances' clocks agree within a lease's duration).
    const ledger = await startLedgerApp({ clock, features: [scriptedFeature(WAITING_OPERATION, () => waitingScript())], env: { LEDGER_RECOVERY_INTERVAL_MS: '0' } });
    const key = 'repeat-across-2';
    const invocationId = invocationIdFor('acme', key);
    const child = startChildInstance(ledger.directory, key);
    try {
      await seed(ledger, { operationId: WAITING_OPERATION, organizationId: 'acme', publication: publication({ creditHold: HOLD_CREDITS }) });
      await child.next(/^in-attempt$/);
      const before = await ledger.store.readStream(`invocation-${invocationId}`);

      const repeat = ledger.commandBus.execute(new RunOperationCommand({ operationId: WAITING_OPERATION, organizationId: 'acme', input: CHILD_INPUT, idempotencyKey: key }));
      const refused = expect(repeat).rejects.toBeInstanceOf(KeyedRequestInProgressError);
      await untilWaiting(ledger.app.get(InvocationEndings));
      await clock.advance(MAX_KEYED_REPEAT_WAIT_MS - 1);
      expect(ledger.app.get(InvocationEndings).waiting).toBe(1);
      await clock.advance(1);
      await refused;
      await expect(repeat).rejects.toMatchObject({ code: 'keyed_request_in_progress', issues: [{ field: 'idempotencyKey', message: 'its first request is still running' }] });
      expect(await ledger.store.readStream(`invocation-${invocationId}`)).toEqual(before);

      // Once the first has ended, a repeat answers at once with its result.
      await ledger.commandBus.execute(new CancelInvocationCommand(invocationId, 'test'));
      await child.next(/^result /);
      const later = await ledger.commandBus.execute(new RunOperationCommand({ operationId: WAITING_OPERATION, organizationId: 'acme', input: CHILD_INPUT, idempotencyKey: key }));
      expect(later).toMatchObject({ invocationId, state: 'settled', outcome: 'cancelled' });
    } finally {
      child.process.kill();
      await ledger.close();
    }
  });

  it('refuses at once, without waiting, a repeat at another instance with another input (422 idempotency_key_reused)', async () => {
    const ledger = await startHttpLedger({ features: [scriptedFeature(WAITING_OPERATION, () => waitingScript())] });
    const key = 'repeat-across-3';
    const invocationId = invocationIdFor('acme', key);
    const child = startChildInstance(ledger.directory, key);
    try {
      await publishAndFund(ledger);
      await child.next(/^in-attempt$/);
      const other = await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send({ operationId: WAITING_OPERATION, organizationId: 'acme', input: { question: 'another' }, idempotencyKey: key });
      expect(other.status).toBe(422);
      expect(other.body).toMatchObject({ code: 'idempotency_key_reused', fields: { idempotencyKey: ['was used for another request'] } });
      await ledger.http().post(`/v1/invocations/${invocationId}/cancel`).set(bearer(TOKENS.acmeMember)).expect(202);
      await child.next(/^result /);
    } finally {
      child.process.kill();
      await ledger.close();
    }
  });
});

describe('docs/http.md idempotency on EventStoreDB: two instances on one log (the real client against a local server speaking its protocol)', () => {
  it('makes a repeat at instance A wait for the run on instance B, which a cancellation sent to A ends, settled once', async () => {
    const server = await EventStoreDbWireServer.start({ batchAppend: true });
    const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-esdb-repeat-'));
    const env = (instance: string): Record<string, string> => ({
      LEDGER_STORE: server.connectionString,
      LEDGER_READ_STORE: join(directory, `${instance}.read.sqlite`),
      LEDGER_ANSWER_STORE: join(directory, `${instance}.answers.sqlite`),
      // Every instance on one EventStoreDB log shares the fingerprint secret.
      LEDGER_IDEMPOTENCY_SECRET: 'a-secret-both-instances-share-0123456789',
    });
    let attemptStarted!: () => void;
    const started = new Promise<void>((resolve) => (attemptStarted = resolve));
    const a = await startLedgerApp({ env: env('a'), directory, keepDirectory: true, features: [scriptedFeature(WAITING_OPERATION, () => waitingScript())] });
    const b = await startLedgerApp({ env: env('b'), directory, keepDirectory: true, features: [scriptedFeature(WAITING_OPERATION, () => waitingScript(() => attemptStarted()))] });
    try {
      await seed(a, { operationId: WAITING_OPERATION, organizationId: 'acme', publication: publication({ creditHold: HOLD_CREDITS }) });
      const key = 'repeat-esdb-1';
      const invocationId = invocationIdFor('acme', key);
      const request = { operationId: WAITING_OPERATION, organizationId: 'acme', input: CHILD_INPUT, idempotencyKey: key };
      const first = b.commandBus.execute(new RunOperationCommand(request));
      await started;
      const repeat = a.commandBus.execute(new RunOperationCommand(request));
      await untilWaiting(a.app.get(InvocationEndings));
      await a.commandBus.execute(new CancelInvocationCommand(invocationId, 'test on instance A'));
      const [firstResult, repeatResult] = await Promise.all([first, repeat]);
      expect(firstResult).toMatchObject({ invocationId, state: 'settled', outcome: 'cancelled', charge: HOLD_CREDITS });
      expect(repeatResult).toMatchObject({ invocationId, state: 'settled', outcome: 'cancelled', charge: firstResult.charge, estimate: firstResult.estimate });
      const stream = await a.store.readStream(`invocation-${invocationId}`);
      expect(stream.filter((event) => event.type === 'InvocationEstimated')).toHaveLength(1);
      expect(stream.filter((event) => event.type === 'InvocationSettled')).toHaveLength(1);
    } finally {
      await b.close();
      await a.close();
      await server.stop();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
