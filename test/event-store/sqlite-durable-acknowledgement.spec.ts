import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/event-store/event-store.port';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { MAX_FSYNCS_IN_FLIGHT, MAX_FSYNCS_IN_FLIGHT_OPTION } from '../../src/event-store/sqlite/wal-sync';
import { closeReleasingFsyncs, HeldFsync, nextTurn, observed } from '../support/held-fsync';
import { newEvent } from './event-store.contract';

const directory = mkdtempSync(join(tmpdir(), 'ledger-durable-ack-'));
const newDatabasePath = (): string => join(directory, `${randomUUID()}.sqlite`);
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const EIO = (): NodeJS.ErrnoException => Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });

const settle = nextTurn;

/** A FULL store on a fresh file whose fsyncs the test releases by hand. */
function openWithHeldFsync(fsyncsInFlight?: number): { fsync: HeldFsync; store: SqliteEventStore } {
  const fsync = new HeldFsync();
  return { fsync, store: openSqliteEventStore({ path: newDatabasePath(), ...fsync.storeOptions, ...(fsyncsInFlight === undefined ? {} : { fsyncsInFlight }) }) };
}

describe('issue 24: an acknowledged append is on disk (synchronous=FULL), its fsync off the event loop', () => {
  let fsync: HeldFsync;
  let store: SqliteEventStore;
  beforeEach(() => ({ fsync, store } = openWithHeldFsync()));
  afterEach(() => closeReleasingFsyncs(store, fsync));

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

  it('past MAX_FSYNCS_IN_FLIGHT fsyncs running, covers every commit made meanwhile with the next single fsync (group commit across commits)', async () => {
    const running: Array<ReturnType<typeof observed>> = [];
    for (let index = 0; index < MAX_FSYNCS_IN_FLIGHT; index++) {
      // One append per turn: each is its own commit, and each starts an fsync.
      running.push(observed(store.append(`group-${index}`, [newEvent()], { expectedRevision: 'no_stream' })));
      await settle();
    }
    expect(fsync.calls).toBe(MAX_FSYNCS_IN_FLIGHT);
    const later = Array.from({ length: 5 }, (_, index) => observed(store.append(`later-${index}`, [newEvent()], { expectedRevision: 'no_stream' })));
    await settle();
    await settle();
    expect(fsync.calls).toBe(MAX_FSYNCS_IN_FLIGHT);

    fsync.release();
    await settle();
    expect(running[0]!.state()).toBe('resolved');
    expect(later.map((append) => append.state())).toEqual(Array(5).fill('pending'));
    expect(fsync.calls).toBe(MAX_FSYNCS_IN_FLIGHT + 1);
    while (fsync.held.length > 1) fsync.release();
    await settle();
    expect(later.map((append) => append.state())).toEqual(Array(5).fill('pending'));
    fsync.release();
    await settle();
    expect([...running, ...later].map((append) => append.state())).toEqual(Array(MAX_FSYNCS_IN_FLIGHT + 5).fill('resolved'));
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

describe('issue 35: opened with two fsyncs in flight, one in flight is joined, not queued behind', () => {
  let fsync: HeldFsync;
  let store: SqliteEventStore;
  beforeEach(() => ({ fsync, store } = openWithHeldFsync(2)));
  afterEach(() => closeReleasingFsyncs(store, fsync));

  it('starts an fsync at once for a commit made while one runs, on a descriptor of its own', async () => {
    const first = observed(store.append('joined-1', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    const second = observed(store.append('joined-2', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();

    // Before issue 35 the second commit waited for the first fsync to return before its own started.
    expect(fsync.calls).toBe(2);
    expect(new Set(fsync.fds).size).toBe(2);
    expect([first.state(), second.state()]).toEqual(['pending', 'pending']);
    fsync.release();
    await settle();
    // The first fsync started before the second commit: it tells the first only.
    expect([first.state(), second.state()]).toEqual(['resolved', 'pending']);
    fsync.release();
    await settle();
    expect(second.state()).toBe('resolved');
  });

  it('tells every commit made before the fsync that returns first started, even while an earlier fsync still runs', async () => {
    const first = observed(store.append('covered-1', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    const second = observed(store.append('covered-2', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    fsync.release(null, 1);
    await settle();

    expect([first.state(), second.state()]).toEqual(['resolved', 'resolved']);
    expect((await store.readAll()).map((event) => event.streamName)).toEqual(['covered-1', 'covered-2']);
    expect(await store.headPosition()).toBe(2n);
    // The earlier fsync returning afterwards tells nothing more.
    fsync.release();
    await settle();
    expect(fsync.calls).toBe(2);
  });

  it('fails the commits a concurrent fsync was to tell when an earlier one fails, and keeps the log behind the failure', async () => {
    const first = observed(store.append('failing-1', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    const second = observed(store.append('failing-2', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    fsync.release(EIO());
    await settle();
    expect([first.state(), second.state()]).toEqual(['rejected', 'rejected']);

    // The second fsync's success afterwards is not trusted: nothing it covered is acknowledged or read.
    fsync.release();
    await settle();
    expect(second.state()).toBe('rejected');
    expect(await store.readAll()).toEqual([]);
    expect(await store.headPosition()).toBeUndefined();
    await expect(store.append('failing-3', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/could not be made durable/);
  });

  it('keeps what a later fsync told when an earlier one fails afterwards, and refuses every append after it', async () => {
    const first = observed(store.append('told-1', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    const second = observed(store.append('told-2', [newEvent()], { expectedRevision: 'no_stream' }));
    await settle();
    fsync.release(null, 1);
    await settle();
    expect([first.state(), second.state()]).toEqual(['resolved', 'resolved']);

    fsync.release(EIO());
    await settle();
    await expect(store.append('told-3', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/could not be made durable/);
    expect(await store.headPosition()).toBe(2n);
  });

  it('closes the file only once every fsync in flight returned', async () => {
    void store.append('closing-1', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();
    void store.append('closing-2', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();
    const closing = observed(store.close());
    await settle();
    fsync.release(null, 1);
    await settle();
    expect(closing.state()).toBe('pending');
    fsync.release();
    await settle();
    await settle();
    expect(closing.state()).toBe('resolved');
  });
});

describe('issue 35: one fsync in flight by default (measured), more only when asked for', () => {
  it('queues a commit made while the one fsync runs, and refuses an fsyncsInFlight outside 1 to MAX_FSYNCS_IN_FLIGHT_OPTION naming it', async () => {
    expect(MAX_FSYNCS_IN_FLIGHT).toBe(1);
    const { fsync, store } = openWithHeldFsync();
    void store.append('default-1', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();
    void store.append('default-2', [newEvent()], { expectedRevision: 'no_stream' });
    await settle();
    expect(fsync.calls).toBe(1);
    await closeReleasingFsyncs(store, fsync);
    expect(() => openWithHeldFsync(0)).toThrow(/fsyncsInFlight/);
    expect(() => openWithHeldFsync(MAX_FSYNCS_IN_FLIGHT_OPTION + 1)).toThrow(/fsyncsInFlight/);
  });
});

describe('issue 35: onCommitted tells the commit of an append that still waits for its fsync', () => {
  let fsync: HeldFsync;
  let store: SqliteEventStore;
  beforeEach(() => ({ fsync, store } = openWithHeldFsync()));
  afterEach(() => closeReleasingFsyncs(store, fsync));

  it('is called with the result at COMMIT, before the append is acknowledged; not for an append acknowledged at COMMIT or one that failed', async () => {
    const told: Array<[string, bigint]> = [];
    const durable = observed(store.append('told-1', [newEvent()], { expectedRevision: 'no_stream', onCommitted: (result) => told.push(['told-1', result.position]) }));
    const early = observed(store.append('told-2', [newEvent()], { expectedRevision: 'no_stream', acknowledge: 'committed', onCommitted: () => told.push(['told-2', 0n]) }));
    const stale = observed(store.append('told-3', [newEvent()], { expectedRevision: 5n, onCommitted: () => told.push(['told-3', 0n]) }));
    await settle();

    expect(told).toEqual([['told-1', 1n]]);
    // The stale append is answered with its group, after the fsync; it is never told of a commit.
    expect([durable.state(), early.state(), stale.state()]).toEqual(['pending', 'resolved', 'pending']);
    fsync.release();
    await settle();
    expect([durable.state(), stale.state()]).toEqual(['resolved', 'rejected']);
    expect(told).toHaveLength(1);
    await expect(store.append('told-4', [newEvent()], { expectedRevision: 'no_stream', onCommitted: 'soon' as never })).rejects.toThrow(/options.onCommitted/);
  });
});

describe('after a failed fsync the store commits nothing more', () => {
  it('fails an append queued before the failure was known (waiting for the end of the turn) and writes none of it', async () => {
    const fsync = new HeldFsync();
    // No eager commits: every group waits for the end of the turn, as a busy turn's overflow does.
    const store = openSqliteEventStore({ path: newDatabasePath(), ...fsync.storeOptions, eagerCommitsPerTurn: 0 });
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
    const store = openSqliteEventStore({ path: newDatabasePath(), synchronous: 'NORMAL', ...fsync.storeOptions });
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
    const writer = openSqliteEventStore({ path, ...fsync.storeOptions });
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
