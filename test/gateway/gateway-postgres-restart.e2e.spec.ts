/**
 * The gateway on a PostgreSQL log while the server restarts (docs/deploying.md): calls while it is
 * down are refused with 503 in Anthropic's error shape (the API's own routes in the ledger's), nothing
 * acknowledged before is lost, the service carries on by itself once the server is back, and
 * `audit verify` is clean afterwards.
 */
import Anthropic from '@anthropic-ai/sdk';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_OK } from '../../src/cli/cli-io';
import { runCli } from '../../src/cli/run-cli';
import { openEventStore } from '../../src/event-store/open-event-store';
import { MemoryIo } from '../cli/support/memory-io';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { messageReply, messageStream, type ScriptedReply } from '../support/messages-api-server';
import { PostgresTestServer } from '../support/postgres-server';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

// A real PostgreSQL server, stopped and started under the service.
jest.setTimeout(120_000);

/** Calls sent at once while the server is down. */
const CALLS_WHILE_DOWN = 8;
/** Calls of each kind (JSON and streamed) admitted before the server stops and answered by upstream while it is down. */
const IN_FLIGHT_PER_KIND = 3;
const PROMPT = { model: GATEWAY_MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'Go.' }] };

interface CallSettlement {
  readonly settledBy: string;
  readonly transition: number;
  /** Its attempt recorded upstream's usage. */
  readonly usageRecorded: boolean;
  /** Charged the price of that usage, below the worst case it held. */
  readonly chargedBelowHold: boolean;
  readonly holdSettled: boolean;
}

/** How long the calls in flight may take to be settled once the server is back, in ms (the retries wait at most 5 s between tries). */
const SETTLED_AFTER_RESTART_WITHIN_MS = 30_000;
/** Between two reads of the log while waiting for those settlements, in ms. */
const LOG_POLL_MS = 100;

/** The invocations the log holds, by id. */
async function invocationIds(store: string): Promise<Set<string>> {
  const log = await openEventStore(store);
  try {
    return new Set((await log.readAll()).filter((event) => event.type === 'InvocationEstimated').map((event) => event.streamName.slice('invocation-'.length)));
  } finally {
    await log.close();
  }
}

/** How each invocation of the log but those of `known` was settled, once none of them is left open (or the wait's bound passed). */
async function settlementsOnceNoneOpen(store: string, known: ReadonlySet<string>): Promise<CallSettlement[]> {
  const giveUpAt = Date.now() + SETTLED_AFTER_RESTART_WITHIN_MS;
  const log = await openEventStore(store);
  try {
    for (;;) {
      const events = await log.readAll();
      const of = (id: string, type: string) => events.find((event) => event.streamName === `invocation-${id}` && event.type === type)?.data;
      const ids = [...new Set(events.filter((event) => event.type === 'InvocationEstimated').map((event) => event.streamName.slice('invocation-'.length)))].filter((id) => !known.has(id));
      if (ids.some((id) => of(id, 'InvocationSettled') === undefined) && Date.now() < giveUpAt) {
        await new Promise((resolve) => setTimeout(resolve, LOG_POLL_MS));
        continue;
      }
      return ids.map((id) => {
        const settlement = of(id, 'InvocationSettled') as { settledBy: string; transition: number; chargeCredits: number; heldCredits: number } | undefined;
        return {
          settledBy: settlement?.settledBy ?? 'open',
          transition: settlement?.transition ?? 0,
          usageRecorded: (of(id, 'AttemptRecorded') as { usage?: unknown } | undefined)?.usage !== undefined,
          chargedBelowHold: settlement !== undefined && settlement.chargeCredits > 0 && settlement.chargeCredits < settlement.heldCredits,
          holdSettled: events.some((event) => event.type === 'HoldSettled' && (event.data as { invocationId?: string }).invocationId === id),
        };
      });
    }
  } finally {
    await log.close();
  }
}

