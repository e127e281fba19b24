import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  AppendOptions,
  AppendResult,
  AppendTogetherOptions,
  ConcurrencyError,
  EventStore,
  ExpectedRevision,
  InvalidEventStoreInputError,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
} from '../event-store.port';
import {
  inPart,
  ValidatedEvent,
  validateAppend,
  validateAppendTogether,
  validateReadAll,
  validateReadStream,
  validateStreamName,
  validateSubscribe,
} from '../event-store-input.validation';
import { duplicateEventIdError, replayFromStoredRows, storedAppendMismatch, type StoredEventPlace } from '../stored-append-replay';
import { migrateSqliteSchema } from './sqlite-schema.migrations';
import { SqliteSubscription, type CommittedEvents } from './sqlite-subscription';
import { DEFAULT_LOG_SYNCHRONOUS, type SqliteSynchronous } from './sqlite-synchronous';
import { MAX_FSYNCS_IN_FLIGHT, MAX_FSYNCS_IN_FLIGHT_OPTION, WalSync, type CommitSync, type FsyncFile, type FsyncFileInPlace, type FsyncPlacement } from './wal-sync';


export interface SqliteEventStoreOptions {
  /** Database file (its directory is created if missing), or ':memory:' for a private, throw-away store. */
  readonly path: string;
  /** Default 'FULL' (DEFAULT_LOG_SYNCHRONOUS). */
  readonly synchronous?: SqliteSynchronous;
  /**
   * Commits per event-loop turn that start right after the task that queued them (default
   * MAX_EAGER_COMMITS_PER_TURN; 0: every commit waits for the end of the turn, as with several
   * processes simulated on one event loop, whose appends should overlap as real processes' do).
   */
  readonly eagerCommitsPerTurn?: number;
  /**
   * This connection reads a log that another connection of this machine writes (the projection
   * worker beside the service): `unsyncedMarker` is that writer's (SqliteEventStore.unsyncedMarker),
   * so `$all` readers and subscriptions here stop before the writer's first commit still waiting for
   * its fsync, as they do in the writer's own process.
   */
  readonly follows?: { readonly unsyncedMarker: SharedArrayBuffer };
  /** How the WAL file is fsynced on the thread pool under FULL (default Node's `fs.fsync`); a test holds it to see what waits for it. */
  readonly fsyncFile?: FsyncFile;
  /** How the WAL file is fsynced on the main thread under FULL (default Node's `fs.fsyncSync`); a test stands in to count or fail it. */
  readonly fsyncFileInPlace?: FsyncFileInPlace;
  /** Where each fsync of the WAL runs (default FsyncByLoopLoad: on the main thread while it has time to spare). */
  readonly fsyncPlacement?: FsyncPlacement;
  /** Most fsyncs of the WAL at once under FULL (default MAX_FSYNCS_IN_FLIGHT, at most MAX_FSYNCS_IN_FLIGHT_OPTION). */
  readonly fsyncsInFlight?: number;
}

/** What a checkpoint of the write-ahead log did (see SqliteEventStore.checkpointWal). */
export interface WalCheckpoint {
  /** True when another connection's checkpoint was running, so this one did nothing. */
  readonly busy: boolean;
  /** Pages in the write-ahead log (-1 for a store without one, such as `:memory:`). */
  readonly walPages: number;
  /** Of those, pages now also in the database file. */
  readonly checkpointedPages: number;
}

/** How long a write waits for another process's write lock before failing, in milliseconds. */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;
/**
 * WAL size that triggers a checkpoint, in pages (4 KiB each: about 40 MiB). A checkpoint syncs the
 * files and runs inside the commit that crosses this size, so rarer checkpoints mean faster appends;
 * SQLite's default (1,000 pages) roughly halved append throughput in our measurements.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000;
/** Most appends written in one group-commit transaction; the rest wait for the next one. */
export const MAX_APPENDS_PER_GROUP_COMMIT = 512;
/**
 * Group commits per turn of the event loop that start as soon as the task that queued them ends (a
 * microtask), in commits; past it, what is queued waits for the end of the turn (setImmediate) and
 * goes out as one commit. Bounds the extra transactions a busy turn can cost, while an append in a
 * quiet or ordinary turn does not wait for unrelated callbacks to run first.
 */
export const MAX_EAGER_COMMITS_PER_TURN = 8;

/** One stream's events of an append, validated. */
interface AppendPart {
  readonly streamName: string;
  readonly expectedRevision: ExpectedRevision;
  /** How the expected revision is stored on the batch's first row, to recognise a re-append. */
  readonly expectedText: string;
  readonly events: readonly ValidatedEvent[];
}

/**
 * An append accepted by `append()` (one part) or `appendTogether()` (its parts, all or none) and
 * waiting for the next group commit.
 */
interface PendingAppend {
  readonly parts: readonly AppendPart[];
  /** Acknowledged at COMMIT, without waiting for the fsync (AppendOptions.acknowledge 'committed'). */
  readonly onCommit: boolean;
  /** Told at COMMIT when the acknowledgement still waits for the fsync (AppendOptions.onCommitted). */
  readonly committed: ((results: AppendResult[]) => void) | undefined;
  /** How its commit is made durable (AppendOptions.durableAtOnce, durableOffLoop). */
  readonly sync: CommitSync;
  readonly resolve: (results: AppendResult[]) => void;
  readonly reject: (error: unknown) => void;
}

