import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_OK } from '../../src/cli/cli-io';
import { runCli } from '../../src/cli/run-cli';
import { PostgresTestServer } from '../support/postgres-server';
import { ledgerWithHistory } from './ledger-fixture';
import { MemoryIo } from './support/memory-io';

// A real PostgreSQL server, and the whole application on it before the CLI runs.
jest.setTimeout(120_000);

describe("llm-ledger, the auditors' CLI, on a PostgreSQL log (LEDGER_STORE=postgres://…)", () => {
  let server: PostgresTestServer | undefined;
  let env: Record<string, string>;
  let acmeInvocation: string;
  let directory: string | undefined;

  beforeAll(async () => {
    server = await PostgresTestServer.start();
    const url = await server.createDatabase('cli');
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-pg-cli-'));
    // The instance's own files (read models, answers), as each instance on a shared log has them.
    env = { LEDGER_STORE: url, LEDGER_READ_STORE: join(directory, 'read-models.sqlite'), LEDGER_ANSWER_STORE: join(directory, 'answers.sqlite') };
    const audited = await ledgerWithHistory({ env });
    acmeInvocation = audited.runs[0]!.invocationId;
    await audited.ledger.close();
  });

  afterAll(async () => {
    await server?.stop();
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  });

  const cli = async (argv: string[]): Promise<{ exitCode: number; io: MemoryIo }> => {
    const io = new MemoryIo(false);
    const exitCode = await runCli(argv, { io, env });
    return { exitCode, io };
  };

  it("audit verify finds the service's live read models equal to a replay of the PostgreSQL log, and again after projections rebuild rewrote them", async () => {
    const live = await cli(['audit', 'verify']);
    expect(live.io.lines).toEqual([expect.stringMatching(/^audit verify: OK — 8 projections rebuilt and compared; 2 organizations, 3 invocations/)]);
    expect(live.exitCode).toBe(EXIT_OK);

    const rebuilt = await cli(['projections', 'rebuild']);
    expect(rebuilt.io.stderrText).not.toMatch(/error/i);
    expect(rebuilt.exitCode).toBe(EXIT_OK);

    const { exitCode, io } = await cli(['audit', 'verify']);
    expect(io.lines).toEqual([expect.stringMatching(/^audit verify: OK — 8 projections rebuilt and compared; 2 organizations, 3 invocations/)]);
    expect(exitCode).toBe(EXIT_OK);
  });

  it('streams read prints an invocation stream of the PostgreSQL log as JSON lines, with its revisions and positions', async () => {
    const { exitCode, io } = await cli(['streams', 'read', `invocation-${acmeInvocation}`]);

    expect(exitCode).toBe(EXIT_OK);
    const lines = io.json<{ streamName: string; revision: string; position: string; type: string }>();
    expect(lines.map((line) => line.type)).toEqual([
      'InvocationEstimated',
      'InvocationReserved',
      'InvocationDispatched',
      'AttemptRecorded',
      'InvocationCompleted',
      'InvocationSettled',
    ]);
    expect(lines.map((line) => line.revision)).toEqual(['0', '1', '2', '3', '4', '5']);
    const positions = lines.map((line) => BigInt(line.position));
    expect(positions.every((position, index) => index === 0 || position > positions[index - 1]!)).toBe(true);
  });
});
