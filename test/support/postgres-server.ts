import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chownSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

const run = promisify(execFile);

/** Where Debian's `postgresql` package puts each major version's programs. */
const DEBIAN_POSTGRES_ROOT = '/usr/lib/postgresql';
/** Most a `pg_ctl start` or `stop` may take before the helper gives up, in seconds. */
const PG_CTL_TIMEOUT_SECONDS = 60;
/** Connections the test server accepts: three service instances and their tests fit easily. */
const TEST_SERVER_MAX_CONNECTIONS = 300;

/** The directory holding `initdb`, `pg_ctl` and `postgres`: POSTGRES_BIN, else Debian's newest. */
function postgresBinDir(): string {
  const fromEnv = process.env['POSTGRES_BIN'];
  if (fromEnv) return fromEnv;
  const versions = existsSync(DEBIAN_POSTGRES_ROOT)
    ? readdirSync(DEBIAN_POSTGRES_ROOT)
        .filter((name) => existsSync(join(DEBIAN_POSTGRES_ROOT, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] === undefined) {
    throw new Error(
      `No PostgreSQL server programs found under ${DEBIAN_POSTGRES_ROOT}/<version>/bin (install Debian's "postgresql" package, ` +
        'as .ci/run does, or set POSTGRES_BIN): the PostgreSQL tests need a real server and are never skipped',
    );
  }
  return join(DEBIAN_POSTGRES_ROOT, versions[0], 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** As root, PostgreSQL's programs refuse to run: they run as the `postgres` user instead. */
const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

async function runPostgresProgram(program: string, args: readonly string[]): Promise<void> {
  const [command, commandArgs] = asRoot ? ['runuser', ['-u', 'postgres', '--', program, ...args]] : [program, [...args]];
  await run(command, commandArgs, { timeout: (PG_CTL_TIMEOUT_SECONDS + 10) * 1000 });
}

/**
 * A real PostgreSQL server for one test file: its own data directory (removed on stop), a free TCP
 * port on 127.0.0.1 and its own socket directory, trust authentication for the `postgres` user, and
 * the durability settings a production server has (fsync and synchronous_commit on). Databases are
 * created per test or per suite with `createDatabase`. It can be stopped and started again on the
 * same port and data (a server restart under a live subscription).
 */
export class PostgresTestServer {
  private running = false;

  private constructor(
    private readonly binDir: string,
    private readonly directory: string,
    readonly port: number,
  ) {}

  static async start(): Promise<PostgresTestServer> {
    const binDir = postgresBinDir();
    const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-pg-'));
    if (asRoot) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const uid = Number(stdout.trim());
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      chownSync(directory, uid, Number(gid.trim()));
    }
    const server = new PostgresTestServer(binDir, directory, await freePort());
    try {
      await runPostgresProgram(join(binDir, 'initdb'), ['-D', server.dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
      await server.startAgain();
    } catch (error) {
      await server.stop();
      throw error;
    }
    return server;
  }

  private get dataDir(): string {
    return join(this.directory, 'data');
  }

  /** A connection URL for `database` on this server. */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Creates a fresh, empty database and returns its URL. */
  async createDatabase(name: string): Promise<string> {
    const client = new Client({ connectionString: this.url() });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
    } finally {
      await client.end();
    }
    return this.url(name);
  }

  /** Starts the server (again) on the same port and data directory; resolves once it accepts connections. */
  async startAgain(): Promise<void> {
    const options = [
      `-p ${this.port}`,
      `-k ${this.directory}`,
      "-c listen_addresses='127.0.0.1'",
      `-c max_connections=${TEST_SERVER_MAX_CONNECTIONS}`,
      '-c fsync=on',
      '-c synchronous_commit=on',
    ].join(' ');
    const log = join(this.directory, 'server.log');
    await runPostgresProgram(join(this.binDir, 'pg_ctl'), ['-D', this.dataDir, '-o', options, '-l', log, '-w', '-t', String(PG_CTL_TIMEOUT_SECONDS), 'start']).catch(
      (error: unknown) => {
        const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-20).join('\n') : '';
        throw new Error(`pg_ctl start failed: ${(error as Error).message}\n${tail}`);
      },
    );
    this.running = true;
  }

  /** Stops the server (fast shutdown: open connections are cut, as in a restart), keeping its data. */
  async stopServer(): Promise<void> {
    if (!this.running) return;
    await runPostgresProgram(join(this.binDir, 'pg_ctl'), ['-D', this.dataDir, '-m', 'fast', '-w', '-t', String(PG_CTL_TIMEOUT_SECONDS), 'stop']);
    this.running = false;
  }

  /** Stops the server and removes its data directory. */
  async stop(): Promise<void> {
    try {
      await this.stopServer();
    } finally {
      rmSync(this.directory, { recursive: true, force: true });
    }
  }
}
