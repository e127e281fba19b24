import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/event-store/event-store.port';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import type { FsyncFile } from '../../src/event-store/sqlite/wal-sync';
import { newEvent } from './event-store.contract';

const directory = mkdtempSync(join(tmpdir(), 'ledger-durable-ack-'));
const newDatabasePath = (): string => join(directory, `${randomUUID()}.sqlite`);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** An fsync the test releases by hand: each call waits in `held` until `release` answers it. */
class HeldFsync {
  readonly held: Array<(error: NodeJS.ErrnoException | null) => void> = [];
  calls = 0;
  readonly fsyncFile: FsyncFile = (_fd, done) => {
    this.calls++;
    this.held.push(done);
  };

  release(error: NodeJS.ErrnoException | null = null): void {
    this.held.shift()!(error);
  }
}

/** Lets every callback queued so far run (the group commit's microtask and the next turn). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function observed<T>(promise: Promise<T>): { readonly state: () => 'pending' | 'resolved' | 'rejected'; readonly error: () => unknown } {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  let error: unknown;
  promise.then(
    () => (state = 'resolved'),
    (reason: unknown) => {
      state = 'rejected';
      error = reason;
    },
  );
  return { state: () => state, error: () => error };
}

describe('issue 24: an acknowledged append is on disk (synchronous=FULL), its fsync off the event loop', () => {
  let fsync: HeldFsync;
  let store: SqliteEventStore;

  beforeEach(() => {
    fsync = new HeldFsync();
    store = openSqliteEventStore({ path: newDatabasePath(), fsyncFile: fsync.fsyncFile });
  });

  afterEach(async () => {
    while (fsync.held.length > 0) fsync.release();
    const closing = store.close();
    await settle();
    while (fsync.held.length > 0) fsync.release();
    await closing;
  });

  it('commits at once but acknowledges only after the WAL fsync returned, and says FULL', async () => {
    const append = observed(store.append('durable-1', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();

    expect(store.groupCommitStats.transactions).toBeGreaterThan(0);
    expect(fsync.calls).toBe(1);
    expect(append.state()).toBe('pending');
    fsync.release();
    await settle();
    expect(append.state()).toBe('resolved');
    expect(store.synchronous).toBe('FULL');
  });

  it('lets decisions read a commit still waiting for its fsync, but not readers of $all, subscriptions or the head', async () => {
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribeToAll(async (event) => void seen.push(event));
    void store.append('durable-2', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();

    expect(await store.readStream('durable-2')).toHaveLength(1);
    expect(await store.readAll()).toHaveLength(0);
    expect(await store.headPosition()).toBeUndefined();
    expect(seen).toHaveLength(0);

    fsync.release();
    await settle();
    await settle();
    expect(await store.readAll()).toHaveLength(1);
    expect(await store.headPosition()).toBe(1n);
    expect(seen.map((event) => event.streamName)).toEqual(['durable-2']);
    await subscription.stop();
  });

  it('covers every commit made while one fsync runs with the next single fsync (group commit across commits)', async () => {
    const first = observed(store.append('group-0', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    const later = Array.from({ length: 5 }, (_, index) => observed(store.append(`group-${index + 1}`, [newEvent()], { expectedRevision: 'no_stream' })));
    await settle();
    await settle();
    expect(store.groupCommitStats.appends).toBe(6);
    expect(fsync.calls).toBe(1);

    fsync.release();
    await settle();
    expect(first.state()).toBe('resolved');
    expect(later.map((append) => append.state())).toEqual(Array(5).fill('pending'));
    expect(fsync.calls).toBe(2);
    fsync.release();
    await settle();
    expect(later.map((append) => append.state())).toEqual(Array(5).fill('resolved'));
  });

  it("tells an append that asked for acknowledge 'committed' at COMMIT; readers and subscriptions still wait for the fsync", async () => {
    const early = observed(store.append('early-1', [newEvent()], { expectedRevision: 'no_stream', acknowledge: 'committed' }));
    const durable = observed(store.append('early-2', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    expect(early.state()).toBe('resolved');
    expect(durable.state()).toBe('pending');
    expect(await store.readAll()).toHaveLength(0);
    fsync.release();
    await settle();
    expect(durable.state()).toBe('resolved');
    expect(await store.readAll()).toHaveLength(2);
    await expect(store.append('early-3', [newEvent()], { expectedRevision: 'no_stream', acknowledge: 'soon' as never })).rejects.toThrow(/options.acknowledge/);
  });

  it('fails the appends a failed fsync was to make durable, and refuses every append after it', async () => {
    const append = observed(store.append('lost-1', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    fsync.release(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    await settle();

    expect(append.state()).toBe('rejected');
    expect(String(append.error())).toMatch(/could not be made durable .*EIO.*restart the service/);
    await expect(store.append('lost-2', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/could not be made durable/);
  });

  it('answers a retried append whose first attempt committed only once that commit is on disk, and fails it with that fsync', async () => {
    const event = newEvent();
    const first = observed(store.append('retried-1', [event], { expectedRevision: 'no_stream' }));
    await settle();
    // The same append sent again (the same event ids) while its first commit waits for its fsync:
    // its group writes nothing, but it is not on disk yet either.
    const retry = observed(store.append('retried-1', [event], { expectedRevision: 'no_stream' }));
    await settle();
    expect([first.state(), retry.state()]).toEqual(['pending', 'pending']);

    fsync.release(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    await settle();
    expect([first.state(), retry.state()]).toEqual(['rejected', 'rejected']);
    expect(String(retry.error())).toMatch(/could not be made durable/);
  });

  it('answers at once a retried append whose commit is already on disk, with its first result', async () => {
    const event = newEvent();
    const first = store.append('retried-2', [event], { expectedRevision: 'no_stream' });
    await settle();
    fsync.release();
    const result = await first;
    const retry = observed(store.append('retried-2', [event], { expectedRevision: 'no_stream' }));
    await settle();
    // Nothing else waits for the disk, so nothing holds the answer back.
    expect(retry.state()).toBe('resolved');
    await expect(store.append('retried-2', [event], { expectedRevision: 'no_stream' })).resolves.toEqual(result);
  });

  it('waits for the fsync in flight before closing the file', async () => {
    void store.append('closing-1', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();
    const closing = observed(store.close());
    await settle();
    expect(closing.state()).toBe('pending');
    fsync.release();
    await settle();
    expect(closing.state()).toBe('resolved');
  });
});

describe('after a failed fsync the store commits nothing more', () => {
  it('fails an append queued before the failure was known (waiting for the end of the turn) and writes none of it', async () => {
    const fsync = new HeldFsync();
    // No eager commits: every group waits for the end of the turn, as a busy turn's overflow does.
    const store = openSqliteEventStore({ path: newDatabasePath(), fsyncFile: fsync.fsyncFile, eagerCommitsPerTurn: 0 });
    const lost = observed(store.append('failed-1', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    expect(fsync.held).toHaveLength(1);
    // Queued in the same turn as the failure, before the store commits it.
    const queued = observed(store.append('failed-2', [newEvent()], { expectedRevision: 'no_stream', acknowledge: 'committed' }));
    fsync.release(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
    await settle();

    expect([lost.state(), queued.state()]).toEqual(['rejected', 'rejected']);
    expect(String(queued.error())).toMatch(/could not be made durable/);
    expect(await store.readStream('failed-2')).toEqual([]);
    // The commit the fsync failed to make durable stays hidden from $all and the head.
    expect(await store.readAll()).toEqual([]);
    expect(await store.headPosition()).toBeUndefined();
    await store.close();
  });
});

describe('issue 24: synchronous=NORMAL is the opt-in that never fsyncs', () => {
  it('acknowledges after COMMIT without an fsync', async () => {
    const fsync = new HeldFsync();
    const store = openSqliteEventStore({ path: newDatabasePath(), synchronous: 'NORMAL', fsyncFile: fsync.fsyncFile });
    await store.append('fast-1', [newEvent()], { expectedRevision: 'no_stream' });
    expect(fsync.calls).toBe(0);
    expect(store.synchronous).toBe('NORMAL');
    await store.close();
  });
});

describe('a follower connection (the projection worker) reads no commit its writer has not made durable', () => {
  it("stops $all, its head and its subscriptions before the writer's first commit still waiting for its fsync, and reads other writers' commits", async () => {
    const path = newDatabasePath();
    const fsync = new HeldFsync();
    const writer = openSqliteEventStore({ path, fsyncFile: fsync.fsyncFile });
    const follower = openSqliteEventStore({ path, follows: { unsyncedMarker: writer.unsyncedMarker } });
    const first = writer.append('followed-1', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();
    fsync.release();
    await first;
    void writer.append('followed-2', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();
    const seen: string[] = [];
    const subscription = follower.subscribeToAll(async (event) => void seen.push(event.streamName));
    await settle();

    expect((await follower.readAll()).map((event) => event.streamName)).toEqual(['followed-1']);
    expect(await follower.headPosition()).toBe(1n);
    expect(seen).toEqual(['followed-1']);

    fsync.release();
    await settle();
    follower.pollNow();
    await settle();
    await settle();
    expect(seen).toEqual(['followed-1', 'followed-2']);
    expect(await follower.headPosition()).toBe(2n);

    // Another process's commits (nothing of this writer waiting) are read as they come.
    const elsewhere = openSqliteEventStore({ path, synchronous: 'NORMAL' });
    await elsewhere.append('followed-3', [newEvent()], { expectedRevision: 'no_stream' });
    expect((await follower.readAll()).map((event) => event.streamName)).toEqual(['followed-1', 'followed-2', 'followed-3']);
    await subscription.stop();
    await elsewhere.close();
    await follower.close();
    await writer.close();
  });
});
