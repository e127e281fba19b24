import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ALL_PROJECTIONS, BALANCE_COLLECTION, BALANCES_PROJECTION, type BalanceView } from '../../projections';
import { EXIT_DIFFERENCES, EXIT_OK, EXIT_USAGE } from '../../src/cli/cli-io';
import { runCli } from '../../src/cli/run-cli';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { compareReadModels, openReadModelStore, readModelPathFor } from '../../src/projection-runner';
import { ledgerWithHistory } from './ledger-fixture';
import { MemoryIo } from './support/memory-io';

const SQLITE_SUFFIXES = ['', '-wal', '-shm'];

/** A copy of a stopped ledger's log and read models, so each test may change its own. */
function copyLedger(fromDirectory: string): { directory: string; logPath: string; readPath: string } {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-cli-'));
  for (const name of ['ledger.sqlite', readModelPathFor('ledger.sqlite')]) {
    for (const suffix of SQLITE_SUFFIXES) {
      if (existsSync(join(fromDirectory, name + suffix))) copyFileSync(join(fromDirectory, name + suffix), join(directory, name + suffix));
    }
  }
  return { directory, logPath: join(directory, 'ledger.sqlite'), readPath: join(directory, readModelPathFor('ledger.sqlite')) };
}

describe('llm-ledger, the auditors\' CLI (README.md), run in-process on a stopped service\'s files', () => {
  let original: string;
  let runs: readonly InvocationSummary[];
  const copies: string[] = [];
  const copy = () => {
    const copied = copyLedger(original);
    copies.push(copied.directory);
    return copied;
  };
  const cli = async (argv: string[], options: { env?: Record<string, string>; interactive?: boolean } = {}) => {
    const io = new MemoryIo(options.interactive ?? false);
    const exitCode = await runCli(argv, { io, env: options.env ?? {} });
    return { exitCode, io };
  };

  beforeAll(async () => {
    const audited = await ledgerWithHistory({ keepDirectory: true });
    original = audited.ledger.directory;
    runs = audited.runs;
    await audited.ledger.close();
  });

  afterAll(() => {
    for (const directory of [original, ...copies]) rmSync(directory, { recursive: true, force: true });
  });

  describe('audit verify', () => {
    it('exits 0 on the untouched store, reading its location from LEDGER_STORE as the service does', async () => {
      const { logPath } = copy();
      const { exitCode, io } = await cli(['audit', 'verify'], { env: { LEDGER_STORE: `sqlite:${logPath}` } });
      expect(io.stderrText).toBe('');
      expect(io.lines).toEqual([expect.stringMatching(/^audit verify: OK — 8 projections rebuilt and compared; 2 organizations, 3 invocations/)]);
      expect(exitCode).toBe(EXIT_OK);
    });

    it('exits 1 after a read-model row is corrupted on disk, and prints the difference as JSON lines', async () => {
      const { logPath, readPath } = copy();
      const store = openReadModelStore({ path: readPath });
      const balance = store.get<BalanceView>(BALANCES_PROJECTION, BALANCE_COLLECTION, 'acme')!;
      store.write((session) => session.documents(BALANCES_PROJECTION).put(BALANCE_COLLECTION, 'acme', { ...balance, charged: balance.charged + 7 }));
      store.close();

      const { exitCode, io } = await cli(['audit', 'verify', '--store', `sqlite:${logPath}`, '--read-store', readPath, '--json']);
      expect(exitCode).toBe(EXIT_DIFFERENCES);
      const kinds = io.json().map((line) => line.kind);
      expect(kinds).toEqual(['projection_document', 'balance_identity', 'balance_mismatch', 'summary']);
    });

    it('refuses to audit a store that is not there rather than create an empty one (exit 2)', async () => {
      const missing = join(tmpdir(), `llm-ledger-missing-${process.pid}`, 'ledger.sqlite');
      const { exitCode, io } = await cli(['audit', 'verify', '--store', `sqlite:${missing}`]);
      expect(exitCode).toBe(EXIT_USAGE);
      expect(io.stderrText).toBe(`llm-ledger: no event store at ${missing} (set --store or LEDGER_STORE)\n`);
      expect(existsSync(missing)).toBe(false);
    });
  });

  describe('streams read', () => {
    it('prints an invocation stream as JSON lines, revisions and positions as strings', async () => {
      const { logPath } = copy();
      const invocationId = runs[0]!.invocationId;
      const { exitCode, io } = await cli(['streams', 'read', `invocation-${invocationId}`, '--store', `sqlite:${logPath}`]);
      expect(exitCode).toBe(EXIT_OK);
      const lines = io.json<{ streamName: string; revision: string; position: string; type: string; data: unknown }>();
      expect(lines.map((line) => line.type)).toEqual([
        'InvocationEstimated',
        'InvocationReserved',
        'InvocationDispatched',
        'AttemptRecorded',
        'InvocationCompleted',
        'InvocationSettled',
      ]);
      expect(lines.map((line) => line.revision)).toEqual(['0', '1', '2', '3', '4', '5']);
      expect(lines.every((line) => /^\d+$/.test(line.position) && line.streamName === `invocation-${invocationId}`)).toBe(true);
      expect(lines[5]!.data).toMatchObject({ transition: 8, chargeCredits: 5 });

      const from = await cli(['streams', 'read', `invocation-${invocationId}`, '--from', '4', '--store', `sqlite:${logPath}`]);
      expect(from.io.json().map((line) => line.revision)).toEqual(['4', '5']);
    });

    it('says so on stderr and exits 2 for a stream that does not exist', async () => {
      const { logPath } = copy();
      const { exitCode, io } = await cli(['streams', 'read', 'invocation-nope', '--store', `sqlite:${logPath}`]);
      expect(exitCode).toBe(EXIT_USAGE);
      expect(io.stdoutText).toBe('');
      expect(io.stderrText).toBe('llm-ledger streams read: no stream named "invocation-nope"\n');
    });

    it('rejects a revision that is not a non-negative integer', async () => {
      const { exitCode, io } = await cli(['streams', 'read', 'account-acme', '--from', '-1']);
      expect(exitCode).toBe(EXIT_USAGE);
      expect(io.stderrText).toBe('llm-ledger: --from must be a revision (a non-negative integer), got "-1"\n');
    });
  });

  describe('projections rebuild', () => {
    it('rebuilds every read model equal to the one the live runner built, with plain progress lines off a terminal', async () => {
      const { logPath, readPath, directory } = copy();
      const before = copyLedger(directory);
      copies.push(before.directory);

      const { exitCode, io } = await cli(['projections', 'rebuild', '--store', `sqlite:${logPath}`]);
      expect(exitCode).toBe(EXIT_OK);
      expect(io.stderrText).toMatch(/^rebuild: 100% (\d+)\/\1 events, \d+ events\/s\n$/);
      expect(io.lines.slice(0, -1)).toEqual(ALL_PROJECTIONS.map((projection) => expect.stringMatching(new RegExp(`^rebuilt ${projection.name} up to position \\d+$`))));
      expect(io.lines.at(-1)).toMatch(/^projections rebuild: 8 of 8 projections rebuilt from \d+ events in \d+\.\d s$/);

      const rebuilt = openReadModelStore({ path: readPath });
      const live = openReadModelStore({ path: before.readPath });
      try {
        const comparison = compareReadModels({ actual: live, expected: rebuilt, projections: ALL_PROJECTIONS.map((projection) => projection.name) });
        expect(comparison.projections.filter((projection) => !projection.equal)).toEqual([]);
        expect(comparison.equal).toBe(true);
      } finally {
        rebuilt.close();
        live.close();
      }
    });

    it('draws a progress bar on a terminal and rebuilds only the projection named', async () => {
      const { logPath } = copy();
      const { exitCode, io } = await cli(['projections', 'rebuild', '--projection', 'explanations', '--store', `sqlite:${logPath}`], { interactive: true });
      expect(exitCode).toBe(EXIT_OK);
      expect(io.stderrText).toMatch(/^\rrebuild \[#{30}\] 100% (\d+)\/\1 events, \d+ events\/s\u001b\[K\n$/);
      expect(io.lines[0]).toMatch(/^rebuilt explanations up to position \d+$/);
      expect(io.lines).toHaveLength(2);
    });

    it('exits 2 for a projection it does not know, naming the ones it does', async () => {
      const { logPath } = copy();
      const { exitCode, io } = await cli(['projections', 'rebuild', '--projection', 'nope', '--store', `sqlite:${logPath}`]);
      expect(exitCode).toBe(EXIT_USAGE);
      expect(io.stderrText).toBe(
        'llm-ledger projections rebuild: unknown projection "nope"; known: attempts, balances, explanations, invocation-list, invocations, ledger-entries, routing-budgets, usage-statements\n',
      );
    });
  });

  describe('arguments and help', () => {
    it.each([
      [['audit', 'verify', '--help'], 'Usage: llm-ledger audit verify [options]'],
      [['streams', 'read', '--help'], 'Usage: llm-ledger streams read <name> [options]'],
      [['projections', 'rebuild', '-h'], 'Usage: llm-ledger projections rebuild [options]'],
      [['--help'], 'Usage: llm-ledger <command> [options]'],
      [['audit', '--help'], 'Usage: llm-ledger audit <command> [options]'],
    ])('prints help for %j on stdout and exits 0', async (argv, firstLine) => {
      const { exitCode, io } = await cli(argv);
      expect(exitCode).toBe(EXIT_OK);
      expect(io.stdoutText.split('\n')[0]).toBe(firstLine);
    });

    it.each([
      [[], 'Usage: llm-ledger <command> [options]'],
      [['audit'], 'Usage: llm-ledger audit <command> [options]'],
      [['audit', 'check'], 'llm-ledger: unknown command "audit check"; run llm-ledger audit --help'],
      [['ledger'], 'llm-ledger: unknown command "ledger"; run llm-ledger --help'],
      [['audit', 'verify', '--stor', 'x'], 'llm-ledger: audit verify: unknown option --stor; run llm-ledger audit verify --help'],
      [['audit', 'verify', '--store'], 'llm-ledger: audit verify: --store needs a value <url>; run llm-ledger audit verify --help'],
      [['audit', 'verify', '--json=yes'], 'llm-ledger: audit verify: --json takes no value; run llm-ledger audit verify --help'],
      [['streams', 'read'], 'llm-ledger: streams read: missing <name>; run llm-ledger streams read --help'],
      [['streams', 'read', 'a', 'b'], 'llm-ledger: streams read: unexpected argument "b"; run llm-ledger streams read --help'],
      [['streams', 'read', 'a', '--store', 'mysql://x'], expect.stringContaining('llm-ledger: Invalid configuration:')],
    ])('rejects %j with a message on stderr and exit 2', async (argv, message) => {
      const { exitCode, io } = await cli(argv);
      expect(exitCode).toBe(EXIT_USAGE);
      expect(io.stdoutText).toBe('');
      expect(io.stderrText.split('\n')[0]).toEqual(message);
    });
  });
});
