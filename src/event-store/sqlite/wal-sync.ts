import { closeSync, fsync, fsyncSync, openSync } from 'node:fs';

/** How a file descriptor is fsynced: Node's `fs.fsync` (on libuv's thread pool) unless a test holds it. */
export type FsyncFile = (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;
import { dirname } from 'node:path';

/** A commit waiting for the fsync that makes it durable, with who to tell. */
interface UnsyncedCommit {
  /** Position of the commit's first event. */
  readonly first: bigint;
  readonly done: (error?: Error) => void;
}

/**
 * Makes the log's commits durable without blocking the event loop: the connection commits with
 * `synchronous=NORMAL` (COMMIT writes the WAL with write(2) and returns), and this fsyncs the WAL file
 * on libuv's thread pool. Each commit is told only once an fsync that started after it returned, so
 * an acknowledged append is on disk exactly as under `synchronous=FULL`; one fsync covers every
 * commit made while the one before it ran (group commit across commits), and the event loop keeps
 * committing meanwhile.
 *
 * Why fsyncing the WAL file is enough: in WAL mode SQLite appends each commit's frames to that file
 * and, under NORMAL, syncs it itself before each checkpoint and when it starts reusing it, so every
 * frame a completed fsync covered is replayed after a power loss. The descriptor is our own; fsync
 * flushes the file, whichever descriptor wrote it. The file stays the same while the store's
 * connection is open (SQLite deletes it only when the last connection closes).
 *
 * After a failed fsync nothing is trusted (the kernel may have dropped the dirty pages): every
 * waiting and later commit fails with the same error, and the store refuses new appends.
 */
export class WalSync {
  private fd: number | undefined;
  private waiting: UnsyncedCommit[] = [];
  /** Commits the fsync in flight covers; undefined when none runs. */
  private syncing: UnsyncedCommit[] | undefined;
  private idle: Array<() => void> = [];
  private failed: Error | undefined;

  constructor(
    private readonly walPath: string,
    private readonly fsyncFile: FsyncFile = fsync,
  ) {}

  /** The failure that stopped the log's durability, once one happened. */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** Position of the first event not yet on disk; undefined when every commit is. */
  get firstUnsynced(): bigint | undefined {
    return (this.syncing?.[0] ?? this.waiting[0])?.first;
  }

  /** Calls `done` once the commit just made (first event at `first`) is on disk, or with the error that prevented it. */
  afterCommit(first: bigint, done: (error?: Error) => void): void {
    if (this.failed !== undefined) return done(this.failed);
    this.waiting.push({ first, done });
    if (this.syncing === undefined) this.start();
  }

  /** Resolves once no commit waits for an fsync. */
  drained(): Promise<void> {
    if (this.syncing === undefined && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Closes the descriptor; call after `drained()`. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  private start(): void {
    const batch = this.waiting;
    this.waiting = [];
    this.syncing = batch;
    let fd: number;
    try {
      fd = this.descriptor();
    } catch (error) {
      return this.finish(batch, asError(error));
    }
    this.fsyncFile(fd, (error) => this.finish(batch, error ?? undefined));
  }

  private finish(batch: readonly UnsyncedCommit[], error: Error | undefined): void {
    if (error !== undefined && this.failed === undefined) {
      this.failed = new Error(`The log could not be made durable (fsync of ${this.walPath}: ${error.message}); restart the service`);
    }
    this.syncing = undefined;
    for (const commit of batch) commit.done(this.failed);
    if (this.failed !== undefined) {
      const rest = this.waiting;
      this.waiting = [];
      for (const commit of rest) commit.done(this.failed);
    }
    if (this.waiting.length > 0) return this.start();
    const idle = this.idle;
    this.idle = [];
    for (const resolve of idle) resolve();
  }

  /** Opens the WAL file the first time, and makes its directory entry durable once. */
  private descriptor(): number {
    if (this.fd !== undefined) return this.fd;
    this.fd = openSync(this.walPath, 'r+');
    const directory = openSync(dirname(this.walPath), 'r');
    try {
      fsyncSync(directory);
    } finally {
      closeSync(directory);
    }
    return this.fd;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
