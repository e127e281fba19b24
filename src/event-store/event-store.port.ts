/**
 * The event store port. Everything in llm-ledger is appended through it and read back from it; the
 * embedded SQLite store and the EventStoreDB adapter both implement it and both pass one contract suite
 * (test/event-store/event-store.contract.ts).
 *
 * The store knows nothing of the domain: it moves `{ type, data, metadata }` JSON records.
 * Revisions and global positions are `bigint`, so EventStoreDB's 64-bit values pass without loss.
 */

/** Expected revision of a stream before an append (EventStoreDB's vocabulary). */
export type ExpectedRevision = 'no_stream' | 'any' | 'stream_exists' | bigint;

/** Metadata every event carries. `schemaVersion` lets readers upcast old shapes (see upcasting.ts). */
export interface EventMetadata {
  readonly schemaVersion: number;
  readonly correlationId?: string;
  readonly causationId?: string;
  readonly [key: string]: unknown;
}

/**
 * An event to append. `id` (a UUID, never the nil UUID) is unique across the store. Re-appending a
 * batch with the same ids is a no-op returning the first result only when it carries the SAME exact
 * or `no_stream` expected revision as the first time: that is all KurrentDB guarantees (with `any` /
 * `stream_exists` it checks ids against an in-memory cache a restart empties, and may write a second
 * copy). So a writer that retries after an unknown outcome re-sends the same events with the same
 * exact revision.
 */
export interface NewEvent<Type extends string = string, Data = unknown> {
  readonly id: string;
  readonly type: Type;
  readonly data: Data;
  readonly metadata: EventMetadata;
}

/**
 * An event as stored: its stream, its revision within the stream and its global (commit) position.
 * Immutable: the embedded store hands out frozen events, shared by the subscriptions of one commit.
 */
export interface RecordedEvent<Type extends string = string, Data = unknown> extends NewEvent<Type, Data> {
  readonly streamName: string;
  /** 0-based position within the stream. */
  readonly revision: bigint;
  /** Position in the global log; strictly increasing in commit order. */
  readonly position: bigint;
  /** When the store committed the event (ISO-8601, UTC). */
  readonly recordedAt: string;
}

export interface AppendOptions {
  readonly expectedRevision: ExpectedRevision;
  /**
   * When the append is acknowledged: `durable` (default) once it is on disk as the store promises;
   * `committed` once it is committed and ordered before every later commit, without waiting for the
   * disk — for a step whose durability the same caller's next durable append implies (a log only
   * keeps a commit if it keeps every earlier one). Stores whose every acknowledgement is durable
   * (EventStoreDB) treat both alike.
   */
  readonly acknowledge?: 'durable' | 'committed';
  /**
   * Told with the append's result once it is committed and ordered before every later commit, when
   * its acknowledgement then still waits for the disk (the embedded store under FULL): a caller that
   * decides the stream's next append on this one's state may decide it now, since a log keeps a
   * later commit only if it keeps this one. Called at most once, before the promise settles, and
   * not at all by stores whose commit is their acknowledgement (the promise then says it). The
   * append may still fail afterwards (its fsync did): only the promise says it is durable. Must not
   * throw.
   */
  readonly onCommitted?: (result: AppendResult) => void;
  /**
   * The caller has I/O to start the moment the append is durable (the gateway's dispatch upstream,
   * which its HTTP client writes at the end of the event-loop turn it is handed over in): a store that gathers the
   * commits of one event-loop turn into one fsync at the turn's end (the embedded store under FULL)
   * makes this one durable at once instead, so the caller's I/O starts within the same turn. Stores
   * whose every commit is durable on its own (PostgreSQL, EventStoreDB) have nothing to hurry.
   */
  readonly durableAtOnce?: boolean;
  /**
   * The caller waits for the append to be durable, but then has nothing left to do in this process
   * except a write to a socket (the gateway's settlement, after which its caller gets the answer's
   * last bytes): a store that waits for the disk on the event loop's thread while that thread has time
   * to spare (the embedded store under FULL) makes this one durable on the thread pool instead, so the
   * thread goes on with other calls' work meanwhile. A commit whose appends all ask for it is fsynced so,
   * unless an fsync already due on the thread at the end of the turn covers it. Ignored with
   * `durableAtOnce`, and by stores whose every commit is durable on its own (PostgreSQL, EventStoreDB).
   */
  readonly durableOffLoop?: boolean;
}

export interface AppendResult {
  /** Revision of the last event now in the stream (the expected revision for the next append). */
  readonly nextExpectedRevision: bigint;
  /** Global position of the last appended event. */
  readonly position: bigint;
}

export interface ReadStreamOptions {
  /** First revision to read (inclusive). Default 0. */
  readonly fromRevision?: bigint;
  /** Upper bound on events returned. */
  readonly maxCount?: number;
}

export interface ReadAllOptions {
  /** Read events whose position is strictly greater than this. Default: from the beginning. */
  readonly after?: bigint;
  /** Upper bound on events returned. */
  readonly maxCount?: number;
}

export interface SubscribeOptions {
  /** Deliver events whose position is strictly greater than this (a checkpoint). Default: from the beginning. */
  readonly after?: bigint;
  /**
   * Told of every error the subscription meets on its own (not a handler's): `willRetry` true for a
   * transient one it resubscribes after (connection lost, server restarting), false for a permanent
   * one that ended it (access denied, an unreadable position); `stop()` then rejects with that error.
   */
  readonly onError?: (error: Error, willRetry: boolean) => void;
}

