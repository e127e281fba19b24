/**
 * Issue 35: one stream's queue of decisions does not wait for a batch's fsync before deciding the
 * next (src/aggregates/aggregate.repository.ts, AppendOptions.onCommitted): the next batch is decided
 * on the committed state, and each caller is still answered only once its append is on disk.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { grant, placeHold, settleHold } from '../accounts/account.fixtures';
import { closeReleasingFsyncs, HeldFsync, nextTurn, observed } from '../support/held-fsync';

const ACCOUNT = accountStreamName('acme');
const directory = mkdtempSync(join(tmpdir(), 'ledger-commit-pipeline-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const settle = nextTurn;

describe('issue 35, docs/deploying.md "Commands on one stream are decided together": the next batch on a stream is decided at the commit of the one before, not after its fsync', () => {
  let fsync: HeldFsync;
  let store: SqliteEventStore;
  let repository: AggregateRepository;

  beforeEach(async () => {
    fsync = new HeldFsync();
    store = openSqliteEventStore({ path: join(directory, `${randomUUID()}.sqlite`), ...fsync.storeOptions });
    repository = new AggregateRepository(store);
    const granted = repository.handle(ACCOUNT, accountDecider, grant(1_000));
    await settle();
    fsync.release();
    await granted;
  });

  afterEach(() => closeReleasingFsyncs(store, fsync));

  it('commits the second batch while the first waits for its fsync, and answers each only once it is on disk', async () => {
    const first = observed(repository.handle(ACCOUNT, accountDecider, placeHold('inv-1', 100)));
    await settle();
    const second = observed(repository.handle(ACCOUNT, accountDecider, placeHold('inv-2', 100)));
    await settle();
    await settle();

    // Before issue 35 the second hold was decided only once the first's fsync returned: one commit.
    expect(await store.streamRevision(ACCOUNT)).toBe(2n);
    expect([first.state(), second.state()]).toEqual(['pending', 'pending']);
    fsync.release();
    await settle();
    expect([first.state(), second.state()]).toEqual(['resolved', 'pending']);
    while (fsync.held.length > 0) fsync.release();
    await settle();
    expect(second.state()).toBe('resolved');
  });

  it('in a batch made durable for one caller, answers a caller that asked to hear of the commit (acknowledgeOnCommit) at the commit, the other once on disk', async () => {
    const held = repository.handle(ACCOUNT, accountDecider, placeHold('inv-1', 100));
    await settle();
    fsync.release();
    await held;
    // A settlement (durable) and a hold (acknowledged at COMMIT) queued together: one batch, one append.
    const blocker = observed(repository.handle(ACCOUNT, accountDecider, placeHold('inv-0', 1)));
    const settlement = observed(repository.handle(ACCOUNT, accountDecider, settleHold('inv-1', 40)));
    const hold = observed(repository.handle(ACCOUNT, accountDecider, placeHold('inv-2', 100), { acknowledgeOnCommit: true }));
    await settle();
    await settle();

    expect(await store.streamRevision(ACCOUNT)).toBe(4n);
    expect([blocker.state(), settlement.state(), hold.state()]).toEqual(['pending', 'pending', 'resolved']);
    while (fsync.held.length > 0) fsync.release();
    await settle();
    expect([blocker.state(), settlement.state(), hold.state()]).toEqual(['resolved', 'resolved', 'resolved']);
  });

  it('fails the batch a failed fsync was to make durable and the batch decided on it', async () => {
    const first = observed(repository.handle(ACCOUNT, accountDecider, placeHold('inv-1', 100)));
    await settle();
    const second = observed(repository.handle(ACCOUNT, accountDecider, placeHold('inv-2', 100)));
    await settle();
    await settle();
    fsync.release(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    await settle();

    expect([first.state(), second.state()]).toEqual(['rejected', 'rejected']);
    await expect(repository.handle(ACCOUNT, accountDecider, placeHold('inv-3', 100))).rejects.toThrow(/could not be made durable/);
  });
});
