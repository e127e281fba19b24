import { closeSync, fsync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';

/** How a file descriptor is fsynced on the thread pool: Node's `fs.fsync` unless a test holds it. */
export type FsyncFile = (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;
/** How a file descriptor is fsynced on the calling thread: Node's `fs.fsyncSync` unless a test stands in; throws on failure. */
export type FsyncFileInPlace = (fd: number) => void;

/** Where the next fsync of the WAL runs (FsyncPlacement). */
export type FsyncWhere = 'main-thread' | 'thread-pool';

/**
 * How a commit asks to be made durable (WalSync.afterCommit): with the turn's other commits (the
 * default), `at-once` (AppendOptions.durableAtOnce) or `off-loop` (AppendOptions.durableOffLoop).
 */
export type CommitSync = 'with-the-turn' | 'at-once' | 'off-loop';

/** Decides, before each fsync of the WAL, where it runs; told how long each one on the main thread took. */
export interface FsyncPlacement {
  next(): FsyncWhere;
  tookOnMainThread(ms: number): void;
}

/** Over how long the main thread's load is measured to place the WAL's fsyncs (FsyncByLoopLoad), in ms. */
export const FSYNC_PLACEMENT_WINDOW_MS = 100;
/**
 * Above this share of the last window busy (its own fsyncs left out), in per cent of the main thread's
 * time, the WAL's fsyncs go to the thread pool, so the main thread spends its time on calls instead of
 * waiting for the disk. Measured on this project's machine (bench/README.md, "The WAL fsynced on the
 * main thread"): 40 to 64 % busy (p10 to p90 of the windows) at 16 gateway connections and a 50 ms
 * upstream, where the main thread's fsync halves the durable waits; 100 % at saturation, where
 * fsyncing on the main thread cost about a tenth of the calls per second.
 */
export const FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT = 80;
/**
 * Above this share of the last window spent in its own fsyncs, in per cent of the main thread's time,
 * the disk is too slow for the main thread to wait on (more waiting than anything else), and the
 * fsyncs go to the thread pool for FSYNC_SLOW_DISK_BACKOFF_MS. Measured here (bench/README.md, "The
 * WAL fsynced on the main thread"): 13 % of a window at p50 and 45 % at most at 16 gateway
 * connections, so a quarter, tried first, sent the fsyncs to the pool on a machine merely busy.
 */
export const FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT = 50;
/**
 * How long the WAL's fsyncs stay on the thread pool after the main thread found them slow, in ms:
 * short, since a busy moment can look like a slow disk (13 % of a window at p50 at 16 gateway
 * connections here, 45 % at most), and a disk that is slow is tried again only one window in eleven.
 */
export const FSYNC_SLOW_DISK_BACKOFF_MS = 1_000;

/**
 * The default placement: on the main thread while it has time to spare, on the thread pool once it
 * is busy (FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT over the last FSYNC_PLACEMENT_WINDOW_MS, its own
 * fsyncs left out, from Node's event-loop utilization) or once its fsyncs take too much of its time
 * (FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT: a slow disk, left to the pool for
 * FSYNC_SLOW_DISK_BACKOFF_MS). `activeMs` (the event loop's time not idle since it started) and
 * `nowMs` stand in for Node's in tests.
 */
export class FsyncByLoopLoad implements FsyncPlacement {
  private where: FsyncWhere = 'main-thread';
  private windowStartMs: number;
  private activeAtWindowStartMs: number;
  private onMainThreadMs = 0;
  /** Until when the fsyncs stay on the thread pool, the main thread having found them slow. */
  private slowDiskUntilMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly activeMs: () => number = () => performance.eventLoopUtilization().active,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.windowStartMs = this.nowMs();
    this.activeAtWindowStartMs = this.activeMs();
  }

  next(): FsyncWhere {
    const nowMs = this.nowMs();
    const windowMs = nowMs - this.windowStartMs;
    if (windowMs < FSYNC_PLACEMENT_WINDOW_MS) return this.where;
    const activeMs = this.activeMs();
    // The window's own work and length, its fsyncs on this thread left out.
    const workMs = activeMs - this.activeAtWindowStartMs - this.onMainThreadMs;
    const elapsedMs = windowMs - this.onMainThreadMs;
    if (this.onMainThreadMs * 100 > windowMs * FSYNC_ON_MAIN_THREAD_MAX_FSYNC_PERCENT) this.slowDiskUntilMs = nowMs + FSYNC_SLOW_DISK_BACKOFF_MS;
    const busy = elapsedMs > 0 && workMs * 100 > elapsedMs * FSYNC_ON_MAIN_THREAD_MAX_BUSY_PERCENT;
    this.where = busy || nowMs < this.slowDiskUntilMs ? 'thread-pool' : 'main-thread';
    this.windowStartMs = nowMs;
    this.activeAtWindowStartMs = activeMs;
    this.onMainThreadMs = 0;
    return this.where;
  }

  tookOnMainThread(ms: number): void {
    this.onMainThreadMs += ms;
  }
}

/** Where the WAL's fsyncs run, and how: the default is Node's, placed by the main thread's load. */
export interface WalFsyncs {
  readonly onThreadPool?: FsyncFile;
  readonly onMainThread?: FsyncFileInPlace;
  readonly placement?: FsyncPlacement;
}

/**
 * Most fsyncs of the WAL running at once by default, in fsyncs (SqliteEventStoreOptions
 * fsyncsInFlight), besides one a commit asked for at once (WalSync.afterCommit). One, by
 * measurement: with two, a commit made while an fsync ran started its own at once, but on this
 * project's machine (ext4, whose journal commits one transaction at a time) the
 * gateway's durable appends took longer (hold decided → durable p50 5.4 and 2.7 ms with one against
 * 7.7 and 6.7 with two, two A/B pairs, bench/README issue 35): the wait for the fsync in flight is what
 * gathers the commits made meanwhile into one fsync.
 */
export const MAX_FSYNCS_IN_FLIGHT = 1;
/** Most fsyncs in flight a store may be opened with (SqliteEventStoreOptions.fsyncsInFlight): libuv's pool has four threads. */
export const MAX_FSYNCS_IN_FLIGHT_OPTION = 4;

/** A commit waiting for an fsync that makes it durable, with who to tell. */
interface UnsyncedCommit {
  /** Order of the commit among this log's commits (1, 2, 3…). */
  readonly sequence: number;
  /** Position of the commit's first event. */
  readonly first: bigint;
  readonly done: (error?: Error) => void;
}

/**
 * Makes the log's commits durable, gathered: the connection commits with `synchronous=NORMAL` (COMMIT
 * writes the WAL with write(2) and returns), and this fsyncs the WAL file. Each commit is told only
 * once an fsync that started after it returned, so an acknowledged append is on disk exactly as under
 * `synchronous=FULL`.
 *
 * Where an fsync runs is the placement's choice (FsyncByLoopLoad by default). On the main thread it
 * runs at the end of the turn (`setImmediate`), after the turn's I/O callbacks, so it covers every
 * commit the turn made, and its commits are told at once, with no hand-over to another thread and
 * back: the main thread waits for the disk, which costs nothing while it has nothing else to do. On
 * libuv's thread pool it starts at once and the main thread goes on meanwhile.
 *
 * Up to `maxInFlight` fsyncs run at once (MAX_FSYNCS_IN_FLIGHT, one, unless the store was opened
 * with more): below the bound a commit starts its own (at once on the thread pool; on the main thread
 * at the end of the turn, one at a time, for every commit made by then), and whichever fsync returns first
 * tells every commit made before it started, so an fsync that started later and returned sooner also
 * covers the commits of one still running. At the bound, the commits made meanwhile share the next
 * fsync (group commit across commits). Commits are told in their order, always a prefix of those
 * waiting.
 *
 * Why fsyncing the WAL file is enough: in WAL mode SQLite appends each commit's frames to that file
 * and, under NORMAL, syncs it itself before each checkpoint and when it starts reusing it, so every
 * frame a completed fsync covered is replayed after a power loss. fsync flushes the file whichever
 * descriptor wrote it. The file stays the same while the store's connection is open (SQLite deletes
 * it only when the last connection closes).
 *
 * Each fsync in flight has a descriptor of its own: Linux reports a failed writeback once to each open
 * file description (errseq), so two fsyncs sharing one could see the error in one and a success in the
 * other, for the same lost page. With one each, every fsync that ran over a failure reports it.
 *
 * After a failed fsync nothing is trusted (the kernel may have dropped the dirty pages): every
 * waiting and later commit fails with the same error, and the store refuses new appends.
 */
export class WalSync {
  /** Descriptors of the WAL no fsync is using (at most one per fsync that may run at once). */
  private readonly free: number[] = [];
  /** Every descriptor of the WAL this opened, to close. */
  private readonly opened: number[] = [];
  private directorySynced = false;
  /** Commits not yet told, in their order. */
  private unsynced: UnsyncedCommit[] = [];
  private lastSequence = 0;
  /** The last commit an fsync already running (or returned) started after. */
  private startedThrough = 0;
  private inFlight = 0;
  private idle: Array<() => void> = [];
  private failed: Error | undefined;
  /** An fsync on the main thread waits for the end of the turn: the commits made meanwhile are its. */
  private mainThreadPending = false;
  private readonly onThreadPool: FsyncFile;
  private readonly onMainThread: FsyncFileInPlace;
  private readonly placement: FsyncPlacement;

  constructor(
    private readonly walPath: string,
    fsyncs: WalFsyncs = {},
    private readonly maxInFlight: number = MAX_FSYNCS_IN_FLIGHT,
  ) {
    this.onThreadPool = fsyncs.onThreadPool ?? fsync;
    this.onMainThread = fsyncs.onMainThread ?? fsyncSync;
    this.placement = fsyncs.placement ?? new FsyncByLoopLoad();
  }

  /** The failure that stopped the log's durability, once one happened. */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** Position of the first event not yet on disk; undefined when every commit is. */
  get firstUnsynced(): bigint | undefined {
    return this.unsynced[0]?.first;
  }

  /**
   * Calls `done` once the commit just made (first event at `first`) is on disk, or with the error that
   * prevented it. While the placement keeps fsyncs on the main thread (it has time to spare):
   * - `with-the-turn`: one fsync at the end of the turn covers it and the turn's other commits.
   * - `at-once`: its appender has I/O to start once it is durable, so the fsync runs on the main thread
   *   now, before this returns. One due at the end of the turn is joined (this one covers its commits,
   *   and it finds nothing left to do). One running on the thread pool is not waited for: it started
   *   before this commit, so it cannot cover it, and this one runs beside it.
   * - `off-loop`: its appender has nothing left to do in this process once it is durable but write to
   *   a socket, so the fsync starts on the thread pool and the main thread goes on with other work.
   *   One due at the end of the turn on the main thread is joined, since it runs anyway.
   * Once the placement sends fsyncs to the thread pool (a busy main thread), all three start there.
   */
  afterCommit(first: bigint, done: (error?: Error) => void, sync: CommitSync = 'with-the-turn'): void {
    if (this.failed !== undefined) return done(this.failed);
    this.unsynced.push({ sequence: ++this.lastSequence, first, done });
    if (sync === 'at-once' && this.placement.next() === 'main-thread') {
      this.inFlight++;
      return this.fsyncHere();
    }
    this.startIfRoom(sync === 'off-loop' ? 'thread-pool' : undefined);
  }

  /** Resolves once no commit waits for an fsync and none runs. */
  drained(): Promise<void> {
    if (this.inFlight === 0 && this.unsynced.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Closes the descriptors; call after `drained()`. */
  close(): void {
    for (const fd of this.opened) closeSync(fd);
    this.opened.length = 0;
    this.free.length = 0;
  }

  /**
   * Starts an fsync for the commits no running fsync covers, if fewer than `maxInFlight` run: where the
   * placement says, or `where`.
   */
  private startIfRoom(where?: FsyncWhere): void {
    if (this.failed !== undefined || this.mainThreadPending || this.inFlight >= this.maxInFlight || this.startedThrough === this.lastSequence) return;
    this.inFlight++;
    this.startedThrough = this.lastSequence;
    if ((where ?? this.placement.next()) === 'main-thread') {
      this.mainThreadPending = true;
      setImmediate(() => this.fsyncOnMainThread());
      return;
    }
    const through = this.lastSequence;
    let fd: number;
    try {
      fd = this.descriptor();
    } catch (error) {
      return this.finish(undefined, through, asError(error));
    }
    this.onThreadPool(fd, (error) => this.finish(fd, through, error ?? undefined));
  }

  /**
   * At the end of the turn: one fsync on this thread for every commit made by now; none when a commit
   * fsynced at once (afterCommit's `atOnce`) already covered them all.
   */
  private fsyncOnMainThread(): void {
    this.mainThreadPending = false;
    if (this.unsynced.length === 0) return this.finish(undefined, this.lastSequence, undefined);
    this.fsyncHere();
  }

  /** One fsync on this thread, now, for every commit made by now (counted in `inFlight` by the caller). */
  private fsyncHere(): void {
    const through = this.lastSequence;
    this.startedThrough = through;
    const startedMs = performance.now();
    let fd: number | undefined;
    let failure: Error | undefined;
    try {
      fd = this.descriptor();
      this.onMainThread(fd);
    } catch (error) {
      failure = asError(error);
    }
    this.placement.tookOnMainThread(performance.now() - startedMs);
    this.finish(fd, through, failure);
  }

  /** An fsync that started after commit `through` returned: tells the commits up to it, or fails them all. */
  private finish(fd: number | undefined, through: number, error: Error | undefined): void {
    this.inFlight--;
    if (fd !== undefined) this.free.push(fd);
    if (error !== undefined && this.failed === undefined) {
      this.failed = new Error(`The log could not be made durable (fsync of ${this.walPath}: ${error.message}); restart the service`);
    }
    let told = 0;
    if (this.failed !== undefined) told = this.unsynced.length;
    else while (told < this.unsynced.length && this.unsynced[told]!.sequence <= through) told++;
    // Off the list before anyone is told, so firstUnsynced already says what is left.
    const durable = this.unsynced.splice(0, told);
    for (const commit of durable) commit.done(this.failed);
    this.startIfRoom();
    if (this.inFlight > 0 || this.unsynced.length > 0) return;
    const idle = this.idle;
    this.idle = [];
    for (const resolve of idle) resolve();
  }

  /** A descriptor of the WAL no fsync is using, opened the first time; the directory entry made durable once. */
  private descriptor(): number {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    const fd = openSync(this.walPath, 'r+');
    this.opened.push(fd);
    if (!this.directorySynced) {
      const directory = openSync(dirname(this.walPath), 'r');
      try {
        fsyncSync(directory);
      } finally {
        closeSync(directory);
      }
      this.directorySynced = true;
    }
    return fd;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
