/**
 * The gateway on a PostgreSQL log while the server restarts under load (docs/deploying.md): three
 * instances of the real service, each its own process with its own read models, share one database.
 * Callers keep sending gateway calls (JSON and streamed) to all three while the server is stopped and
 * started again. While it is down every call that does not get its answer gets 503 in Anthropic's
 * error shape, and the API's commands 503 in the ledger's. Calls that were in flight at the stop get
 * their answers. Nothing acknowledged is lost: every call answered 200 ends settled at the usage
 * upstream reported, by its own instance (its settlement tried again once the server is back;
 * recovery is off), and a grant acknowledged before the stop is still there. The instances carry on
 * by themselves, and `audit verify` is clean on each instance's read models afterwards.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_OK } from '../../src/cli/cli-io';
import { runCli } from '../../src/cli/run-cli';
import { openEventStore } from '../../src/event-store/open-event-store';
import { INVOCATION_ID_HEADER } from '../../src/gateway/anthropic-error.body';
import { MemoryIo } from '../cli/support/memory-io';
import { LEDGER_TOKENS, TOKENS } from '../http/support/http-ledger';
import { MessagesApiServer, messageReply, messageStream, type RecordedRequest, type ScriptedReply } from '../support/messages-api-server';
import { PostgresTestServer } from '../support/postgres-server';
import { running, startServiceProcess, SERVICE_START_TIMEOUT_MS, type ServiceProcess } from '../support/service-process';
import { GATEWAY_MODEL, GATEWAY_PRICES, GRANTED_CREDITS } from './support/gateway-service';

/** Instances of the service, each a process of its own. */
const INSTANCES = 3;
/** Callers per instance that keep sending calls, one after the other, for the whole test. */
const CALLERS_PER_INSTANCE = 2;
/** Calls answered on each instance before the stop, during the outage (503) and after the restart, before the test goes on. */
const CALLS_PER_PHASE = 3;
/** `max_tokens` of the calls whose upstream answer waits for the stop (one JSON and one streamed per instance). */
const HELD_MAX_TOKENS = 65;
/** How long to wait for the calls answered 200 to be settled once the server is back, in ms (the retries wait at most 5 s between tries). */
const SETTLED_WITHIN_MS = 30_000;
/** Between two reads while waiting for a condition, in ms (a poll, not a wait for correctness). */
const POLL_MS = 100;
/** Longest a caller honours a 503's retry-after, in ms, so the outage is met by many calls. */
const MAX_RETRY_AFTER_MS = 250;
/** The organization's running slots: the default 10 is fewer than the callers and held calls at once. */
const MAX_RUNNING = 1_000;
const SYSTEM = { Authorization: `Bearer ${TOKENS.system}`, 'Content-Type': 'application/json' };
const USAGE = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

// Three processes compile the sources on start on two loaded cores, then the load runs through a restart.
jest.setTimeout(2 * SERVICE_START_TIMEOUT_MS + 180_000);

/** What one call got. */
interface Outcome {
  readonly instance: number;
  readonly status: number;
  readonly invocationId: string | null;
  /** The body as read: the answer (a JSON message, or a stream's text) or the error. */
  readonly body: string;
  /** The `retry-after` header, when the answer had one. */
  readonly retryAfter: string | null;
  /** The server was down when the call was answered, as far as the test knows. */
  readonly duringOutage: boolean;
}

/** A phase of the test, and what was answered in it. */
class Load {
  readonly outcomes: Outcome[] = [];
  stopped = false;
  serverDown = false;

  count(instance: number, test: (outcome: Outcome) => boolean): number {
    return this.outcomes.filter((outcome) => outcome.instance === instance && test(outcome)).length;
  }

