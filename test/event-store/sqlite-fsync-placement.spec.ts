import { randomUUID } from 'node:crypto';
import { fsync, fsyncSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteEventStore, type SqliteEventStore, type SqliteEventStoreOptions } from '../../src/event-store/sqlite/sqlite-event-store';
import {
  FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT,
  FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT,
  FSYNC_PLACEMENT_WINDOW_MS,
  FSYNC_SLOW_DISK_BACKOFF_MS,
  FsyncByLoopLoad,
  type FsyncPlacement,
} from '../../src/event-store/sqlite/wal-sync';
import type { AppendOptions } from '../../src/event-store/event-store.port';
import { FSYNC_ON_MAIN_THREAD, HeldFsync, nextTurn, observed } from '../support/held-fsync';
import { newEvent } from './event-store.contract';

const directory = mkdtempSync(join(tmpdir(), 'ledger-fsync-placement-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** A FULL store on a fresh file whose fsyncs run on the main thread through `inPlace`. */
function openOnMainThread(inPlace: (fd: number) => void, placement: FsyncPlacement = FSYNC_ON_MAIN_THREAD, options: Partial<SqliteEventStoreOptions> = {}): SqliteEventStore {
  return openSqliteEventStore({ path: join(directory, `${randomUUID()}.sqlite`), fsyncFileInPlace: inPlace, fsyncPlacement: placement, ...options });
}

/** Runs each function in its own `setImmediate` callback of one event-loop turn, and resolves after the last. */
function inOneTurn(...tasks: Array<() => void>): Promise<void> {
  return new Promise((resolve) => {
    tasks.forEach((task, index) => setImmediate(() => (task(), index === tasks.length - 1 && resolve())));
  });
}

/**
 * A FULL store fsyncing on the main thread that records, at each fsync, how many commits were made and
 * how each append made so far stood; `append` makes a task that appends one event to a new stream.
 */
function watchingFsyncs(options: Partial<SqliteEventStoreOptions> = {}) {
  const atFsync: Array<{ readonly commits: number; readonly appends: readonly string[] }> = [];
  const appends: Array<Promise<unknown>> = [];
  const watched: Array<ReturnType<typeof observed>> = [];
  const store = openOnMainThread(
    (fd) => {
      atFsync.push({ commits: store.groupCommitStats.transactions, appends: watched.map((append) => append.state()) });
      fsyncSync(fd);
    },
    FSYNC_ON_MAIN_THREAD,
    options,
  );
  const append = (streamName: string, sync: Pick<AppendOptions, 'durableAtOnce' | 'durableOffLoop'> = {}) => () => {
    const appended = store.append(streamName, [newEvent()], { expectedRevision: 'no_stream', ...sync });
    appends.push(appended);
    watched.push(observed(appended));
  };
  return { store, atFsync, appends, watched, append };
}

describe('README "Durability": an acknowledged append is on disk (synchronous=FULL), the WAL fsynced on the main thread at the end of the turn while that thread has time to spare (issue 35)', () => {
  it('covers every commit of the turn with one fsync, made after those commits and before any of them is acknowledged', async () => {
    const { store, atFsync, appends, append } = watchingFsyncs();
    // Two tasks of one turn: two commits, each made right after its task.
    await inOneTurn(append('turn-1'), append('turn-2'));
    expect(atFsync).toEqual([]);
    await Promise.all(appends);

    expect(atFsync).toEqual([{ commits: 2, appends: ['pending', 'pending'] }]);
    expect(await store.headPosition()).toBe(2n);
    await store.close();
  });

  it('fails the appends a failed fsync on the main thread was to make durable, and refuses every append after it', async () => {
    const store = openOnMainThread(() => {
      throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    });
    await expect(store.append('lost-1', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/could not be made durable.*EIO/);
    await expect(store.append('lost-2', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/could not be made durable/);
    expect(await store.readAll()).toHaveLength(0);
    await store.close();
  });

  it('tells the placement how long each fsync on the main thread took, and asks it again before the next one', async () => {
    const asked: string[] = [];
    const took: number[] = [];
    let where: 'main-thread' | 'thread-pool' = 'main-thread';
    const placement: FsyncPlacement = { next: () => (asked.push(where), where), tookOnMainThread: (ms) => took.push(ms) };
    let inPlace = 0;
    let onPool = 0;
    const store = openOnMainThread(
      (fd) => (inPlace++, fsyncSync(fd)),
      placement,
      { fsyncFile: (fd, done) => (onPool++, fsync(fd, done)) },
    );
    await store.append('placed-1', [newEvent()], { expectedRevision: 'no_stream' });
    where = 'thread-pool';
    await store.append('placed-2', [newEvent()], { expectedRevision: 'no_stream' });

    expect(asked).toEqual(['main-thread', 'thread-pool']);
    expect({ inPlace, onPool }).toEqual({ inPlace: 1, onPool: 1 });
    expect(took).toHaveLength(1);
    expect(took[0]).toBeGreaterThanOrEqual(0);
    await store.close();
  });
});

describe('issue 35: an append whose caller goes upstream once it is durable (AppendOptions.durableAtOnce) is fsynced at once, not at the end of the turn', () => {
  it('fsyncs in the task that committed it, covering the turn\'s commits before it, and the end of the turn finds nothing left', async () => {
    const { store, atFsync, appends, watched, append } = watchingFsyncs();
    let fsyncsSeenLaterInTheTurn = -1;
    // A plain commit, then one asking to be durable at once, then a task of the same turn that looks.
    await inOneTurn(append('plain'), append('at-once', { durableAtOnce: true }), () => (fsyncsSeenLaterInTheTurn = atFsync.length));
    expect(fsyncsSeenLaterInTheTurn).toBe(1);
    await Promise.all(appends);

    // One fsync, made after both commits and before either was acknowledged; none at the end of the turn.
    expect(atFsync).toEqual([{ commits: 2, appends: ['pending', 'pending'] }]);
    expect(watched.map((append) => append.state())).toEqual(['resolved', 'resolved']);
    await store.close();
  });

  it('waits for the end of the turn like any commit when the placement sends fsyncs to the thread pool (a busy main thread)', async () => {
    let inPlace = 0;
    let onPool = 0;
    const placement: FsyncPlacement = { next: () => 'thread-pool', tookOnMainThread: () => undefined };
    const store = openOnMainThread(
      (fd) => (inPlace++, fsyncSync(fd)),
      placement,
      { fsyncFile: (fd, done) => (onPool++, fsync(fd, done)) },
    );
    await store.append('busy', [newEvent()], { expectedRevision: 'no_stream', durableAtOnce: true });
    expect({ inPlace, onPool }).toEqual({ inPlace: 0, onPool: 1 });
    await store.close();
  });

  it('fails the append when its fsync fails, and refuses every append after it', async () => {
    const store = openOnMainThread(() => {
      throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    });
    await expect(store.append('lost-at-once', [newEvent()], { expectedRevision: 'no_stream', durableAtOnce: true })).rejects.toThrow(/could not be made durable.*EIO/);
    await expect(store.append('lost-after', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/could not be made durable/);
    expect(await store.readAll()).toHaveLength(0);
    await store.close();
  });
});

describe('issue 35: an append whose caller only writes to a socket once it is durable (AppendOptions.durableOffLoop) is fsynced on the thread pool, the main thread going on meanwhile', () => {
  it('starts its fsync on the thread pool while the placement keeps fsyncs on the main thread, and acknowledges it once that fsync returned', async () => {
    const pool = new HeldFsync();
    const { store, atFsync, appends, watched, append } = watchingFsyncs({ fsyncFile: pool.fsyncFile });
    append('off-loop', { durableOffLoop: true })();
    await nextTurn();
    await nextTurn();

    expect({ onPool: pool.calls, onMainThread: atFsync.length, append: watched[0]!.state() }).toEqual({ onPool: 1, onMainThread: 0, append: 'pending' });
    pool.release();
    await Promise.all(appends);
    expect(await store.headPosition()).toBe(1n);
    await store.close();
  });

  it('joins the fsync already due on the main thread at the end of the turn, which covers it', async () => {
    const pool = new HeldFsync();
    const { store, atFsync, appends, append } = watchingFsyncs({ fsyncFile: pool.fsyncFile });
    await inOneTurn(append('plain'), append('off-loop', { durableOffLoop: true }));
    await Promise.all(appends);

    expect({ onPool: pool.calls, onMainThread: atFsync }).toEqual({ onPool: 0, onMainThread: [{ commits: 2, appends: ['pending', 'pending'] }] });
    await store.close();
  });

  it('fsyncs a commit with the turn unless every append in it asked', async () => {
    const pool = new HeldFsync();
    const { store, atFsync, appends, append } = watchingFsyncs({ fsyncFile: pool.fsyncFile });
    // Queued by one task: one commit, one append of it asking.
    await inOneTurn(() => (append('off-loop', { durableOffLoop: true })(), append('plain')()));
    await Promise.all(appends);

    expect({ onPool: pool.calls, onMainThread: atFsync }).toEqual({ onPool: 0, onMainThread: [{ commits: 1, appends: ['pending', 'pending'] }] });
    await store.close();
  });

  it('leaves an append that asked to be durable at once on the main thread, now, beside an fsync running on the thread pool, which started before it and cannot cover it', async () => {
    const pool = new HeldFsync();
    const { store, atFsync, watched, append } = watchingFsyncs({ fsyncFile: pool.fsyncFile });
    append('off-loop', { durableOffLoop: true })();
    await nextTurn();
    expect(pool.calls).toBe(1);
    append('at-once', { durableAtOnce: true })();
    await nextTurn();

    // Its fsync started after both commits, so it made both durable while the pool's is still held.
    expect({ onMainThread: atFsync, appends: watched.map((appended) => appended.state()), held: pool.held.length }).toEqual({
      onMainThread: [{ commits: 2, appends: ['pending', 'pending'] }],
      appends: ['resolved', 'resolved'],
      held: 1,
    });
    pool.release();
    await nextTurn();
    expect(await store.headPosition()).toBe(2n);
    await store.close();
  });
});

describe('issue 35: FsyncByLoopLoad, the default placement, by the main thread\'s load over the last window', () => {
  /** A placement on a stand-in clock and event-loop utilization the test moves by hand. */
  function placementOnHandClock(): { placement: FsyncByLoopLoad; pass: (activeMs: number, idleMs: number) => void } {
    let nowMs = 0;
    let loopActiveMs = 0;
    const placement = new FsyncByLoopLoad(() => loopActiveMs, () => nowMs);
    return {
      placement,
      pass: (activeMs, idleMs) => {
        nowMs += activeMs + idleMs;
        loopActiveMs += activeMs;
      },
    };
  }
  const busyMs = (percent: number): number => (FSYNC_PLACEMENT_WINDOW_MS * percent) / 100;

  it('starts on the main thread, and decides again only once a window has passed', () => {
    const { placement, pass } = placementOnHandClock();
    expect(placement.next()).toBe('main-thread');
    pass(busyMs(99), 0);
    expect(placement.next()).toBe('main-thread');
    pass(1, 0);
    expect(placement.next()).toBe('thread-pool');
    pass(busyMs(10), busyMs(50));
    expect(placement.next()).toBe('thread-pool');
  });

  it(`goes to the thread pool above ${FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT} % busy and back at or below it`, () => {
    const { placement, pass } = placementOnHandClock();
    pass(busyMs(FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT), busyMs(100 - FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT));
    expect(placement.next()).toBe('main-thread');
    pass(busyMs(FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT) + 1, busyMs(100 - FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT) - 1);
    expect(placement.next()).toBe('thread-pool');
    pass(busyMs(30), busyMs(70));
    expect(placement.next()).toBe('main-thread');
  });

  it('leaves its own fsyncs on the main thread out of the load: waiting for the disk is not work the pool could take over', () => {
    const { placement, pass } = placementOnHandClock();
    // 82 % busy, of which 20 ms were fsyncs: 62 of the other 80 ms, 77.5 %.
    placement.tookOnMainThread(busyMs(20));
    pass(busyMs(82), busyMs(18));
    expect(placement.next()).toBe('main-thread');
    // 90 % busy, of which 20 ms were fsyncs: 70 of 80, 87.5 %.
    placement.tookOnMainThread(busyMs(20));
    pass(busyMs(90), busyMs(10));
    expect(placement.next()).toBe('thread-pool');
  });

  it(`leaves a slow disk to the thread pool for ${FSYNC_SLOW_DISK_BACKOFF_MS} ms once its fsyncs took over ${FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT} % of a window`, () => {
    const { placement, pass } = placementOnHandClock();
    placement.tookOnMainThread(busyMs(FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT));
    pass(busyMs(FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT), busyMs(100 - FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT));
    expect(placement.next()).toBe('main-thread');
    placement.tookOnMainThread(busyMs(FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT) + 1);
    pass(busyMs(FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT) + 1, busyMs(100 - FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT) - 1);
    expect(placement.next()).toBe('thread-pool');
    // Idle windows after it: still the pool until the back-off has passed.
    pass(0, FSYNC_SLOW_DISK_BACKOFF_MS - busyMs(100));
    expect(placement.next()).toBe('thread-pool');
    pass(0, busyMs(100));
    expect(placement.next()).toBe('main-thread');
  });
});