/** What one part of an append wrote: its events and, in the same order, the positions they were given. */
interface WrittenAppend {
  readonly pending: AppendPart;
  readonly firstRevision: bigint;
  readonly positions: readonly bigint[];
}

/**
 * The events one group commit wrote, as this process already holds them (validated, serialised):
 * subscriptions of this store take them from here instead of reading them back from the file.
 * `events()` parses the stored JSON once, on the first call, and every subscriber shares those
 * objects; they are frozen (as every event this store hands out is), so no subscriber can change
 * what another one sees.
 */
class CommittedGroup implements CommittedEvents {
  readonly first: bigint;
  readonly last: bigint;
  readonly count: number;

  constructor(
    private readonly appends: readonly WrittenAppend[],
    private readonly recordedAt: string,
  ) {
    const firstAppend = appends[0]!.positions;
    const lastAppend = appends[appends.length - 1]!.positions;
    this.first = firstAppend[0]!;
    this.last = lastAppend[lastAppend.length - 1]!;
    this.count = appends.reduce((sum, append) => sum + append.positions.length, 0);
  }

  private parsed: readonly RecordedEvent[] | undefined;

  events(): readonly RecordedEvent[] {
    this.parsed ??= this.parse();
    return this.parsed;
  }

  private parse(): readonly RecordedEvent[] {
    const events: RecordedEvent[] = new Array(this.count);
    let index = 0;
    for (const { pending, firstRevision, positions } of this.appends) {
      for (let offset = 0; offset < positions.length; offset++) {
        const event = pending.events[offset]!;
        events[index++] = Object.freeze({
          id: event.id,
          type: event.type,
          data: deepFreeze(JSON.parse(event.dataJson) as unknown),
          metadata: deepFreeze(JSON.parse(event.metadataJson) as RecordedEvent['metadata']),
          streamName: pending.streamName,
          revision: firstRevision + BigInt(offset),
          position: positions[offset]!,
          recordedAt: this.recordedAt,
        });
      }
    }
    return Object.freeze(events);
  }
}

/** How an append asks for its commit to be made durable: at once wins over off the loop. */
function commitSyncOf(options: AppendOptions | AppendTogetherOptions): CommitSync {
  if (options.durableAtOnce === true) return 'at-once';
  return options.durableOffLoop === true ? 'off-loop' : 'with-the-turn';
}

/**
 * How a group commit is made durable, from the appends of it that wait for the disk (`waits`): at
 * once when any asked for it, off the loop when all of them asked for that, else with the turn.
 */
function commitSyncOfGroup(group: readonly PendingAppend[], waits: (index: number) => boolean): CommitSync {
  let allOffLoop = true;
  for (let index = 0; index < group.length; index++) {
    if (!waits(index)) continue;
    const { sync } = group[index]!;
    if (sync === 'at-once') return 'at-once';
    if (sync !== 'off-loop') allOffLoop = false;
  }
  return allOffLoop ? 'off-loop' : 'with-the-turn';
}

/** A row of `events` as the read statements return it (raw mode, safe integers). */
type EventRow = [
  position: bigint,
  streamName: string,
  revision: bigint,
  eventId: string,
  type: string,
  data: string,
  metadata: string,
  recordedAtMs: bigint,
];

const EVENT_COLUMNS = 'position, stream_name, revision, event_id, type, data, metadata, recorded_at_ms';

/** Page sizes given their own statement (see PagedStatement); callers use only a handful. */
export const MAX_PAGE_SIZE_STATEMENTS = 16;

/**
 * A read of event rows with a `LIMIT`, prepared once per page size with the size written into the
 * SQL: SQLite runs a short read with `LIMIT 10000` in about a third of the time it takes with
 * `LIMIT ?` bound to 10000 (5 µs against 14 µs for an empty page, measured with better-sqlite3 12 on
 * this project's machine), and every aggregate load and subscription poll is such a read. Page sizes
 * past MAX_PAGE_SIZE_STATEMENTS distinct ones share one statement with the limit bound.
 */
class PagedStatement {
  private readonly bySize = new Map<number, Database.Statement>();
  private readonly bound: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly sql: string,
  ) {
    this.bound = this.prepare(`${sql} LIMIT ?`);
  }

  all(maxCount: number, ...parameters: unknown[]): EventRow[] {
    let statement = this.bySize.get(maxCount);
    if (statement === undefined) {
      if (this.bySize.size >= MAX_PAGE_SIZE_STATEMENTS || !Number.isSafeInteger(maxCount)) return this.bound.all(...parameters, maxCount) as EventRow[];
      statement = this.prepare(`${this.sql} LIMIT ${maxCount}`);
      this.bySize.set(maxCount, statement);
    }
    return statement.all(...parameters) as EventRow[];
  }

  private prepare(sql: string): Database.Statement {
    return this.db.prepare(sql).raw().safeIntegers(true);
  }
}

