import Database from 'better-sqlite3';
import { Writable } from 'node:stream';
import { ConfigurationError } from '../../src/config/ledger.config';
import { PostgresAsyncCommitError } from '../../src/event-store/postgres/postgres-event-store';
import {
  describeStartupFailure,
  EXIT_STARTUP_ADDRESS,
  EXIT_STARTUP_CONFIGURATION,
  EXIT_STARTUP_STORE,
  EXIT_STARTUP_UNEXPECTED,
  logStartupFailure,
} from '../../src/composition/service-startup';

/** A listen error as Node (and Fastify after it) raises it when the port is taken after the check. */
function listenError(code: string, port: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`listen ${code}: address already in use 127.0.0.1:${port}`), { code, syscall: 'listen', address: '127.0.0.1', port });
}

describe('A failed start, in words and an exit status by kind (issue 26, finding 3)', () => {
  it.each([
    [new ConfigurationError(['PORT: expected an integer from 0 to 65535, got "abc"']), 'configuration', EXIT_STARTUP_CONFIGURATION, 'llm-ledger: invalid configuration — PORT: expected an integer from 0 to 65535, got "abc"'],
    [listenError('EADDRINUSE', 3000), 'address', EXIT_STARTUP_ADDRESS, 'llm-ledger: port 3000 is in use — set PORT'],
    [listenError('EACCES', 80), 'address', EXIT_STARTUP_ADDRESS, 'llm-ledger: port 80 needs privileges this user does not have — set PORT'],
    [listenError('EADDRNOTAVAIL', 3000), 'address', EXIT_STARTUP_ADDRESS, 'llm-ledger: HOST 127.0.0.1 is not an address of this machine — set HOST'],
    [
      Object.assign(new Error("EACCES: permission denied, mkdir '/srv/var'"), { code: 'EACCES', path: '/srv/var' }),
      'store',
      EXIT_STARTUP_STORE,
      'llm-ledger: /srv/var could not be written (EACCES) — check LEDGER_STORE, LEDGER_READ_STORE and LEDGER_ANSWER_STORE',
    ],
  ])('%s → %s, exit %d', (error, kind, exitCode, message) => {
    expect(describeStartupFailure(error)).toMatchObject({ kind, exitCode, message });
  });

  it('calls a SQLite file that cannot be opened a store failure', () => {
    // What better-sqlite3 throws for LEDGER_STORE pointing at a file that is not a SQLite database.
    const error = new Database.SqliteError('file is not a database', 'SQLITE_NOTADB');
    expect(describeStartupFailure(error)).toMatchObject({
      kind: 'store',
      exitCode: EXIT_STARTUP_STORE,
      message: 'llm-ledger: a SQLite store could not be opened (file is not a database) — check LEDGER_STORE, LEDGER_READ_STORE and LEDGER_ANSWER_STORE',
    });
  });

  it('calls a PostgreSQL server with synchronous_commit off a store failure, in the one line that names the setting and its override', () => {
    const error = new PostgresAsyncCommitError('PostgreSQL synchronous_commit is off … or set LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT=1 to accept that');
    expect(describeStartupFailure(error)).toMatchObject({
      kind: 'store',
      exitCode: EXIT_STARTUP_STORE,
      message: `llm-ledger: ${error.message}`,
    });
  });

  it('writes anything unforeseen as one pino line, exit 1, its stack inside the JSON rather than on lines of its own', () => {
    const failure = describeStartupFailure(new TypeError('x is not a function'));
    expect(failure).toMatchObject({ kind: 'unexpected', exitCode: EXIT_STARTUP_UNEXPECTED, message: 'llm-ledger: could not start: x is not a function' });
    let written = '';
    logStartupFailure(
      failure,
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          written += chunk.toString('utf8');
          done();
        },
      }),
    );
    const lines = written.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 60, context: 'Startup', kind: 'unexpected', exitCode: 1, err: { type: 'TypeError', stack: expect.stringContaining('TypeError: x is not a function') } });
  });
});
