import { join } from 'node:path';
import { ALL_PROJECTIONS, BALANCE_COLLECTION, BALANCES_PROJECTION, type BalanceView } from '../../projections';
import { EXIT_FAILURE } from '../../src/cli/cli-io';
import { runCli } from '../../src/cli/run-cli';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { compareReadModels, openReadModelStore, readModelPathFor, rebuildProjections, ReadStoreLock, ReadStoreLockedError } from '../../src/projection-runner';
import { ledgerWithHistory, type AuditedLedger } from './ledger-fixture';
import { MemoryIo } from './support/memory-io';

describe('projections rebuild beside a running service (issue 13): refused by the read store’s lock, and survived if done anyway', () => {
  let audited: AuditedLedger;
  let readPath: string;

  beforeAll(async () => {
    audited = await ledgerWithHistory();
    readPath = readModelPathFor(audited.ledger.logPath);
  });

  afterAll(() => audited.ledger.close());

  it('refuses to rebuild while the service holds the lock, touching nothing (exit 3, saying why)', async () => {
    const io = new MemoryIo();
    const exitCode = await runCli(['projections', 'rebuild', '--store', `sqlite:${audited.ledger.logPath}`], { io, env: {} });
    expect(exitCode).toBe(EXIT_FAILURE);
    expect(io.stderrText).toMatch(/read models at .* are in use \(a running service or another rebuild holds .*\.lock\); stop it first/);
    expect(io.stdoutText).toBe('');
  });

  it('keeps a service from starting on read models a rebuild holds, and lets the next one take the lock once released', () => {
    const other = join(audited.ledger.directory, 'other.read.sqlite');
    const rebuild = ReadStoreLock.acquire(other, 'rebuild');
    expect(() => ReadStoreLock.acquire(other, 'service')).toThrow(ReadStoreLockedError);
    rebuild.release();
    ReadStoreLock.acquire(other, 'service').release();
  });

  it('recovers when its read store was rewritten under it anyway: re-reads the checkpoints and catches up, instead of 503 forever', async () => {
    // What a rebuild does first, done beside the running service by a writer that ignores the lock.
    const beside = openReadModelStore({ path: readPath });
    for (const projection of ALL_PROJECTIONS) beside.resetProjection(projection.name, projection.version);
    beside.close();

    // The service goes on: its next live batch finds the checkpoints moved.
    await audited.ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.answer', organizationId: 'acme', input: { question: 'q' } }));
    await audited.ledger.runner.caughtUp({ signal: AbortSignal.timeout(10_000) });
    expect((await audited.ledger.runner.lag()).filter((projection) => projection.faulted)).toEqual([]);

    const balance = audited.readStore.get<BalanceView>(BALANCES_PROJECTION, BALANCE_COLLECTION, 'acme');
    expect(balance).toMatchObject({ charged: 3 * audited.runs[0]!.charge, held: 0, running: 0 });

    // And what it rebuilt equals a rebuild from scratch.
    const scratch = openReadModelStore({ path: ':memory:' });
    try {
      await rebuildProjections({ eventStore: audited.ledger.store, store: scratch, projections: ALL_PROJECTIONS });
      const comparison = compareReadModels({ actual: audited.readStore, expected: scratch, projections: ALL_PROJECTIONS.map((projection) => projection.name) });
      expect(comparison.projections.filter((projection) => !projection.equal)).toEqual([]);
    } finally {
      scratch.close();
    }
  });
});