/** The last `recorded_at_ms` converted and its ISO text: the events of one commit share their time. */
let lastRecordedAtMs = -1n;
let lastRecordedAt = '';

/**
 * Freezes a parsed JSON value and everything in it. Events are facts: a reader that could change one
 * in place would change it for every other reader holding the same object (the subscriptions of one
 * commit share theirs), so the store hands out frozen events only. Costs little next to the parse.
 */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

function toRecordedEvent(row: EventRow): RecordedEvent {
  if (row[7] !== lastRecordedAtMs) {
    lastRecordedAt = new Date(Number(row[7])).toISOString();
    lastRecordedAtMs = row[7];
  }
  return Object.freeze({
    id: row[3],
    type: row[4],
    data: deepFreeze(JSON.parse(row[5]) as unknown),
    metadata: deepFreeze(JSON.parse(row[6]) as RecordedEvent['metadata']),
    streamName: row[1],
    revision: row[2],
    position: row[0],
    recordedAt: lastRecordedAt,
  });
}

/** A page of the log as a replay that wants some event types only reads it. */
export interface SqliteReplayPage {
  /** The page's events of the wanted types, in position order. */
  readonly events: RecordedEvent[];
  /** Events of the log in the page, wanted or not. */
  readonly count: number;
  /** Position of the page's last event, wanted or not; undefined for an empty page. */
  readonly lastPosition: bigint | undefined;
}

/** Reads an embedded log for a replay (a projection rebuild on its own thread and connection). */
export interface SqliteReplayReader {
  /** The next `maxCount` events of the log after `after` (from the start when undefined). */
  readPage(after: bigint | undefined, maxCount: number): SqliteReplayPage;
  close(): void;
}

/**
 * Opens the log at `path` read-only for a replay that handles only `types`: every event of a page
 * counts towards it and its last position, but only the wanted ones are parsed (JSON.parse of data
 * and metadata: about half of what reading an event costs).
 */
