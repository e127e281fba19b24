/**
 * A gateway call in flight when its instance dies (docs/gateway.md "Settlement", issue 31 finding 2):
 * two instances of the real service, each its own process, share one log (SQLite, or PostgreSQL).
 * The first relays a stream from a local Messages API that pauses after its first text, and is
 * killed with SIGKILL while the stream is open. The second one's recovery finds the dead instance's
 * lease lapsed and settles the call at its hold (transition 14) within deadInstanceReleaseBoundMs of
 * the kill, though the call is far inside its time bound and the staleness threshold, and the
 * explanation says its instance stopped; balance, ledger, statement, the key's spend and the
 * auditors' check agree, and nothing is held.
 */
import Anthropic from '@anthropic-ai/sdk';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { grouped } from '../../projections/gateway-explanation-sentence';
import { runCli } from '../../src/cli/run-cli';
import { DEFAULT_RECOVERY_STALE_AFTER_MS } from '../../src/domain/recovery.settings';
import { MAX_GATEWAY_ATTEMPT_TIMEOUT_MS } from '../../src/gateway/rate-card';
import { deadInstanceReleaseBoundMs } from '../../src/invocations/instance-lease';
import { openEventStore } from '../../src/event-store/open-event-store';
import { MemoryIo } from '../cli/support/memory-io';
import { LEDGER_TOKENS, TOKENS } from '../http/support/http-ledger';
import { MessagesApiServer, messageStream } from '../support/messages-api-server';
import { PostgresTestServer } from '../support/postgres-server';
import { running, startServiceProcess, SERVICE_START_TIMEOUT_MS, type ServiceProcess } from '../support/service-process';
import { GATEWAY_KEY_NAME, GATEWAY_MODEL, GATEWAY_PRICES, GRANTED_CREDITS } from './support/gateway-service';

/**
 * The call's time bound (the rate card's longest attemptTimeoutMs), in ms: the killed call is far
 * inside it, so only its owner's lapsed lease lets recovery settle it.
 */
const ATTEMPT_TIMEOUT_MS = MAX_GATEWAY_ATTEMPT_TIMEOUT_MS;
/** Recovery every second, with its default threshold (far longer than the test); leases of 5 s. */
const RECOVERY_INTERVAL_MS = 1_000;
const LEASE_DURATION_MS = 5_000;
const RECOVERY_ENV = {
  LEDGER_RECOVERY_INTERVAL_MS: String(RECOVERY_INTERVAL_MS),
  LEDGER_RECOVERY_STALE_AFTER_MS: String(DEFAULT_RECOVERY_STALE_AFTER_MS),
  LEDGER_LEASE_DURATION_MS: String(LEASE_DURATION_MS),
};
/** The bound the dead instance's hold must be released within, from the kill, in ms (7,666 ms here). */
const RELEASE_BOUND_MS = deadInstanceReleaseBoundMs(LEASE_DURATION_MS, RECOVERY_INTERVAL_MS);
/** How long the test polls for the settlement before it gives up: the bound, many times over. */
const RECOVERED_WITHIN_MS = 60_000;
/** How often the invocation is read while waiting for recovery, in ms (a poll, not a wait for correctness). */
const POLL_INTERVAL_MS = 250;
const TEST_TIMEOUT_MS = 3 * SERVICE_START_TIMEOUT_MS + RECOVERED_WITHIN_MS;
const SYSTEM = { Authorization: `Bearer ${TOKENS.system}` };