describe('the gateway on PostgreSQL through a server restart: 503 in the declared shape while it is down, then on by itself', () => {
  let server: PostgresTestServer | undefined;
  let directory: string;
  let env: Record<string, string>;
  let service: GatewayService | undefined;

  beforeAll(async () => {
    server = await PostgresTestServer.start();
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-pg-restart-'));
    env = {
      LEDGER_STORE: await server.createDatabase('restart'),
      LEDGER_READ_STORE: join(directory, 'read-models.sqlite'),
      LEDGER_ANSWER_STORE: join(directory, 'answers.sqlite'),
      LEDGER_RECOVERY_INTERVAL_MS: '0',
    };
    service = await startGatewayService({ env });
  });

  afterAll(async () => {
    await service?.close();
    await server?.stop();
    rmSync(directory, { recursive: true, force: true });
  });

  const invocationOf = async (call: Promise<unknown>): Promise<string> => {
    const { response } = await (call as ReturnType<Anthropic['messages']['create']>).withResponse();
    return response.headers.get('llm-ledger-invocation-id')!;
  };

  it('refuses calls and commands while the server is down, keeps what was acknowledged, and serves again once it is back', async () => {
    const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    service!.upstream.reply(...Array.from({ length: CALLS_WHILE_DOWN + 2 }, () => messageReply({ model: GATEWAY_MODEL, usage })));
    const before = await invocationOf(service!.client().messages.create(PROMPT));
    await settledView(service!.ledger, before);

    await server!.stopServer();
    const refusals = await Promise.all(
      Array.from({ length: CALLS_WHILE_DOWN }, () =>
        service!.client().messages.create(PROMPT).then(
          () => undefined,
          (error: unknown) => error,
        ),
      ),
    );
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(Anthropic.APIError);
      const { status, error, requestID } = refusal as InstanceType<typeof Anthropic.APIError>;
      expect({ status, error }).toEqual({ status: 503, error: { type: 'error', error: { type: 'api_error', message: expect.any(String) }, request_id: requestID } });
    }
    const grant = await service!.ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 5, reason: 'while down', idempotencyKey: 'g-down' });
    expect(grant.status).toBe(503);
    expect(grant.body).toMatchObject({ statusCode: 503, code: 'unavailable', message: expect.any(String), requestId: expect.any(String) });
    expect(JSON.stringify(grant.body)).not.toMatch(/stack|at .*\.ts/);

    await server!.startAgain();
    expect(await settledView(service!.ledger, before)).toMatchObject({ invocationId: before, state: 'settled' });
    const after = await invocationOf(service!.client().messages.create(PROMPT));
    await settledView(service!.ledger, after);
    const repeated = await service!.ledger.http().post('/v1/organizations/acme/grants').set(bearer(TOKENS.system)).send({ credits: 5, reason: 'while down', idempotencyKey: 'g-down' });
    expect(repeated.status).toBe(200);

    await service!.close();
    service = undefined;
    const io = new MemoryIo();
    const audited = await runCli(['audit', 'verify'], { io, env });
    expect(io.lines).toEqual([expect.stringMatching(/^audit verify: OK/)]);
    expect(audited).toBe(EXIT_OK);
  });
  it('calls in flight when the server stops (JSON and streamed) end without a 500, and their settlements are tried again until the server is back: each is settled at its usage, not at its hold by recovery', async () => {
    service ??= await startGatewayService({ env });
    const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = (reply: ScriptedReply): ScriptedReply =>
      reply.kind === 'sse'
        ? { ...reply, steps: [{ until: released }, ...reply.steps] }
        : { kind: 'custom', respond: async (_request, res) => {
            await released;
            res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify((reply as { body: unknown }).body));
          } };
    const requestsBefore = service!.upstream.requests.length;
    const earlier = await invocationIds(env.LEDGER_STORE!);
    service!.upstream.reply(
      ...Array.from({ length: IN_FLIGHT_PER_KIND }, () => held(messageReply({ model: GATEWAY_MODEL, usage }))),
      ...Array.from({ length: IN_FLIGHT_PER_KIND }, () => held({ kind: 'sse', steps: messageStream({ model: GATEWAY_MODEL }) })),
      messageReply({ model: GATEWAY_MODEL, usage }),
    );
    const ended = (call: Promise<unknown>): Promise<{ readonly ok: boolean; readonly error?: unknown }> => call.then(() => ({ ok: true }), (error: unknown) => ({ ok: false, error }));
    const json = Array.from({ length: IN_FLIGHT_PER_KIND }, () => ended(service!.client().messages.create(PROMPT)));
    await service!.upstream.waitForRequests(requestsBefore + IN_FLIGHT_PER_KIND);
    const streamed = Array.from({ length: IN_FLIGHT_PER_KIND }, () => ended(service!.client().messages.stream(PROMPT).finalMessage()));
    await service!.upstream.waitForRequests(requestsBefore + 2 * IN_FLIGHT_PER_KIND);

    await server!.stopServer();
    release();
    const outcomes = await Promise.all([...json, ...streamed]);
    // Upstream answered: each caller gets its answer (or, had the relay failed, a 503 in the declared shape).
    for (const outcome of outcomes) {
      if (outcome.ok) continue;
      const { status, error } = outcome.error as InstanceType<typeof Anthropic.APIError>;
      expect({ status, error }).toEqual({ status: 503, error: { type: 'error', error: { type: 'api_error', message: expect.any(String) }, request_id: expect.any(String) } });
    }

    await server!.startAgain();
    const after = await invocationOf(service!.client().messages.create(PROMPT));
    await settledView(service!.ledger, after);

    // Their settlements failed while the server was down and were tried again (GatewaySettlementRetries)
    // once it was back: each call is settled at the usage upstream reported, by its own relay, not at
    // its hold by recovery (which runs not at all here), and its hold settled on the account.
    const settlements = await settlementsOnceNoneOpen(env.LEDGER_STORE!, new Set([...earlier, after]));
    expect(settlements).toHaveLength(2 * IN_FLIGHT_PER_KIND);
    for (const settlement of settlements) {
      expect(settlement).toEqual({ settledBy: 'runtime', transition: 8, usageRecorded: true, chargedBelowHold: true, holdSettled: true });
    }

    await service!.close();
    service = undefined;
    const io = new MemoryIo();
    expect(await runCli(['audit', 'verify'], { io, env })).toBe(EXIT_OK);
    expect(io.lines).toEqual([expect.stringMatching(/^audit verify: OK/)]);
  });
});
