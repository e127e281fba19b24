import { closeSync, fsync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/** How a file descriptor is fsynced: Node's `fs.fsync` (on libuv's thread pool) unless a test holds it. */
export type FsyncFile = (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;

/**
 * Most fsyncs of the WAL running at once by default, in fsyncs (SqliteEventStoreOptions
 * fsyncsInFlight). One, by measurement: with two, a commit made while an fsync ran started its own at
 * once, but on this project's machine (ext4, whose journal commits one transaction at a time) the
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
 * Makes the log's commits durable without blocking the event loop: the connection commits with
 * `synchronous=NORMAL` (COMMIT writes the WAL with write(2) and returns), and this fsyncs the WAL file
 * on libuv's thread pool. Each commit is told only once an fsync that started after it returned, so
 * an acknowledged append is on disk exactly as under `synchronous=FULL`.
 *
 * Up to `maxInFlight` fsyncs run at once (MAX_FSYNCS_IN_FLIGHT, one, unless the store was opened
 * with more): below the bound a commit starts its own at once, and whichever fsync returns first
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

  constructor(
    private readonly walPath: string,
    private readonly fsyncFile: FsyncFile = fsync,
    private readonly maxInFlight: number = MAX_FSYNCS_IN_FLIGHT,
  ) {}

  /** The failure that stopped the log's durability, once one happened. */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** Position of the first event not yet on disk; undefined when every commit is. */
  get firstUnsynced(): bigint | undefined {
    return this.unsynced[0]?.first;
  }

  /** Calls `done` once the commit just made (first event at `first`) is on disk, or with the error that prevented it. */
  afterCommit(first: bigint, done: (error?: Error) => void): void {
    if (this.failed !== undefined) return done(this.failed);
    this.unsynced.push({ sequence: ++this.lastSequence, first, done });
    this.startIfRoom();
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

  /** Starts an fsync for the commits no running fsync covers, if fewer than `maxInFlight` run. */
  private startIfRoom(): void {
    if (this.failed !== undefined || this.inFlight >= this.maxInFlight || this.startedThrough === this.lastSequence) return;
    const through = this.lastSequence;
    this.startedThrough = through;
    this.inFlight++;
    let fd: number;
    try {
      fd = this.descriptor();
    } catch (error) {
      return this.finish(undefined, through, asError(error));
    }
    this.fsyncFile(fd, (error) => this.finish(fd, through, error ?? undefined));
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