export type SubscriptionHandler = (event: RecordedEvent) => Promise<void> | void;

export interface Subscription {
  /** Stop delivering; resolves once no handler call is in flight. */
  stop(): Promise<void>;
  /** Position of the last event delivered and handled, if any. */
  readonly lastPosition: bigint | undefined;
}

/** One stream's part of an append across streams (EventStore.appendTogether). */
export interface StreamAppend {
  readonly streamName: string;
  readonly events: readonly NewEvent[];
  /** Checked against the stream as the parts before this one left it (a stream may have several parts). */
  readonly expectedRevision: ExpectedRevision;
}

/** How an append across streams is acknowledged: as AppendOptions says of one append, for all its parts at once. */
export type AppendTogetherOptions = Pick<AppendOptions, 'acknowledge' | 'durableAtOnce' | 'durableOffLoop'> & {
  /** As AppendOptions.onCommitted, with each part's result in the parts' order. */
  readonly onCommitted?: (results: readonly AppendResult[]) => void;
};

export interface EventStore {
  /** Appends atomically with optimistic concurrency; throws ConcurrencyError on a revision mismatch. */
  append(streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult>;
  /**
   * Appends several parts, to one stream or several, in ONE commit: all of them or none. Each part is
   * checked against its own expected revision as the parts before it left its stream, and the parts
   * take their positions in the global log in the order given. The first part that fails fails the
   * whole (its ConcurrencyError names its stream) and nothing is written. Re-sending the same parts
   * (same ids, same expected revisions) after an unknown outcome answers the first result, as `append`
   * does. Absent where the store cannot commit across streams (EventStoreDB before KurrentDB 25.1):
   * callers then append part by part, in order.
   */
  appendTogether?(parts: readonly StreamAppend[], options?: AppendTogetherOptions): Promise<AppendResult[]>;
  /** Events of one stream in revision order; an empty array for a stream that does not exist. */
  readStream(streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Current revision of a stream, or undefined when it does not exist. */
  streamRevision(streamName: string): Promise<bigint | undefined>;
  /** All events in global (commit) order. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Catch up from a position, then follow live, handing each event to the handler exactly once and in order. */
  subscribeToAll(handler: SubscriptionHandler, options?: SubscribeOptions): Subscription;
  /** Position of the last event in the log, or undefined for an empty log. */
  headPosition(): Promise<bigint | undefined>;
  /**
   * How far `to` is past `from` (undefined: the start of the log), in the store's own unit: events for
   * the embedded store, log bytes for KurrentDB. Without it, the difference of the two positions.
   */
  positionDistance?(from: bigint | undefined, to: bigint): bigint;
  /** Releases connections and file handles. Idempotent. */
  close(): Promise<void>;
}

/** Thrown when the stream's actual revision does not match the expected one. */
export class ConcurrencyError extends Error {
  override readonly name = 'ConcurrencyError';
  readonly code = 'concurrency_conflict';

  constructor(
    readonly streamName: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(
      `Wrong expected revision on stream "${streamName}": expected ${String(expected)}, actual ${String(actual)}`,
    );
  }
}

/** Thrown for input the store refuses before writing anything (bad stream name, unserialisable data…). */
export class InvalidEventStoreInputError extends Error {
  override readonly name = 'InvalidEventStoreInputError';

  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/**
 * The store did not answer: connection lost, deadline passed, server shutting down. Safe to retry a
 * read; for an append see AppendOutcomeUnknownError.
 */
export class EventStoreUnavailableError extends Error {
  override readonly name: string = 'EventStoreUnavailableError';
  readonly code = 'event_store_unavailable';

  constructor(
    readonly operation: string,
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

/**
 * An append whose outcome is unknown (the reply was lost): it may or may not have committed. The one
 * safe retry re-sends the same events (same ids) with the same exact or `no_stream` expected
 * revision: the store then answers the original result if the first attempt committed, appends if it
 * did not, or throws ConcurrencyError if someone else appended in between (and the first did not commit).
 */
export class AppendOutcomeUnknownError extends EventStoreUnavailableError {
  override readonly name = 'AppendOutcomeUnknownError';

  constructor(
    readonly streamName: string,
    readonly expected: ExpectedRevision,
    message: string,
    cause?: unknown,
  ) {
    super('append', message, cause);
  }
}

/**
 * The stream was deleted on the server. `tombstoned`: for good, every append fails. `soft-deleted`:
 * an operator soft-deleted it (or cut its history): KurrentDB hides its events up to `lastRevision`
 * (when known) and would let an append recreate it, numbering on after them, so the store refuses
 * both to create it anew and to read it from a later revision than asked (docs/eventstoredb.md).
 */
export class DeletedStreamError extends Error {
  override readonly name = 'DeletedStreamError';
  readonly code = 'stream_deleted';

  constructor(
    readonly streamName: string,
    readonly how: 'tombstoned' | 'soft-deleted',
    readonly lastRevision?: bigint,
  ) {
    super(
      how === 'tombstoned'
        ? `Stream "${streamName}" was tombstoned on the server: it can never be read or written again`
        : `Stream "${streamName}" was soft-deleted on the server${lastRevision === undefined ? '' : ` (its events up to revision ${lastRevision} are hidden from reads)`}: ` +
            'it is neither created anew nor read on from what is left of it',
    );
  }
}

export const EVENT_STORE = Symbol('EVENT_STORE');
