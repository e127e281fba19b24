import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedWorkerEnv } from '../../src/composition/service-workers';
import { loadLedgerConfig } from '../../src/config/ledger.config';

/**
 * What the primary of LEDGER_WORKERS gives every worker (docs/deploying.md "Workers"): no
 * METRICS_PORT (it serves that for all), and on a server's log without LEDGER_IDEMPOTENCY_SECRET one
 * secret kept beside LEDGER_READ_STORE, created with its folder on a first start, so all workers
 * recognise each other's requests.
 */
describe('the workers share one idempotency secret and leave METRICS_PORT to the primary', () => {
  let directory: string;
  beforeEach(() => (directory = mkdtempSync(join(tmpdir(), 'llm-ledger-workers-env-'))));
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('on a PostgreSQL log: the same generated secret every time, its folder created on a first start', () => {
    const ledger = loadLedgerConfig({ LEDGER_STORE: 'postgres://ledger:secret@127.0.0.1:5432/ledger', LEDGER_READ_STORE: join(directory, 'not-yet', 'read.sqlite') });
    const first = sharedWorkerEnv({ ledger });
    expect(first).toEqual({ METRICS_PORT: '', LEDGER_IDEMPOTENCY_SECRET: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(sharedWorkerEnv({ ledger })).toEqual(first);
  });

  it('on the embedded log, or with LEDGER_IDEMPOTENCY_SECRET set, gives no secret: each worker reads the same one', () => {
    expect(sharedWorkerEnv({ ledger: loadLedgerConfig({ LEDGER_STORE: `sqlite:${join(directory, 'ledger.sqlite')}` }) })).toEqual({ METRICS_PORT: '' });
    const set = loadLedgerConfig({ LEDGER_STORE: 'postgres://ledger:secret@127.0.0.1:5432/ledger', LEDGER_IDEMPOTENCY_SECRET: 'x'.repeat(32), LEDGER_READ_STORE: join(directory, 'read.sqlite') });
    expect(sharedWorkerEnv({ ledger: set })).toEqual({ METRICS_PORT: '' });
  });
});