async function json<T>(service: ServiceProcess, path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(`${service.baseUrl}${path}`, { ...init, headers: { ...SYSTEM, 'Content-Type': 'application/json', ...(init.headers as Record<string, string>) } });
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

interface InvocationView {
  readonly state: string;
  readonly estimate: number;
  readonly charge: number;
}

/** Where the service's log is: the SQLite file in its directory, or a database on a PostgreSQL server the test starts. */
interface LogUnderTest {
  /** LEDGER_STORE and the instance's own files. */
  env(directory: string): Record<string, string>;
  close(): Promise<void>;
}

describe.each<[string, () => Promise<LogUnderTest>]>([
  ['the embedded SQLite log', async () => ({ env: (directory) => ({ LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}` }), close: async () => undefined })],
  [
    'a PostgreSQL log',
    async () => {
      const server = await PostgresTestServer.start();
      const url = await server.createDatabase('sigkill');
      return {
        env: (directory) => ({ LEDGER_STORE: url, LEDGER_READ_STORE: join(directory, 'read-models.sqlite'), LEDGER_ANSWER_STORE: join(directory, 'answers.sqlite') }),
        close: () => server.stop(),
      };
    },
  ],
])('docs/gateway.md "Settlement", issue 31 finding 2: a streamed gateway call cut by SIGKILL is settled at its hold by another instance\'s recovery within the named bound, explained as a stopped instance (STATE-PFM-LLM-001 transition 14), on %s', (_name, openLog) => {
  let directory: string;
  let upstream: MessagesApiServer;
  let service: ServiceProcess | undefined;
  let other: ServiceProcess | undefined;
  let releaseUpstream: () => void = () => undefined;
  let log: LogUnderTest | undefined;
  let logEnv: Record<string, string>;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-gateway-sigkill-'));
    upstream = await MessagesApiServer.start();
    log = await openLog();
    logEnv = log.env(directory);
  });

  afterAll(async () => {
    for (const process of [service, other]) if (process !== undefined && running(process)) process.child.kill('SIGKILL');
    releaseUpstream();
    await upstream.close();
    await log?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const start = (env: Record<string, string> = {}) =>
    startServiceProcess(directory, { LEDGER_TOKENS, ANTHROPIC_BASE_URL: upstream.baseURL, ANTHROPIC_API_KEY: 'sk-ant-the-service-own', ...RECOVERY_ENV, ...logEnv, ...env });

  it(
    'settles the call at its hold from the other instance within the bound, says its instance stopped, and leaves balance, ledger, statement and key spend equal with nothing held',
    async () => {
      service = await start();
      const first = service;
      // The second instance: its own read models and answers beside the shared log.
      other = await start({ LEDGER_READ_STORE: join(directory, 'other.read.sqlite'), LEDGER_ANSWER_STORE: join(directory, 'other.answers.sqlite') });
      const live = other;
      await json(first, '/v1/organizations/acme/grants', { method: 'POST', body: JSON.stringify({ credits: GRANTED_CREDITS, reason: 'start', idempotencyKey: 'g-1' }) });
      await json(first, `/v1/gateway/models/${GATEWAY_MODEL}`, {
        method: 'PUT',
        body: JSON.stringify({ prices: GATEWAY_PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: ATTEMPT_TIMEOUT_MS, enabled: true }),
      });
      const { key, keyId } = await json<{ key: string; keyId: string }>(first, '/v1/organizations/acme/gateway-keys', {
        method: 'POST',
        body: JSON.stringify({ name: GATEWAY_KEY_NAME, spendLimit: { credits: GRANTED_CREDITS, period: 'total' } }),
      });

      // Upstream streams its first text, then pauses until the test ends: the stream stays open.
      const paused = new Promise<void>((resolve) => (releaseUpstream = resolve));
      upstream.reply({ kind: 'sse', steps: messageStream({ model: GATEWAY_MODEL, texts: ['Hello', ' never sent'], after: [{ until: paused }] }) });
      const client = new Anthropic({ baseURL: `${first.baseUrl}/anthropic`, apiKey: key, maxRetries: 0 });
      const stream = client.messages.stream({ model: GATEWAY_MODEL, max_tokens: 1_024, messages: [{ role: 'user', content: 'Hello' }] });
      const firstText = new Promise<string>((resolve) => stream.once('text', resolve));
      const ended = stream.done().then(
        () => 'ended',
        () => 'cut',
      );
      const invocationId = (await stream.withResponse()).response.headers.get('llm-ledger-invocation-id')!;
      expect(await firstText).toBe('Hello');
      const exited = once(first.child, 'exit');
      const killedAtMs = Date.now();
      first.child.kill('SIGKILL');
      expect((await exited)[1]).toBe('SIGKILL');
      // The caller saw its stream cut, never its end.
      expect(await ended).toBe('cut');
      const dispatched = await lastEventOf(logEnv.LEDGER_STORE!, invocationId);
      expect(dispatched.type).toBe('InvocationDispatched');

      const deadline = performance.now() + RECOVERED_WITHIN_MS;
      let view = await json<InvocationView>(live, `/v1/invocations/${invocationId}`);
      while (view.state !== 'settled' && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
        view = await json(live, `/v1/invocations/${invocationId}`);
      }
      const hold = view.estimate;
      expect(hold).toBeGreaterThan(0);
      expect(view).toMatchObject({ state: 'settled', charge: hold });

      const explanation = await json<{ sentence: string }>(live, `/v1/invocations/${invocationId}/explanation`);
      expect(explanation.sentence).toMatch(
        new RegExp(
          `^Gateway call by key "${GATEWAY_KEY_NAME}" to ${GATEWAY_MODEL}: the instance that ran it stopped: its lease expired at \\S+Z while the call was in flight, so its usage was never learned and it was charged its ${grouped(hold)}-credit hold \\(settled by recovery\\)\\.$`,
        ),
      );

      await expectEveryFigureAgrees(live, hold, keyId);
      live.child.kill('SIGTERM');
      await once(live.child, 'exit');

      const settled = await lastEventOf(logEnv.LEDGER_STORE!, invocationId);
      expect(settled).toMatchObject({ type: 'InvocationSettled', data: { settledBy: 'recovery', transition: 14, chargeCredits: hold, recovery: { because: 'lease_expired' } } });
      // Released within the bound, by the log's own times (the second instance's clock is this machine's).
      const { settledAt } = settled.data as { settledAt: string };
      expect(Date.parse(settledAt) - killedAtMs).toBeLessThanOrEqual(RELEASE_BOUND_MS);
      const io = new MemoryIo();
      const exitCode = await runCli(['audit', 'verify'], { io, env: logEnv });
      expect({ exitCode, out: exitCode === 0 ? '' : io.stdoutText }).toEqual({ exitCode: 0, out: '' });
    },
    TEST_TIMEOUT_MS,
  );
});

/** The balance, the ledger's entries, the day's statement and the key's spend, read from the restarted service. */
async function expectEveryFigureAgrees(service: ServiceProcess, hold: number, keyId: string): Promise<void> {
  type Balance = { held: number; running: number; charged: number; available: number; granted: number; adjustments: number };
  // The settlement's release and charge are the account stream's own append, after the invocation's:
  // the invocation can read as settled a moment before the balance has them (a poll, not a wait for correctness).
  const deadline = performance.now() + RECOVERED_WITHIN_MS;
  let balance = await json<Balance>(service, '/v1/organizations/acme/balance');
  while (balance.running !== 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    balance = await json<Balance>(service, '/v1/organizations/acme/balance');
  }
  expect(balance).toMatchObject({ held: 0, running: 0, charged: hold, granted: GRANTED_CREDITS });
  expect(balance.available).toBe(balance.granted + balance.adjustments - balance.charged);
  const { entries } = await json<{ entries: { kind: string; credits: number }[] }>(service, '/v1/organizations/acme/ledger?limit=500');
  const sum = (kind: string) => entries.filter((entry) => entry.kind === kind).reduce((total, entry) => total + entry.credits, 0);
  expect(sum('charge')).toBe(hold);
  expect(sum('hold')).toBe(sum('release'));
  const day = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
  const statement = await json<{ totals: { credits: number } }>(service, `/v1/organizations/acme/usage?from=${day(-1)}&to=${day(1)}`);
  expect(statement.totals.credits).toBe(hold);
  const { keys } = await json<{ keys: { keyId: string; spentCredits: number; heldCredits: number }[] }>(service, '/v1/organizations/acme/gateway-keys');
  expect(keys.find((entry) => entry.keyId === keyId)).toMatchObject({ spentCredits: hold, heldCredits: 0 });
}

/** The invocation stream's last event, read from the log while no process has it open. */
async function lastEventOf(storeUrl: string, invocationId: string): Promise<{ type: string; data: unknown }> {
  const store = await openEventStore(storeUrl);
  try {
    const events = await store.readStream(`invocation-${invocationId}`);
    const last = events[events.length - 1]!;
    return { type: last.type, data: last.data };
  } finally {
    await store.close();
  }
}
