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
import { MemoryIo } from '../cli/support/memory-io';
import { bearer, TOKENS } from '../http/support/http-ledger';
import { messageReply } from '../support/messages-api-server';
import { PostgresTestServer } from '../support/postgres-server';
import { GATEWAY_MODEL, settledView, startGatewayService, type GatewayService } from './support/gateway-service';

// A real PostgreSQL server, stopped and started under the service.
jest.setTimeout(120_000);

/** Calls sent at once while the server is down. */
const CALLS_WHILE_DOWN = 8;
const PROMPT = { model: GATEWAY_MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'Go.' }] };

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
});