  /** Resolves once every instance answered `calls` more calls passing `test` from now. */
  async untilEach(calls: number, test: (outcome: Outcome) => boolean): Promise<void> {
    const start = Array.from({ length: INSTANCES }, (_, instance) => this.count(instance, test));
    while (start.some((count, instance) => this.count(instance, test) < count + calls)) await pause(POLL_MS);
  }
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One gateway call by fetch, read to its end; never throws. */
async function call(service: ServiceProcess, key: string, stream: boolean, maxTokens = 64): Promise<Omit<Outcome, 'instance' | 'duringOutage'>> {
  try {
    const response = await fetch(`${service.baseUrl}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: GATEWAY_MODEL, max_tokens: maxTokens, stream, messages: [{ role: 'user', content: 'Go.' }] }),
    });
    return { status: response.status, invocationId: response.headers.get(INVOCATION_ID_HEADER), body: await response.text(), retryAfter: response.headers.get('retry-after') };
  } catch (error) {
    return { status: 0, invocationId: null, body: String(error), retryAfter: null };
  }
}

/** A caller that keeps calling `instance` until the load stops, honouring a 503's retry-after (bounded). */
async function caller(load: Load, services: readonly ServiceProcess[], instance: number, key: string, stream: boolean): Promise<void> {
  while (!load.stopped) {
    const outcome = await call(services[instance]!, key, stream);
    load.outcomes.push({ instance, ...outcome, duringOutage: load.serverDown });
    if (outcome.status === 503) await pause(MAX_RETRY_AFTER_MS);
  }
}

/** Upstream's answer: at once, or (held calls) once `released` resolved; JSON or streamed as asked. */
function upstreamAnswer(released: Promise<void>): (request: RecordedRequest) => ScriptedReply {
  return (request) => {
    const body = request.body as { stream?: boolean; max_tokens?: number };
    const held = body.max_tokens === HELD_MAX_TOKENS;
    if (body.stream === true) return { kind: 'sse', steps: [...(held ? [{ until: released }] : []), ...messageStream({ model: GATEWAY_MODEL })] };
    const reply = messageReply({ model: GATEWAY_MODEL, usage: USAGE });
    if (!held) return reply;
    return {
      kind: 'custom',
      respond: async (_request, res) => {
        await released;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify((reply as { body: unknown }).body));
      },
    };
  };
}

async function api(service: ServiceProcess, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> {
  const response = await fetch(`${service.baseUrl}${path}`, { method: 'POST', headers: SYSTEM, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, retryAfter: response.headers.get('retry-after') };
}

/** How the log settled each of `ids`, once all are settled and their holds too (or the wait's bound passed). */
async function settlementsOf(store: string, ids: readonly string[]): Promise<Map<string, { settledBy: string; transition: number; chargeCredits: number; heldCredits: number; holdSettled: boolean }>> {
  const giveUpAt = Date.now() + SETTLED_WITHIN_MS;
  const log = await openEventStore(store);
  try {
    for (;;) {
      const events = await log.readAll();
      const settled = new Map(events.filter((event) => event.type === 'InvocationSettled').map((event) => [event.streamName.slice('invocation-'.length), event.data as { settledBy: string; transition: number; chargeCredits: number; heldCredits: number }]));
      const released = new Set(events.filter((event) => event.type === 'HoldSettled').map((event) => (event.data as { invocationId: string }).invocationId));
      // The account's HoldSettled follows the invocation's settlement in an append of its own.
      if (ids.every((id) => settled.has(id) && released.has(id)) || Date.now() > giveUpAt) {
        return new Map(ids.filter((id) => settled.has(id)).map((id) => [id, { ...settled.get(id)!, holdSettled: released.has(id) }]));
      }
      await pause(POLL_MS);
    }
  } finally {
    await log.close();
  }
}

/** The idempotency keys of the log's grants, in order. */
async function grantKeys(store: string): Promise<string[]> {
  const log = await openEventStore(store);
  try {
    return (await log.readStream('account-acme')).filter((event) => event.type === 'CreditsGranted').map((event) => (event.data as { idempotencyKey: string }).idempotencyKey);
  } finally {
    await log.close();
  }
}

/** Anthropic's error shape with the 503 the gateway answers while its log is away. */
const ANTHROPIC_503 = { type: 'error', error: { type: 'api_error', message: expect.any(String) }, request_id: expect.any(String) };

describe('the gateway on PostgreSQL through a server restart under load, three service processes: 503 in the declared shape while it is down, nothing acknowledged lost, then on by themselves', () => {
  let server: PostgresTestServer | undefined;
  let upstream: MessagesApiServer | undefined;
  let directory: string;
  let store: string;
  let services: ServiceProcess[] = [];
  const envOf = (instance: number): Record<string, string> => ({
    LEDGER_STORE: store,
    LEDGER_READ_STORE: join(directory, `read-${instance}.sqlite`),
    LEDGER_ANSWER_STORE: join(directory, `answers-${instance}.sqlite`),
  });

  beforeAll(async () => {
    server = await PostgresTestServer.start();
    upstream = await MessagesApiServer.start();
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-pg-restart-'));
    store = await server.createDatabase('restart');
    const shared = { LEDGER_TOKENS, ANTHROPIC_BASE_URL: upstream.baseURL, ANTHROPIC_API_KEY: 'sk-ant-the-service-own', LEDGER_RECOVERY_INTERVAL_MS: '0' };
    services = await Promise.all(Array.from({ length: INSTANCES }, (_, instance) => startServiceProcess(directory, { ...shared, ...envOf(instance) })));
  });

  afterAll(async () => {
    for (const service of services) if (running(service)) service.child.kill('SIGKILL');
    await upstream?.close();
    await server?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  it('answers 503 in the declared shapes while the server is down, settles every call answered 200 at its usage once it is back, carries on by itself, and audits clean', async () => {
    const [first] = services as [ServiceProcess];
    expect((await api(first, '/v1/organizations/acme/grants', { credits: GRANTED_CREDITS, reason: 'start', idempotencyKey: 'g-1' })).status).toBe(200);
    // Room for every caller and held call at once, and for the holds of calls cut between hold and dispatch by the stop (recovery is off).
    await fetch(`${first.baseUrl}/v1/organizations/acme/settings`, { method: 'PUT', headers: SYSTEM, body: JSON.stringify({ maxRunning: MAX_RUNNING }) });
    await fetch(`${first.baseUrl}/v1/gateway/models/${GATEWAY_MODEL}`, { method: 'PUT', headers: SYSTEM, body: JSON.stringify({ prices: GATEWAY_PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 600_000, enabled: true }) });
    const { body: issued } = await api(first, '/v1/organizations/acme/gateway-keys', { name: 'ci-bot' });
    const key = issued['key'] as string;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    upstream!.reply(...Array.from({ length: 5_000 }, () => upstreamAnswer(released)));

    const load = new Load();
    const callers = services.flatMap((_, instance) => Array.from({ length: CALLERS_PER_INSTANCE }, (__, index) => caller(load, services, instance, key, index % 2 === 1)));
    await load.untilEach(CALLS_PER_PHASE, (outcome) => outcome.status === 200);
    // Calls whose upstream answers only once the server is down: their settlements meet the outage.
    const held = services.flatMap((service) => [call(service, key, false, HELD_MAX_TOKENS), call(service, key, true, HELD_MAX_TOKENS)]);
    const heldUpstream = (): number => upstream!.requests.filter((request) => (request.body as { max_tokens?: number }).max_tokens === HELD_MAX_TOKENS).length;
    while (heldUpstream() < held.length) await pause(POLL_MS);

    await server!.stopServer();
    load.serverDown = true;
    await load.untilEach(CALLS_PER_PHASE, (outcome) => outcome.duringOutage && outcome.status === 503);
    const grantWhileDown = await api(services[1]!, '/v1/organizations/acme/grants', { credits: 5, reason: 'while down', idempotencyKey: 'g-down' });
    release();
    const heldOutcomes = await Promise.all(held);

    await server!.startAgain();
    load.serverDown = false;
    await load.untilEach(CALLS_PER_PHASE, (outcome) => !outcome.duringOutage && outcome.status === 200);
    load.stopped = true;
    await Promise.all(callers);
    const grantRepeated = await api(services[2]!, '/v1/organizations/acme/grants', { credits: 5, reason: 'while down', idempotencyKey: 'g-down' });

    // While down: 503 in Anthropic's shape on the gateway, in the ledger's on the API, each saying
    // when to try again (Anthropic's SDKs honour retry-after); nothing else.
    for (const outcome of load.outcomes.filter((outcome) => outcome.status !== 200)) {
      expect({ status: outcome.status, body: JSON.parse(outcome.body) as unknown, retryAfter: outcome.retryAfter }).toEqual({ status: 503, body: ANTHROPIC_503, retryAfter: '1' });
    }
    expect(grantWhileDown).toMatchObject({ status: 503, retryAfter: '1', body: { statusCode: 503, code: 'unavailable', message: expect.any(String), requestId: expect.any(String) } });
    expect(JSON.stringify(grantWhileDown.body)).not.toMatch(/stack|at .*\.ts/);
    expect(grantRepeated.status).toBe(200);
    // The calls in flight at the stop got their answers, whole.
    for (const outcome of heldOutcomes) expect({ status: outcome.status, whole: /message_stop|"stop_reason":"end_turn"/.test(outcome.body) }).toEqual({ status: 200, whole: true });

    // Nothing acknowledged lost: every call answered 200 is settled at its usage by its own instance.
    const answered = [...load.outcomes, ...heldOutcomes.map((outcome) => ({ ...outcome, instance: -1, duringOutage: true }))].filter((outcome) => outcome.status === 200);
    const ids = answered.map((outcome) => outcome.invocationId!);
    const settlements = await settlementsOf(store, ids);
    expect(ids.filter((id) => !settlements.has(id))).toEqual([]);
    for (const settlement of settlements.values()) {
      expect(settlement).toMatchObject({ settledBy: 'runtime', transition: 8, holdSettled: true });
      expect(settlement.chargeCredits).toBeLessThan(settlement.heldCredits);
    }
    // The grant acknowledged before the stop is there, once; the one refused while down, once after it.
    const grants = await grantKeys(store);
    expect(grants).toEqual(['g-1', 'g-down']);
    // Carried on by themselves: the same processes as at the start, none restarted.
    expect(services.every(running)).toBe(true);

    for (const service of services) {
      service.child.kill('SIGTERM');
      await once(service.child, 'exit');
    }
    for (let instance = 0; instance < INSTANCES; instance++) {
      const io = new MemoryIo();
      const exitCode = await runCli(['audit', 'verify'], { io, env: envOf(instance) });
      expect({ instance, exitCode, lines: io.lines }).toEqual({ instance, exitCode: EXIT_OK, lines: [expect.stringMatching(/^audit verify: OK/)] });
    }
  });
});
