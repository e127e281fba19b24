import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_STARTUP_ADDRESS, EXIT_STARTUP_CONFIGURATION, EXIT_STARTUP_STORE } from '../../src/composition/service-startup';
import { ReadStoreLock } from '../../src/projection-runner/read-store.lock';

const ROOT = join(__dirname, '..', '..');
const HOOK = join(ROOT, 'tools', 'ts-require-hook.js');
const MAIN = join(ROOT, 'src', 'main.ts');
/** A start from the TypeScript sources on two shared cores, compiled on load, with room to spare. */
const START_TIMEOUT_MS = 60_000;
/** pino's level number of `fatal`. */
const PINO_FATAL = 60;

interface Run {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The real service (`src/main.ts`) in a child process with only `env` set, run until it exits, or
 * until `until` sees what it waits for in its output (then stopped with SIGTERM).
 */
function runService(env: Record<string, string>, until?: (stdout: string) => boolean): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', HOOK, MAIN], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LEDGER_PROJECTIONS_THREAD: 'main', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), START_TIMEOUT_MS);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (until?.(stdout) === true) child.kill('SIGTERM');
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('exit', (exitCode) => {
      clearTimeout(timer);
      resolve({ exitCode, stdout, stderr });
    });
  });
}

/** The one line a failed start writes: a pino JSON object at level fatal. */
function onlyLine(run: Run): Record<string, unknown> {
  expect(run.stderr).toBe('');
  const lines = run.stdout.split('\n').filter((line) => line !== '');
  expect(lines).toHaveLength(1);
  const line = JSON.parse(lines[0]!) as Record<string, unknown>;
  expect(line).toMatchObject({ level: PINO_FATAL, context: 'Startup', pid: expect.any(Number), time: expect.any(Number) });
  return line;
}

function listeningOn(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}

describe('The service’s start (issue 26, findings 2 and 3): checked before anything is written, failures in one line', () => {
  let directory: string;
  /** The store the service is pointed at, in a folder that does not exist until the service makes it. */
  let store: string;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-start-'));
    store = join(directory, 'var', 'ledger.sqlite');
  });

  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it(
    'stops on a busy port with one line naming PORT, exit 4, before the demo seeds anything',
    async () => {
      const { server, port } = await listeningOn();
      try {
        const run = await runService({ PORT: String(port), LEDGER_DEMO: '1', LEDGER_STORE: `sqlite:${store}` });
        expect(onlyLine(run)).toMatchObject({ msg: `llm-ledger: port ${port} is in use — set PORT`, kind: 'address', port, exitCode: EXIT_STARTUP_ADDRESS });
        expect(run.exitCode).toBe(EXIT_STARTUP_ADDRESS);
        expect(existsSync(join(directory, 'var'))).toBe(false);
      } finally {
        server.close();
      }
    },
    START_TIMEOUT_MS,
  );

  it(
    'stops on a busy METRICS_PORT the same way, naming METRICS_PORT',
    async () => {
      const { server, port } = await listeningOn();
      try {
        const run = await runService({ PORT: '0', METRICS_PORT: String(port), LEDGER_STORE: `sqlite:${store}` });
        expect(onlyLine(run)).toMatchObject({ msg: `llm-ledger: port ${port} is in use — set METRICS_PORT`, variable: 'METRICS_PORT' });
        expect(run.exitCode).toBe(EXIT_STARTUP_ADDRESS);
        expect(existsSync(join(directory, 'var'))).toBe(false);
      } finally {
        server.close();
      }
    },
    START_TIMEOUT_MS,
  );

  it(
    'stops on bad variables with one line naming every one of them, exit 2, and writes nothing',
    async () => {
      const run = await runService({
        PORT: 'abc',
        LEDGER_TOKENS: '{"t":{"role":"boss"}}',
        METRICS_PORT: 'x',
        LEDGER_DEMO: '1',
        LEDGER_STORE: `sqlite:${store}`,
      });
      const line = onlyLine(run);
      expect(line).toMatchObject({
        kind: 'configuration',
        problems: [
          'PORT: expected an integer from 0 to 65535, got "abc"',
          'LEDGER_TOKENS entry #1: role must be one of system, auditor, org_admin, org_member',
          'METRICS_PORT: expected an integer from 0 to 65535, got "x"',
        ],
      });
      expect(line.msg).toBe(
        'llm-ledger: invalid configuration — PORT: expected an integer from 0 to 65535, got "abc"; ' +
          'LEDGER_TOKENS entry #1: role must be one of system, auditor, org_admin, org_member; METRICS_PORT: expected an integer from 0 to 65535, got "x"',
      );
      // The token itself is never echoed.
      expect(run.stdout).not.toContain('"t"');
      expect(run.exitCode).toBe(EXIT_STARTUP_CONFIGURATION);
      expect(existsSync(join(directory, 'var'))).toBe(false);
    },
    START_TIMEOUT_MS,
  );

  it(
    'stops on read models another process holds with one line naming LEDGER_READ_STORE, exit 3, before the log is opened',
    async () => {
      mkdirSync(join(directory, 'var'));
      const readStore = join(directory, 'var', 'ledger.read.sqlite');
      // What a running service (or a rebuild) holds on its read models.
      const held = ReadStoreLock.acquire(readStore, 'service');
      try {
        const run = await runService({ PORT: '0', LEDGER_DEMO: '1', LEDGER_STORE: `sqlite:${store}` });
        const line = onlyLine(run);
        expect(line).toMatchObject({ kind: 'store', readStore });
        expect(line.msg).toBe(
          `llm-ledger: the read models at ${readStore} are in use by another running service or a rebuild — ` +
            'stop it, or set LEDGER_READ_STORE to give this instance read models of its own',
        );
        expect(run.exitCode).toBe(EXIT_STARTUP_STORE);
        // Only the holder's lock file (and its journal) is there: the log was never created.
        expect(readdirSync(join(directory, 'var')).filter((name) => !name.startsWith('ledger.read.sqlite.lock'))).toEqual([]);
      } finally {
        held.release();
      }
    },
    START_TIMEOUT_MS,
  );

  it(
    'starts when nothing is wrong: the checks let a free port and free read models through, and the demo seeds',
    async () => {
      const run = await runService({ PORT: '0', LEDGER_DEMO: '1', LEDGER_STORE: `sqlite:${store}` }, (stdout) => stdout.includes('llm-ledger listening on'));
      expect(run.stdout).toContain('llm-ledger demo (LEDGER_DEMO=1)');
      const logLines = run.stdout.split('\n').filter((line) => line.startsWith('{'));
      expect(logLines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toContainEqual(expect.stringMatching(/^llm-ledger listening on 127\.0\.0\.1 port \d+/));
      expect(run.stderr).toBe('');
      expect(existsSync(store)).toBe(true);
    },
    START_TIMEOUT_MS,
  );
});
