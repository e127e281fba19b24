import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../src/cli/run-cli';
import { MemoryIo } from '../cli/support/memory-io';
import { EventStoreDbWireServer } from '../support/eventstoredb-wire-server';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

// Each step makes hundreds of gRPC round trips to the local wire server.
jest.setTimeout(120_000);

/**
 * The whole service with LEDGER_STORE=esdb://127.0.0.1:<port>?tls=false: the real application and
 * the real @eventstore/db-client against the wire-level test double in test/support (it speaks the
 * client's gRPC protocol as KurrentDB does; it is not a KurrentDB). Faults are injected there. The
 * steps share one service and run in order, each on the state the previous one left.
 */
describe('the service on EventStoreDB/KurrentDB over HTTP (wire test server)', () => {
  let server: EventStoreDbWireServer;
  let ledger: HttpLedger;
  let directory: string;
  let env: Record<string, string>;
  let granted = 0;
  let charged = 0;
  const settledIds: string[] = [];

  const invoke = async (question: string): Promise<{ invocationId: string; charge: number }> => {
    const response = await ledger
      .http()
      .post('/v1/invocations')
      .set(bearer(TOKENS.acmeMember))
      .send({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ state: 'settled', outcome: 'completed' });
    const body = response.body as { invocationId: string; charge: number };
    charged += body.charge;
    settledIds.push(body.invocationId);
    return body;
  };

  const expectBalanceExact = async (): Promise<void> => {
    const balance = await ledger.http().get('/v1/organizations/acme/balance').set(bearer(TOKENS.acmeAdmin)).expect(200);
    expect(balance.body).toEqual({ organizationId: 'acme', granted, adjustments: 0, held: 0, charged, available: granted - charged, running: 0 });
  };

  /** Each settled invocation's stream holds exactly one settlement. */
  const expectEachSettledOnce = (): void => {
    for (const invocationId of settledIds) {
      const settlements = server.storedEvents(`invocation-${invocationId}`).filter((event) => event.type === 'InvocationSettled');
      expect({ invocationId, settlements: settlements.length }).toEqual({ invocationId, settlements: 1 });
    }
  };

  beforeAll(async () => {
    server = await EventStoreDbWireServer.start({ batchAppend: true });
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-esdb-'));
    env = { LEDGER_STORE: server.connectionString, LEDGER_READ_STORE: join(directory, 'read-models.sqlite'), LEDGER_ANSWER_STORE: join(directory, 'answers.sqlite') };
    ledger = await startHttpLedger({ env, directory, keepDirectory: true });
  });

  afterAll(async () => {
    await ledger?.close();
    await server?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('publishes, grants, invokes, explains and answers balances from the log on the server', async () => {
    await ledger.http().put('/v1/operations/demo.arithmetic/publications').set(bearer(TOKENS.system)).send(publicationBody({ creditHold: 2_000 })).expect(200);
    await ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 50_000, reason: 'plan', idempotencyKey: 'plan-1' }).expect(200);
    granted = 50_000;

    const { invocationId, charge } = await invoke('What is (6+1)*6?');

    const explanation = await ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.acmeMember)).expect(200);
    expect(explanation.body).toMatchObject({ state: 'settled', outcome: 'completed', credits: { charge } });
    await expectBalanceExact();
    expect(server.appendRequests.batchAppend).toBeGreaterThan(0);
    const ready = await ledger.http().get('/health/ready').expect(200);
    expect(ready.body.details.projections.status).toBe('up');
  });

  it('keeps projecting every event exactly once after the connection drops mid-subscription', async () => {
    const opened = server.subscriptionsOpened;
    server.dropSubscriptions();

    await invoke('What is 2+2?');
    await invoke('What is 3*3?');

    // The balance read waits for the projections to reach the log's head, which they can only do on a
    // new subscription: the adapter resubscribes after its own delay, so count the subscriptions after it.
    await expectBalanceExact();
    expect(server.subscriptionsOpened).toBeGreaterThan(opened);
  });

  it('carries on across a server restart (the log kept, connections and the id cache lost)', async () => {
    await server.restart();

    await invoke('What is 10-4?');

    await expectBalanceExact();
  });

  it('settles an invocation exactly once when the reply to one of its appends is lost after the commit', async () => {
    server.injectAppendFault('commit-then-drop', 'invocation-');

    await invoke('What is 7*8?');

    expect(server.pendingAppendFaults()).toBe(0);
    await expectBalanceExact();
    expectEachSettledOnce();
  });

  it('passes audit verify on the stopped service: read models equal a replay, every balance exact', async () => {
    await ledger.close();
    const io = new MemoryIo();

    const exitCode = await runCli(['audit', 'verify'], { io, env });

    expect({ exitCode, out: io.stdoutText }).toMatchObject({ exitCode: 0 });
    ledger = await startHttpLedger({ env, directory, keepDirectory: true });
    await expectBalanceExact();
  });

  it('reports a permanent subscription error on /health/ready instead of retrying it in silence', async () => {
    server.failSubscriptions('access-denied');
    const opened = server.subscriptionsOpened;
    const dropped = server.dropSubscriptions();

    // Each drop is retried once (transient); the access denied that answers it is not.
    let ready;
    for (;;) {
      ready = await ledger.http().get('/health/ready');
      if (ready.status === 503) break;
      await new Promise((resolve) => setImmediate(resolve));
    }

    expect(ready.body.details.projections).toMatchObject({ status: 'down', state: 'failed', error: expect.stringContaining('Access Denied') });
    expect(dropped).toBeGreaterThan(0);
    // The runner's subscription tried again once, and no subscription more than once.
    expect(server.subscriptionsOpened).toBeGreaterThan(opened);
    expect(server.subscriptionsOpened).toBeLessThanOrEqual(opened + dropped);
  });
});
