import { ConfigurationError, DEFAULT_HOST, DEFAULT_PORT, DEFAULT_STORE, loadLedgerConfig } from '../../src/config/ledger.config';
import { DEFAULT_PROJECTION_WORKER_NICE, MAX_PROJECTION_WORKER_NICE } from '../../src/projection-runner/worker/projection-worker.host';

describe('configuration from the environment (README.md "Configuration")', () => {
  it('starts on the embedded store at port 3000 when nothing is set', () => {
    const config = loadLedgerConfig({});
    expect(config.port).toBe(DEFAULT_PORT);
    expect(config.host).toBe(DEFAULT_HOST);
    expect(config.store).toEqual({ kind: 'sqlite', path: DEFAULT_STORE.slice('sqlite:'.length) });
    expect(config.readStorePath).toBe('./var/ledger.read.sqlite');
    expect(config.sqliteSynchronous).toBe('FULL');
    expect(config.tokens.size).toBe(0);
    expect(config.demo).toBe(false);
  });

  it('commits the embedded log with synchronous=FULL by default; NORMAL only when asked for (issue 24)', () => {
    expect(loadLedgerConfig({ LEDGER_SQLITE_SYNCHRONOUS: 'normal' }).sqliteSynchronous).toBe('NORMAL');
    expect(loadLedgerConfig({}, { synchronous: 'NORMAL' }).sqliteSynchronous).toBe('NORMAL');
    expect(loadLedgerConfig({ LEDGER_SQLITE_SYNCHRONOUS: 'NORMAL' }, { synchronous: 'FULL' }).sqliteSynchronous).toBe('FULL');
  });

  it('runs recovery every 60 s on requests idle for 5 minutes unless told otherwise; 0 turns it off (issue 24)', () => {
    expect(loadLedgerConfig({}).recovery).toEqual({ intervalMs: 60_000, staleAfterMs: 300_000 });
    expect(loadLedgerConfig({ LEDGER_RECOVERY_INTERVAL_MS: '5000', LEDGER_RECOVERY_STALE_AFTER_MS: '1000' }).recovery).toEqual({ intervalMs: 5_000, staleAfterMs: 1_000 });
    expect(loadLedgerConfig({ LEDGER_RECOVERY_INTERVAL_MS: '0' }).recovery.intervalMs).toBe(0);
    // The module's options win over the variables.
    expect(loadLedgerConfig({ LEDGER_RECOVERY_INTERVAL_MS: '5000' }, { recoveryIntervalMs: 0 }).recovery.intervalMs).toBe(0);
    expect(loadLedgerConfig({}, { recoveryStaleAfterMs: 2_000 }).recovery.staleAfterMs).toBe(2_000);
  });

  it('gives each instance a 30 s lease unless told otherwise, from 1 s to 5 minutes (issue 31)', () => {
    expect(loadLedgerConfig({}).leaseDurationMs).toBe(30_000);
    expect(loadLedgerConfig({ LEDGER_LEASE_DURATION_MS: '5000' }).leaseDurationMs).toBe(5_000);
  });

  it.each([
    ['LEDGER_LEASE_DURATION_MS', '999', /LEDGER_LEASE_DURATION_MS: expected an integer from 1000 to 300000 ms, got "999"/],
    ['LEDGER_LEASE_DURATION_MS', '300001', /LEDGER_LEASE_DURATION_MS: expected/],
    ['LEDGER_RECOVERY_INTERVAL_MS', '999', /LEDGER_RECOVERY_INTERVAL_MS: expected 0 \(off\) or an integer from 1000 to 86400000 ms, got "999"/],
    ['LEDGER_RECOVERY_INTERVAL_MS', '1e4', /LEDGER_RECOVERY_INTERVAL_MS: expected/],
    ['LEDGER_RECOVERY_STALE_AFTER_MS', '0', /LEDGER_RECOVERY_STALE_AFTER_MS: expected an integer from 1000 to 604800000 ms, got "0"/],
    ['LEDGER_RECOVERY_STALE_AFTER_MS', '604800001', /LEDGER_RECOVERY_STALE_AFTER_MS: expected/],
  ])('refuses %s=%s at start, naming the variable', (name, value, message) => {
    expect(() => loadLedgerConfig({ [name]: value })).toThrow(message);
  });

  it('runs the projections on a worker thread for the embedded store in a file, on the event loop otherwise', () => {
    expect(loadLedgerConfig({}).projectionsThread).toBe('worker');
    expect(loadLedgerConfig({ LEDGER_PROJECTIONS_THREAD: 'main' }).projectionsThread).toBe('main');
    expect(loadLedgerConfig({ LEDGER_STORE: 'sqlite::memory:' }).projectionsThread).toBe('main');
    expect(loadLedgerConfig({ LEDGER_STORE: 'esdb://localhost:2113?tls=false' }).projectionsThread).toBe('main');
    expect(loadLedgerConfig({ LEDGER_STORE: 'postgres://ledger:secret@localhost/ledger' }).projectionsThread).toBe('main');
    expect(() => loadLedgerConfig({ LEDGER_STORE: 'postgres://ledger:secret@localhost/ledger', LEDGER_PROJECTIONS_THREAD: 'worker' })).toThrow(
      /LEDGER_PROJECTIONS_THREAD: worker needs the embedded store .*not :memory:, PostgreSQL or EventStoreDB/,
    );
    expect(() => loadLedgerConfig({ LEDGER_STORE: 'esdb://localhost:2113?tls=false', LEDGER_PROJECTIONS_THREAD: 'worker' })).toThrow(
      /LEDGER_PROJECTIONS_THREAD: worker needs the embedded store/,
    );
    expect(() => loadLedgerConfig({ LEDGER_PROJECTIONS_THREAD: 'fiber' })).toThrow(/LEDGER_PROJECTIONS_THREAD: expected worker or main, got "fiber"/);
  });

  it('runs the projection worker at nice DEFAULT_PROJECTION_WORKER_NICE unless LEDGER_PROJECTIONS_NICE says otherwise (0 to 19), and refuses it where the projections run on the main thread', () => {
    expect(loadLedgerConfig({}).projectionsNice).toBe(DEFAULT_PROJECTION_WORKER_NICE);
    expect(loadLedgerConfig({ LEDGER_PROJECTIONS_NICE: '0' }).projectionsNice).toBe(0);
    expect(loadLedgerConfig({ LEDGER_PROJECTIONS_NICE: ' 19 ' }).projectionsNice).toBe(MAX_PROJECTION_WORKER_NICE);
    for (const value of ['-1', '20', '5.5', 'low', '0x5']) {
      expect(() => loadLedgerConfig({ LEDGER_PROJECTIONS_NICE: value })).toThrow(`LEDGER_PROJECTIONS_NICE: expected an integer from 0 to 19, got "${value}"`);
    }
    for (const env of [{ LEDGER_PROJECTIONS_THREAD: 'main' }, { LEDGER_STORE: 'sqlite::memory:' }, { LEDGER_STORE: 'esdb://localhost:2113?tls=false' }, { LEDGER_STORE: 'postgres://ledger:secret@localhost/ledger' }]) {
      expect(() => loadLedgerConfig({ ...env, LEDGER_PROJECTIONS_NICE: '5' })).toThrow(/LEDGER_PROJECTIONS_NICE: sets the priority of the projection worker thread, and the projections run on the main thread here/);
    }
  });

  it('listens on 127.0.0.1 unless HOST asks for another interface, so the demo’s public tokens stay on this machine', () => {
    expect(DEFAULT_HOST).toBe('127.0.0.1');
    expect(loadLedgerConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadLedgerConfig({ HOST: '::' }).host).toBe('::');
    expect(loadLedgerConfig({ HOST: 'localhost' }).host).toBe('localhost');
    expect(() => loadLedgerConfig({ HOST: 'http://0.0.0.0' })).toThrow(/HOST: expected an IP address or a host name/);
  });

  it('takes LEDGER_IDEMPOTENCY_SECRET as the fingerprint key, and refuses one too short to be a key', () => {
    expect(loadLedgerConfig({}).idempotencySecret).toBeUndefined();
    expect(loadLedgerConfig({ LEDGER_IDEMPOTENCY_SECRET: 'x'.repeat(32) }).idempotencySecret).toBe('x'.repeat(32));
    expect(() => loadLedgerConfig({ LEDGER_IDEMPOTENCY_SECRET: 'short' })).toThrow(/LEDGER_IDEMPOTENCY_SECRET: expected at least 32 characters, got 5/);
  });

  it('accepts EventStoreDB and KurrentDB connection strings', () => {
    expect(loadLedgerConfig({ LEDGER_STORE: 'esdb://localhost:2113?tls=false' }).store).toEqual({
      kind: 'eventstoredb',
      connectionString: 'esdb://localhost:2113?tls=false',
    });
    const kurrent = loadLedgerConfig({ LEDGER_STORE: 'kurrentdb+discover://a:2113' });
    expect(kurrent.store.kind).toBe('eventstoredb');
    expect(kurrent.readStorePath).toBe('./var/read-models.sqlite');
  });

  it('refuses an unparsable LEDGER_STORE with a message naming the variable', () => {
    expect(() => loadLedgerConfig({ LEDGER_STORE: 'mysql://x' })).toThrow(/LEDGER_STORE: unsupported store URL/);
  });

  it('reads LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT: off unless 1, and refuses anything but 1 or 0 naming the variable', () => {
    expect(loadLedgerConfig({ LEDGER_STORE: 'postgres://ledger@db/ledger' })).toMatchObject({
      store: { kind: 'postgres', connectionString: 'postgres://ledger@db/ledger' },
      postgresAllowAsyncCommit: false,
    });
    expect(loadLedgerConfig({ LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT: '1' }).postgresAllowAsyncCommit).toBe(true);
    expect(() => loadLedgerConfig({ LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT: 'yes' })).toThrow(/LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT: expected 1 or 0/);
  });

  it('lists every bad variable at once, so one restart fixes them all', () => {
    try {
      loadLedgerConfig({ PORT: 'eighty', LEDGER_SQLITE_SYNCHRONOUS: 'OFF', LEDGER_TOKENS: '{', LEDGER_DEMO: 'yes' });
      throw new Error('expected a ConfigurationError');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      const problems = (error as ConfigurationError).problems.join('\n');
      expect(problems).toMatch(/PORT/);
      expect(problems).toMatch(/LEDGER_SQLITE_SYNCHRONOUS/);
      expect(problems).toMatch(/LEDGER_TOKENS/);
      expect(problems).toMatch(/LEDGER_DEMO/);
    }
  });

  it('reads tokens with their roles and refuses an organization role without its organization', () => {
    const config = loadLedgerConfig({
      LEDGER_TOKENS: JSON.stringify({ t1: { role: 'system' }, t2: { role: 'org_admin', organizationId: 'acme' } }),
    });
    expect(config.tokens.get('t1')).toEqual({ role: 'system' });
    expect(config.tokens.get('t2')).toEqual({ role: 'org_admin', organizationId: 'acme' });
    expect(() => loadLedgerConfig({ LEDGER_TOKENS: JSON.stringify({ t3: { role: 'org_member' } }) })).toThrow(
      /needs an organizationId/,
    );
  });

  it('never repeats a token in its error message, because tokens are secrets', () => {
    const secret = 'sk-very-secret-token';
    expect(() => loadLedgerConfig({ LEDGER_TOKENS: JSON.stringify({ [secret]: { role: 'root' } }) })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(secret) }),
    );
  });

  it('reads the Anthropic key and base URL, and treats a blank key as none so the service runs offline', () => {
    const key = 'sk-ant-test-key';
    expect(loadLedgerConfig({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: 'http://127.0.0.1:8080' })).toMatchObject({
      anthropicApiKey: key,
      anthropicBaseUrl: 'http://127.0.0.1:8080',
    });
    expect(loadLedgerConfig({ ANTHROPIC_API_KEY: '   ' }).anthropicApiKey).toBeUndefined();
  });

  it('refuses a base URL that is not http(s), naming the variable and never the key', () => {
    const key = 'sk-ant-secret';
    expect(() => loadLedgerConfig({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: 'ftp://example.invalid' })).toThrow(
      expect.objectContaining({ message: expect.stringMatching(/ANTHROPIC_BASE_URL/) }),
    );
    expect(() => loadLedgerConfig({ ANTHROPIC_API_KEY: key, ANTHROPIC_BASE_URL: 'ftp://example.invalid' })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining(key) }),
    );
  });
});
