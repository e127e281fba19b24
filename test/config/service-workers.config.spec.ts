import { describeStartupFailure, preflight } from '../../src/composition/service-startup';
import { DEFAULT_LEDGER_WORKERS, MAX_LEDGER_WORKERS, parseLedgerWorkers, workerReadStorePath } from '../../src/config/service-workers.config';
import { parseStoreUrl } from '../../src/event-store/open-event-store';

/**
 * LEDGER_WORKERS (docs/deploying.md "Workers", issue 35): read and validated with the other
 * variables at start, a bad value named in the one line a failed start prints; each worker's read
 * models in a file of its own beside LEDGER_READ_STORE.
 */
describe('LEDGER_WORKERS is validated at start and names itself when bad', () => {
  const file = parseStoreUrl('sqlite:./var/ledger.sqlite');

  it('defaults to DEFAULT_LEDGER_WORKERS and reads 1 to MAX_LEDGER_WORKERS, spaces around allowed', () => {
    const read = (value: string | undefined) => parseLedgerWorkers({ LEDGER_WORKERS: value }, file, []);
    expect(read(undefined)).toBe(DEFAULT_LEDGER_WORKERS);
    expect(read(' ')).toBe(DEFAULT_LEDGER_WORKERS);
    expect(read(' 2 ')).toBe(2);
    expect(read(String(MAX_LEDGER_WORKERS))).toBe(MAX_LEDGER_WORKERS);
  });

  it.each(['0', '-1', '2.5', 'two', String(MAX_LEDGER_WORKERS + 1)])('refuses "%s", naming the variable and the range', (value) => {
    const problems: string[] = [];
    parseLedgerWorkers({ LEDGER_WORKERS: value }, file, problems);
    expect(problems).toEqual([`LEDGER_WORKERS: expected an integer from 1 to ${MAX_LEDGER_WORKERS}, got "${value}"`]);
  });

  it('refuses several workers on an in-memory log, which lives in one process', () => {
    const problems: string[] = [];
    parseLedgerWorkers({ LEDGER_WORKERS: '2' }, parseStoreUrl('sqlite::memory:'), problems);
    expect(problems).toEqual(['LEDGER_WORKERS: 2 workers need a log they can share; an in-memory log (sqlite::memory:) lives in one process']);
    expect(parseLedgerWorkers({ LEDGER_WORKERS: '1' }, parseStoreUrl('sqlite::memory:'), [])).toBe(1);
  });

  it('stops the start in one configuration line naming LEDGER_WORKERS, with the other bad variables', async () => {
    const error = await preflight({ LEDGER_WORKERS: 'many', METRICS_PORT: 'x' }).catch((caught: unknown) => caught);
    const failure = describeStartupFailure(error);
    expect(failure).toMatchObject({ kind: 'configuration', exitCode: 2 });
    expect(failure.message).toBe(
      `llm-ledger: invalid configuration — METRICS_PORT: expected an integer from 0 to 65535, got "x"; LEDGER_WORKERS: expected an integer from 1 to ${MAX_LEDGER_WORKERS}, got "many"`,
    );
  });

  it('gives worker 1 LEDGER_READ_STORE and worker k a file of its own beside it', () => {
    expect(workerReadStorePath('var/ledger.read.sqlite', 1)).toBe('var/ledger.read.sqlite');
    expect(workerReadStorePath('var/ledger.read.sqlite', 2)).toBe('var/ledger.read.worker-2.sqlite');
    expect(workerReadStorePath('/data/read-models', 3)).toBe('/data/read-models.worker-3.sqlite');
    expect(workerReadStorePath(':memory:', 2)).toBe(':memory:');
  });
});
