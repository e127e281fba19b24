/**
 * At least once across a crash (README.md): the real service, as a child process from the TypeScript
 * sources, is killed with SIGKILL while its first delivery is on the wire (the receiver holds the
 * request open), so the answer is never recorded. After a restart on the same files the delivery is
 * sent again with the same delivery id, and every delivery arrives.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { WebhookReceiver } from './support/webhook-receiver';

const ROOT = join(__dirname, '..', '..');
const HOOK = join(ROOT, 'tools', 'ts-require-hook.js');
const MAIN = join(ROOT, 'src', 'main.ts');
const SYSTEM = 'crash-system-token';
const MEMBER = 'crash-member-token';
const TOKENS = JSON.stringify({ [SYSTEM]: { role: 'system' }, [MEMBER]: { role: 'org_member', organizationId: 'acme' } });
/** Starting the service from its sources compiles them on load: allow for a loaded machine. */
const START_TIMEOUT_MS = 45_000;
/** Reads of the deliveries list, 100 ms apart, before the test gives up on them being recorded. */
const MAX_DELIVERY_READS = 100;

interface Service {
  readonly child: ChildProcess;
  readonly base: string;
}

function startService(directory: string): Promise<Service> {
  const env: NodeJS.ProcessEnv = { ...process.env, LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}`, PORT: '0', HOST: '127.0.0.1', LEDGER_TOKENS: TOKENS, LEDGER_WEBHOOK_ADDRESSES: 'any' };
  for (const name of ['ANTHROPIC_API_KEY', 'LEDGER_DEMO', 'METRICS_PORT', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_TRACES_EXPORTER']) delete env[name];
  const child = spawn(process.execPath, ['-r', HOOK, MAIN], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`the service did not start:\n${output}`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const port = /listening on \S+ port (\d+)/.exec(output)?.[1];
      if (port === undefined) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stdout!.resume();
      resolve({ child, base: `http://127.0.0.1:${port}` });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code}):\n${output}`));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

describe('README.md webhook deliveries are at least once: SIGKILL between the send and its record re-sends after restart', () => {
  jest.setTimeout(150_000);
  let directory: string;
  let receiver: WebhookReceiver;
  const running: ChildProcess[] = [];

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-webhook-crash-'));
  });

  afterAll(async () => {
    for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(running.map(exited));
    await receiver?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('sends the held delivery again with the same delivery id, and loses none', async () => {
    receiver = new WebhookReceiver((count) => (count === 1 ? 'hold' : 200));
    const url = await receiver.start();

    const first = await startService(directory);
    running.push(first.child);
    const api = () => request(first.base);
    const system = { Authorization: `Bearer ${SYSTEM}` };
    await api()
      .put('/v1/operations/demo.arithmetic/publications')
      .set(system)
      .send({
        routing: { provider: 'scripted', model: 'demo-scripted' },
        limits: { maxTurns: 6, maxToolCalls: 6, totalTimeMs: 60_000, attemptTimeoutMs: 10_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 3 },
        prices: { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheReadPerMTok: 300_000 },
        creditHold: 5_000,
        enabled: true,
      })
      .expect(200);
    await api().post('/v1/organizations/acme/grants').set(system).send({ credits: 100_000, reason: 'plan', idempotencyKey: 'plan-1' }).expect(200);
    // Any charge at all leaves available below 100,001: the settlement crosses it.
    await api().put('/v1/organizations/acme/alerts').set(system).send({ thresholds: [{ kind: 'available_below', credits: 100_001 }] }).expect(200);
    const { webhookId } = (
      await api().post('/v1/organizations/acme/webhooks').set(system).send({ url, events: ['CreditThresholdCrossed', 'InvocationSettled'] }).expect(200)
    ).body as { webhookId: string };
    await api()
      .post('/v1/invocations')
      .set({ Authorization: `Bearer ${MEMBER}` })
      .send({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'What is 6*7?' } })
      .expect(200);

    // The first delivery is on the wire and unanswered: kill the service before it can record anything.
    await receiver.requests(1);
    first.child.kill('SIGKILL');
    await exited(first.child);
    const held = receiver.received[0]!.body.deliveryId;

    const second = await startService(directory);
    running.push(second.child);
    // The held one again, and the other one if its answer was not recorded before the kill. Each is
    // recorded just after its receiver answered, so the list is read until it says so (bounded).
    await receiver.requests(2);
    type Listed = { deliveryId: string; type: string; status: string };
    let deliveries: Listed[] = [];
    for (let read = 0; read < MAX_DELIVERY_READS; read++) {
      deliveries = (await request(second.base).get(`/v1/organizations/acme/webhooks/${webhookId}/deliveries`).set(system).expect(200)).body.deliveries;
      if (deliveries.length === 2 && deliveries.every((delivery) => delivery.status === 'delivered')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(deliveries.map((delivery) => delivery.type).sort()).toEqual(['CreditThresholdCrossed', 'InvocationSettled']);
    expect(deliveries.every((delivery) => delivery.status === 'delivered')).toBe(true);
    const received = receiver.received.map((delivery) => delivery.body.deliveryId);
    expect(received.filter((id) => id === held).length).toBeGreaterThanOrEqual(2);
    for (const delivery of deliveries) expect(received).toContain(delivery.deliveryId);
    // A re-send is the same delivery: same id, same body.
    const copies = receiver.received.filter((delivery) => delivery.body.deliveryId === held);
    expect(new Set(copies.map((copy) => copy.rawBody)).size).toBe(1);

    second.child.kill('SIGTERM');
    await exited(second.child);
  });
});
