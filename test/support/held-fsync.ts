import type { SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import type { FsyncFile, FsyncPlacement } from '../../src/event-store/sqlite/wal-sync';

/** Every fsync on the thread pool: the path whose fsync a test holds by hand. */
export const FSYNC_ON_THREAD_POOL: FsyncPlacement = { next: () => 'thread-pool', tookOnMainThread: () => undefined };
/** Every fsync on the main thread, at the end of the turn. */
export const FSYNC_ON_MAIN_THREAD: FsyncPlacement = { next: () => 'main-thread', tookOnMainThread: () => undefined };

/**
 * An fsync the test releases by hand: each call waits in `held` (with its descriptor in `fds`) until
 * `release` answers it. `storeOptions` open a store whose every fsync is this one, on the thread pool.
 */
export class HeldFsync {
  readonly held: Array<(error: NodeJS.ErrnoException | null) => void> = [];
  readonly fds: number[] = [];
  calls = 0;
  readonly fsyncFile: FsyncFile = (fd, done) => {
    this.calls++;
    this.held.push(done);
    this.fds.push(fd);
  };
  readonly storeOptions = { fsyncFile: this.fsyncFile, fsyncPlacement: FSYNC_ON_THREAD_POOL } as const;

  /** Answers the held fsync at `index` (the oldest by default). */
  release(error: NodeJS.ErrnoException | null = null, index = 0): void {
    this.fds.splice(index, 1);
    this.held.splice(index, 1)[0]!(error);
  }
}

/** Lets every callback queued so far run (the group commit's microtask and the next turn). */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Watches a promise: whether it has settled yet, and how, without awaiting it. */
export function observed<T>(promise: Promise<T>): { readonly state: () => 'pending' | 'resolved' | 'rejected'; readonly error: () => unknown } {
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

/** Closes the store, answering every fsync it still starts (those held and those the close waits for). */
export async function closeReleasingFsyncs(store: SqliteEventStore, fsync: HeldFsync): Promise<void> {
  const closing = store.close();
  for (let turn = 0; turn < 3; turn++) {
    while (fsync.held.length > 0) fsync.release();
    await nextTurn();
  }
  await closing;
}