export function openSqliteReplayReader(path: string, types: readonly string[]): SqliteReplayReader {
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: SQLITE_BUSY_TIMEOUT_MS });
  try {
    const wanted = new Set(types);
    const select = db
      .prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`)
      .raw()
      .safeIntegers(true);
    return {
      readPage(after, maxCount) {
        const rows = select.all(after ?? -1, maxCount) as EventRow[];
        const events: RecordedEvent[] = [];
        for (let index = 0; index < rows.length; index++) {
          if (wanted.has(rows[index]![4])) events.push(toRecordedEvent(rows[index]!));
        }
        return { events, count: rows.length, lastPosition: rows.length === 0 ? undefined : rows[rows.length - 1]![0] };
      },
      close: () => db.close(),
    };
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * How many events of each type the log at `path` holds, over its last `lastEvents` events (the whole
 * log when it is shorter), read-only: what a parallel rebuild weighs its projections by. Positions of
 * the embedded log are 1, 2, 3… with none ever deleted, so the last events are a range of the rowid.
 */
export function countSqliteEventTypes(path: string, lastEvents: number): Map<string, number> {
  if (!Number.isSafeInteger(lastEvents) || lastEvents < 1) throw new RangeError(`lastEvents must be a positive integer, got ${lastEvents}`);
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: SQLITE_BUSY_TIMEOUT_MS });
  try {
    const head = (db.prepare('SELECT MAX(position) AS head FROM events').get() as { head: number | null }).head ?? 0;
    const rows = db
      .prepare('SELECT type, COUNT(*) AS events FROM events WHERE position > ? GROUP BY type')
      .all(head - lastEvents) as { type: string; events: number }[];
    return new Map(rows.map((row) => [row.type, row.events]));
  } finally {
    db.close();
  }
}

function revisionMatches(expected: ExpectedRevision, current: bigint | undefined): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return current === undefined;
    case 'stream_exists':
      return current !== undefined;
    default:
      return current === expected;
  }
}

function isDuplicateEventId(error: unknown): boolean {
  // By shape, not `instanceof`: the native addon keeps the error class (and so the Error realm) of the
  // first copy of better-sqlite3 loaded in the process, which a second module registry (jest's) does not share.
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'SQLITE_CONSTRAINT_UNIQUE' && typeof message === 'string' && message.includes('events.event_id');
}

/**
 * The embedded event store: one SQLite file in WAL mode, written by better-sqlite3.
 *
 * **Group commit.** `append` validates at once (bad input is refused before anything is queued),
 * then queues the append. The appends queued by one task (a callback and the promise reactions it
 * starts) are written in a single SQLite transaction as soon as that task ends (a microtask), so an
 * append does not wait for the rest of the event-loop turn's unrelated callbacks; past
 * MAX_EAGER_COMMITS_PER_TURN such commits in one turn, everything queued waits for the end of the
 * turn (`setImmediate`) and shares one commit, which bounds the transactions (and, under
 * `synchronous=FULL`, the fsyncs) a busy turn costs. Each append is checked against its own expected revision
 * and runs inside its own savepoint (a one-event append needs none: its single INSERT is atomic): a
 * stale one fails alone with ConcurrencyError while the others commit. An append's promise settles
 * only after COMMIT returned (and, under FULL, the WAL's fsync after it).
 *
 * **What an acknowledged append means.** A resolved `append` has been committed to the WAL file.
 * - `synchronous=FULL` (default): the WAL is fsynced before the append is acknowledged, so it also
 *   survives power loss, as far as the disk honours fsync. The fsync is WalSync's: on the main thread
 *   at the end of the turn while that thread has time to spare, else on the thread pool; commits made
 *   while one runs share the next (or, opened with `fsyncsInFlight` above one, start
 *   their own at once), and each covers every commit made before it started. A commit with an
 *   append that asked for it (AppendOptions.durableAtOnce) is fsynced on the main thread at once,
 *   in the task that committed it, while that thread has time to spare; one whose appends all asked
 *   for it (AppendOptions.durableOffLoop) on the thread pool, unless the turn's fsync on the main
 *   thread is already due (WalSync.afterCommit). Until one that
 *   started after it returns the commit is visible to readStream (decisions) but not to readAll,
 *   subscriptions, commit listeners or headPosition.
 * - `synchronous=NORMAL` (opt-in): the commit is written to the WAL with write(2) but not fsynced.
 *   It survives the process being killed (SIGKILL, a crash, an OOM kill), because the operating system
 *   already holds the bytes; an operating-system crash or a power loss may lose the most recent
 *   acknowledged commits (never part of one: the log reopens at an earlier, consistent commit).
 *
 * **Idempotency** compares ids, order and expected revision with the stored append (not the
 * content): a batch whose ids only partly match, or match with another expected revision or stream,
 * is refused with InvalidEventStoreInputError naming the field.
 *
 * **One writing process.** SQLite calls are synchronous: if another process holds the write lock,
 * a group commit waits for it (up to SQLITE_BUSY_TIMEOUT_MS) with the event loop blocked. Other
 * processes may read, and subscriptions see their writes through a poll, but the service should be
 * the only writer of its file.
 *
 * Revisions and positions come out of SQLite as bigint (safe-integer mode), never through a double.
 */
export class SqliteEventStore implements EventStore {
  private queue: PendingAppend[] = [];
  private flushScheduled = false;
  private eagerCommitsThisTurn = 0;
  private turnEndScheduled = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly commitListeners = new Set<(committed: CommittedEvents) => void>();
  private readonly subscriptions = new Set<SqliteSubscription>();
  private transactionsCommitted = 0;
  private appendsCommitted = 0;

  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly savepoint: Database.Statement;
  private readonly release: Database.Statement;
  private readonly rollbackToSavepoint: Database.Statement;
  private readonly togetherSavepoint: Database.Statement;
  private readonly releaseTogether: Database.Statement;
  private readonly rollbackTogether: Database.Statement;
  private readonly insertEvent: Database.Statement;
  private readonly selectStreamRevision: Database.Statement;
  private readonly selectEventById: Database.Statement;
  private readonly selectBatch: Database.Statement;
  private readonly selectStream: PagedStatement;
  private readonly selectAll: PagedStatement;
  private readonly selectHead: Database.Statement;

  /** Takes a configured and migrated connection; use openSqliteEventStore. */
  constructor(
    private readonly db: Database.Database,
    private readonly eagerCommitsPerTurn: number = MAX_EAGER_COMMITS_PER_TURN,
    /** Set when the log is FULL: each commit is acknowledged once this made it durable. */
    private readonly walSync?: WalSync,
    /**
     * Position of the writer's first commit not yet on disk, 0 when none: this store's own (as the
     * writer, shared with the threads that follow it) or its writer's (as a follower).
     */
    private readonly unsynced: BigInt64Array = new BigInt64Array(new SharedArrayBuffer(8)),
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT append_batch');
    this.release = db.prepare('RELEASE append_batch');
    this.rollbackToSavepoint = db.prepare('ROLLBACK TO append_batch');
    this.togetherSavepoint = db.prepare('SAVEPOINT append_together');
    this.releaseTogether = db.prepare('RELEASE append_together');
    this.rollbackTogether = db.prepare('ROLLBACK TO append_together');
    this.insertEvent = db
      .prepare(
        `INSERT INTO events (stream_name, revision, event_id, type, data, metadata, recorded_at_ms, batch_expected_revision)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .safeIntegers(true);
    this.selectStreamRevision = db
      .prepare('SELECT MAX(revision) FROM events WHERE stream_name = ?')
      .pluck()
      .safeIntegers(true);
    this.selectEventById = db
      .prepare('SELECT stream_name, revision, batch_expected_revision FROM events WHERE event_id = ?')
      .raw()
      .safeIntegers(true);
    this.selectBatch = db
      .prepare(
        `SELECT event_id, batch_expected_revision, position FROM events
         WHERE stream_name = ? AND revision >= ? ORDER BY revision LIMIT ?`,
      )
      .raw()
      .safeIntegers(true);
    this.selectStream = new PagedStatement(db, `SELECT ${EVENT_COLUMNS} FROM events WHERE stream_name = ? AND revision >= ? ORDER BY revision`);
    this.selectAll = new PagedStatement(db, `SELECT ${EVENT_COLUMNS} FROM events WHERE position > ? ORDER BY position`);
    this.selectHead = db.prepare('SELECT MAX(position) FROM events').pluck().safeIntegers(true);
  }

  /** How many transactions and appends were committed so far (appends per transaction shows group commit at work). */
  get groupCommitStats(): { readonly transactions: number; readonly appends: number } {
    return { transactions: this.transactionsCommitted, appends: this.appendsCommitted };
  }

  append(streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('The event store is closed'));
    if (this.walSync?.failure !== undefined) return Promise.reject(this.walSync.failure);
    let input: ReturnType<typeof validateAppend>;
    try {
      input = validateAppend(streamName, events, options);
    } catch (error) {
      return Promise.reject(error);
    }
    const { onCommitted } = options;
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({
        parts: [partOf(input)],
        onCommit: options.acknowledge === 'committed',
        committed: onCommitted === undefined ? undefined : (results) => onCommitted(results[0]!),
        sync: commitSyncOf(options),
        resolve: (results) => resolve(results[0]!),
        reject,
      });
      if (!this.flushScheduled) this.scheduleFlush();
    });
  }

  /**
   * Appends the parts in one savepoint of the next group commit: a part that fails (a conflict, a
   * duplicate id) rolls back every part before it, and the whole fails with that part's error.
   */
  appendTogether(parts: readonly StreamAppend[], options: AppendTogetherOptions = {}): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new Error('The event store is closed'));
    if (this.walSync?.failure !== undefined) return Promise.reject(this.walSync.failure);
    let input: ReturnType<typeof validateAppendTogether>;
    try {
      input = validateAppendTogether(parts, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.queue.push({
        parts: input.map(partOf),
        onCommit: options.acknowledge === 'committed',
        committed: options.onCommitted,
        sync: commitSyncOf(options),
        resolve,
        reject,
      });
      if (!this.flushScheduled) this.scheduleFlush();
    });
  }

  async readStream(streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    const input = validateReadStream(streamName, options);
    const rows = this.selectStream.all(input.maxCount ?? -1, input.streamName, input.fromRevision);
    return rows.map(toRecordedEvent);
  }

  async streamRevision(streamName: string): Promise<bigint | undefined> {
    this.assertOpen();
    return this.currentRevision(validateStreamName(streamName));
  }

  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    const input = validateReadAll(options);
    return this.readDurablePage(input.after, input.maxCount ?? -1);
  }

  subscribeToAll(handler: SubscriptionHandler, options?: SubscribeOptions): Subscription {
    this.assertOpen();
    if (this.closing) throw new Error('The event store is closing');
    const after = validateSubscribe(handler, options);
    const subscription = new SqliteSubscription(
      {
        readPage: (from, maxCount) => this.readDurablePage(from, maxCount),
        onCommit: (listener) => {
          this.commitListeners.add(listener);
          return () => this.commitListeners.delete(listener);
        },
      },
      handler,
      after,
      (finished) => this.subscriptions.delete(finished),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** The last position on disk: a commit still waiting for its fsync is not counted. */
  async headPosition(): Promise<bigint | undefined> {
    this.assertOpen();
    const unsynced = this.firstUnsynced();
    if (unsynced !== undefined) return unsynced === 1n ? undefined : unsynced - 1n;
    return (this.selectHead.get() as bigint | null) ?? undefined;
  }

  /**
   * Calls `listener` with the position of the last event of each commit made through this store, after
   * COMMIT (a cheap signal for another thread or process that follows the file). Returns the
   * unregister function. A listener must not throw.
   */
  onCommitted(listener: (lastPosition: bigint) => void): () => void {
    const onCommit = (committed: CommittedEvents): void => listener(committed.last);
    this.commitListeners.add(onCommit);
    return () => this.commitListeners.delete(onCommit);
  }

  /**
   * Tells this store's subscriptions that another connection (another thread or process) committed to
   * the file: they read the log now instead of at their next poll (SUBSCRIPTION_POLL_INTERVAL_MS).
   */
  pollNow(): void {
    for (const subscription of this.subscriptions) subscription.poll();
  }

  /**
   * Shared memory holding the position of this writer's first commit still waiting for its fsync
   * (0 when none), for a connection in another thread to follow it (SqliteEventStoreOptions.follows).
   */
  get unsyncedMarker(): SharedArrayBuffer {
    return this.unsynced.buffer as SharedArrayBuffer;
  }

  /** Position of the first commit not yet on disk (this writer's, or the followed writer's), if any. */
  private firstUnsynced(): bigint | undefined {
    const marker = Atomics.load(this.unsynced, 0);
    return marker === 0n ? undefined : marker;
  }

  /**
   * What an acknowledged append survives: `FULL` (power loss; SQLite's own FULL, or NORMAL with the
   * WAL fsynced off the event loop before the acknowledgement) or `NORMAL` (a killed process).
   */
  get synchronous(): SqliteSynchronous {
    this.assertOpen();
    // SQLite answers 1 for NORMAL and 2 for FULL; nothing else is ever set here.
    return this.walSync !== undefined || this.db.pragma('synchronous', { simple: true }) === 2 ? 'FULL' : 'NORMAL';
  }

  /**
   * Copies what the write-ahead log holds into the database file without waiting for any lock
   * (`PRAGMA wal_checkpoint(PASSIVE)`), so that work, and its fsync, can run on a connection other
   * than the writer's. Returns the WAL's size and how much of it is now in the database file, in pages.
   */
  checkpointWal(): WalCheckpoint {
    this.assertOpen();
    const [row] = this.db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    return { busy: row?.busy === 1, walPages: row?.log ?? 0, checkpointedPages: row?.checkpointed ?? 0 };
  }

  /**
   * Stops the subscriptions (awaiting their handlers), commits the appends already queued, then
   * closes the file. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.subscriptions].map((subscription) => subscription.stop()));
      this.closed = true;
      this.flush();
      if (this.walSync !== undefined) {
        await this.walSync.drained();
        this.walSync.close();
      }
      this.db.close();
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('The event store is closed');
  }

  private readPage(after: bigint | undefined, maxCount: number): RecordedEvent[] {
    const rows = this.selectAll.all(maxCount, after ?? -1);
    return rows.map(toRecordedEvent);
  }

  /**
   * A page of `$all` as readers and subscriptions see it: only what is on disk (or, for a follower,
   * what its writer said is), so no read model or webhook ever runs ahead of what a power loss keeps.
   * Streams are read whole (readStream): a decision must see every commit, durable or not yet.
   */
  private readDurablePage(after: bigint | undefined, maxCount: number): RecordedEvent[] {
    const page = this.readPage(after, maxCount);
    const unsynced = this.firstUnsynced();
    if (unsynced === undefined) return page;
    const end = page.findIndex((event) => event.position >= unsynced);
    return end === -1 ? page : page.slice(0, end);
  }

  private currentRevision(streamName: string): bigint | undefined {
    return (this.selectStreamRevision.get(streamName) as bigint | null) ?? undefined;
  }

  private scheduleFlush(): void {
    this.flushScheduled = true;
    if (this.eagerCommitsThisTurn >= this.eagerCommitsPerTurn) {
      setImmediate(this.flush);
      return;
    }
    this.eagerCommitsThisTurn++;
    if (!this.turnEndScheduled) {
      this.turnEndScheduled = true;
      setImmediate(this.endTurn);
    }
    queueMicrotask(this.flush);
  }

  private readonly endTurn = (): void => {
    this.turnEndScheduled = false;
    this.eagerCommitsThisTurn = 0;
  };

  private readonly flush = (): void => {
    this.flushScheduled = false;
    while (this.queue.length > 0) {
      this.commitGroup(this.queue.splice(0, MAX_APPENDS_PER_GROUP_COMMIT));
    }
  };

  /** Writes a group of appends in one transaction; settles each one only after COMMIT. */
  private commitGroup(group: readonly PendingAppend[]): void {
    // After a failed fsync nothing more is committed: appends queued before the store learned of it fail too.
    const failure = this.walSync?.failure;
    if (failure !== undefined) {
      for (const pending of group) pending.reject(failure);
      return;
    }
    const outcomes: Array<AppendResult[] | Error> = new Array(group.length);
    const recordedAtMs = Date.now();
    const writtenAppends: WrittenAppend[] = [];
    let written = 0;
    try {
      this.begin.run();
      try {
        for (let index = 0; index < group.length; index++) {
          const outcome = this.applyPending(group[index]!, recordedAtMs, writtenAppends);
          outcomes[index] = outcome;
          if (!(outcome instanceof Error)) written++;
        }
        // Before COMMIT makes them visible to other connections: followers must not read past them.
        if (this.walSync !== undefined && writtenAppends.length > 0 && Atomics.load(this.unsynced, 0) === 0n) {
          Atomics.store(this.unsynced, 0, writtenAppends[0]!.positions[0]!);
        }
        this.commit.run();
      } catch (error) {
        // SQLite may already have rolled back on its own (e.g. disk full).
        if (this.db.inTransaction) this.rollback.run();
        throw error;
      }
    } catch (error) {
      // Not one append's fault (I/O, lock timeout): none of the group was committed.
      // (After a failed fsync the marker stays where it is: what it hides was never made durable.)
      if (this.walSync !== undefined && this.walSync.firstUnsynced === undefined && this.walSync.failure === undefined) Atomics.store(this.unsynced, 0, 0n);
      for (const pending of group) pending.reject(error);
      return;
    }
    this.transactionsCommitted++;
    this.appendsCommitted += written;
    if (this.walSync === undefined) return this.deliver(group, outcomes, writtenAppends, recordedAtMs);
    // A group that wrote nothing may still answer a retried append whose first attempt committed: its
    // commit may be waiting for its fsync, so the answer waits for the next one too.
    const waitFrom = writtenAppends.length > 0 ? writtenAppends[0]!.positions[0]! : this.walSync.firstUnsynced;
    if (waitFrom === undefined || outcomes.every((outcome) => outcome instanceof Error)) return this.deliver(group, outcomes, writtenAppends, recordedAtMs);
    // Appends that asked for it are told now; the rest, and the listeners, once the fsync returned
    // (those that asked to know of the commit learn of it now).
    const early = group.map((pending, index) => pending.onCommit && !(outcomes[index] instanceof Error));
    early.forEach((now, index) => now && group[index]!.resolve(outcomes[index] as AppendResult[]));
    group.forEach((pending, index) => !early[index] && !(outcomes[index] instanceof Error) && pending.committed?.(outcomes[index] as AppendResult[]));
    const walSync = this.walSync;
    const sync = commitSyncOfGroup(group, (index) => !early[index] && !(outcomes[index] instanceof Error));
    walSync.afterCommit(
      waitFrom,
      (durability) => {
        if (durability === undefined) Atomics.store(this.unsynced, 0, walSync.firstUnsynced ?? 0n);
        this.deliver(group, outcomes, writtenAppends, recordedAtMs, durability, early);
      },
      sync,
    );
  }

  /**
   * Settles each append of a committed group and tells the commit listeners, once the group is as
   * durable as the store promises; a failed fsync fails the appends it was to make durable.
   */
  private deliver(
    group: readonly PendingAppend[],
    outcomes: ReadonlyArray<AppendResult[] | Error>,
    written: readonly WrittenAppend[],
    recordedAtMs: number,
    durability?: Error,
    told?: readonly boolean[],
  ): void {
    for (let index = 0; index < group.length; index++) {
      if (told?.[index] === true) continue;
      const outcome = durability ?? outcomes[index]!;
      if (outcome instanceof Error) group[index]!.reject(outcome);
      else group[index]!.resolve(outcome);
    }
    if (durability === undefined && written.length > 0 && this.commitListeners.size > 0) {
      const committed = new CommittedGroup(written, new Date(recordedAtMs).toISOString());
      for (const listener of this.commitListeners) listener(committed);
    }
  }

  /**
   * One append inside the group's transaction: its one part, or its parts inside a savepoint that the
   * first failing part rolls back. Returns each part's result, or the error that fails this append
   * alone; throws only for faults that doom the whole transaction.
   */
  private applyPending(pending: PendingAppend, recordedAtMs: number, writtenAppends: WrittenAppend[]): AppendResult[] | Error {
    if (pending.parts.length === 1) {
      const outcome = this.applyAppend(pending.parts[0]!, recordedAtMs, writtenAppends);
      return outcome instanceof Error ? outcome : [outcome];
    }
    const writtenBefore = writtenAppends.length;
    this.togetherSavepoint.run();
    const results: AppendResult[] = [];
    for (const [index, part] of pending.parts.entries()) {
      const outcome = this.applyAppend(part, recordedAtMs, writtenAppends, true);
      if (outcome instanceof Error) {
        this.rollbackTogether.run();
        this.releaseTogether.run();
        writtenAppends.length = writtenBefore;
        // Named by its part, as the input checks name it (a stored id: `parts[i].events[j].id`).
        return inPart(index, outcome);
      }
      results.push(outcome);
    }
    this.releaseTogether.run();
    return results;
  }

  /**
   * One part inside the group's transaction. Returns the result, or the error that fails it (its
   * savepoint rolled back; `inPartOfTogether`: what it wrote is left to applyPending, which rolls back
   * every part); throws only for faults that doom the whole transaction.
   */
  private applyAppend(pending: AppendPart, recordedAtMs: number, writtenAppends: WrittenAppend[], inPartOfTogether = false): AppendResult | Error {
    const current = this.currentRevision(pending.streamName);
    if (!revisionMatches(pending.expectedRevision, current)) {
      // A retried append whose first attempt committed finds the stream moved on: answer it, not a conflict.
      return (
        this.replayOf(pending) ??
        new ConcurrencyError(pending.streamName, pending.expectedRevision, current ?? 'no_stream')
      );
    }
    const events = pending.events;
    const firstRevision = current === undefined ? 0n : current + 1n;
    let revision = firstRevision;
    let position = 0n;
    const positions: bigint[] = new Array(events.length);
    let index = 0;
    // A failed INSERT undoes itself (SQLite statements are atomic), so a one-event append has nothing
    // to roll back and skips the savepoint: two statements fewer on the most common append. A part of
    // an append across streams skips it too: a failing part rolls back the savepoint of all the parts.
    const undoable = events.length > 1 && !inPartOfTogether;
    if (undoable) this.savepoint.run();
    try {
      for (; index < events.length; index++) {
        const event = events[index]!;
        position = this.insertEvent.run(
          pending.streamName,
          revision,
          event.id,
          event.type,
          event.dataJson,
          event.metadataJson,
          recordedAtMs,
          index === 0 ? pending.expectedText : null,
        ).lastInsertRowid as bigint;
        positions[index] = position;
        revision++;
      }
      if (undoable) this.release.run();
      writtenAppends.push({ pending, firstRevision, positions });
      return { nextExpectedRevision: revision - 1n, position };
    } catch (error) {
      if (!isDuplicateEventId(error)) throw error;
      if (undoable) {
        this.rollbackToSavepoint.run();
        this.release.run();
      }
      return (index === 0 ? this.replayOf(pending) : undefined) ?? this.duplicateIdError(pending, index);
    }
  }

  /**
   * When the batch's first id is already stored: the original result if this is exactly that stored
   * append (same stream, same ids in order, same expected revision), otherwise the error saying what
   * differs. `undefined` when the first id is new.
   */
  private replayOf(pending: AppendPart): AppendResult | Error | undefined {
    const stored = this.storedPlace(pending.events[0]!.id);
    if (stored === undefined) return undefined;
    const mismatch = storedAppendMismatch(pending, stored);
    if (mismatch !== undefined) return mismatch;
    const rows = this.selectBatch.all(stored.streamName, stored.revision, pending.events.length + 1) as Array<[string, string | null, bigint]>;
    return replayFromStoredRows(
      pending,
      stored.revision,
      rows.map(([id, batchExpected, position]) => ({ id, batchExpected, position })),
    );
  }

  private storedPlace(id: string): StoredEventPlace | undefined {
    const stored = this.selectEventById.get(id) as [string, bigint, string | null] | undefined;
    return stored === undefined ? undefined : { streamName: stored[0], revision: stored[1], batchExpected: stored[2] };
  }

  private duplicateIdError(pending: AppendPart, index: number): Error {
    const id = pending.events[index]!.id;
    return duplicateEventIdError(id, index, this.storedPlace(id));
  }
}

/**
 * Opens (creating if needed) the embedded store at `path`: WAL mode, the busy timeout, the chosen
 * `synchronous` level, and the schema migrated to this build's version.
 */
export function openSqliteEventStore(options: SqliteEventStoreOptions): SqliteEventStore {
  const synchronous = options.synchronous ?? DEFAULT_LOG_SYNCHRONOUS;
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
    throw new InvalidEventStoreInputError('synchronous', `must be 'NORMAL' or 'FULL', got ${String(synchronous)}`);
  }
  if (typeof options.path !== 'string' || options.path.length === 0) {
    throw new InvalidEventStoreInputError('path', 'must be a file path or ":memory:"');
  }
  const inMemory = options.path === ':memory:';
  if (!inMemory) mkdirSync(dirname(options.path), { recursive: true });
  const db = new Database(options.path, { timeout: SQLITE_BUSY_TIMEOUT_MS });
  try {
    db.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    const journalMode = db.pragma('journal_mode = WAL', { simple: true });
    if (!inMemory && journalMode !== 'wal') throw new Error(`Could not switch ${options.path} to WAL mode (got ${String(journalMode)})`);
    // FULL's fsync is WalSync's, gathered over commits; SQLite itself commits without one.
    const inFlight = options.fsyncsInFlight ?? MAX_FSYNCS_IN_FLIGHT;
    if (!Number.isInteger(inFlight) || inFlight < 1 || inFlight > MAX_FSYNCS_IN_FLIGHT_OPTION) {
      throw new InvalidEventStoreInputError('fsyncsInFlight', `must be an integer from 1 to ${MAX_FSYNCS_IN_FLIGHT_OPTION}, got ${String(inFlight)}`);
    }
    const walSync = synchronous === 'FULL' && !inMemory ? new WalSync(`${options.path}-wal`, { onThreadPool: options.fsyncFile, onMainThread: options.fsyncFileInPlace, placement: options.fsyncPlacement }, inFlight) : undefined;
    db.pragma(`synchronous = ${walSync === undefined ? synchronous : 'NORMAL'}`);
    db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    // Each append runs in a savepoint, whose undo copies of pages would otherwise go to a temporary
    // file: measured at a quarter of append throughput. In memory they cost next to nothing.
    db.pragma('temp_store = MEMORY');
    migrateSqliteSchema(db);
    const eager = options.eagerCommitsPerTurn ?? MAX_EAGER_COMMITS_PER_TURN;
    if (!Number.isInteger(eager) || eager < 0 || eager > MAX_EAGER_COMMITS_PER_TURN) {
      throw new InvalidEventStoreInputError('eagerCommitsPerTurn', `must be an integer from 0 to ${MAX_EAGER_COMMITS_PER_TURN}, got ${String(eager)}`);
    }
    const follows = options.follows;
    return follows === undefined ? new SqliteEventStore(db, eager, walSync) : new SqliteEventStore(db, eager, undefined, new BigInt64Array(follows.unsyncedMarker));
  } catch (error) {
    db.close();
    throw error;
  }
}

/** A validated append's part, with its expected revision as stored on its first row. */
function partOf({ streamName, expectedRevision, events }: { readonly streamName: string; readonly expectedRevision: ExpectedRevision; readonly events: readonly ValidatedEvent[] }): AppendPart {
  return { streamName, expectedRevision, expectedText: typeof expectedRevision === 'bigint' ? expectedRevision.toString() : expectedRevision, events };
}
