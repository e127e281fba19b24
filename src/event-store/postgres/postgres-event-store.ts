import { Pool } from 'pg';
import {
  AppendOptions,
  AppendOutcomeUnknownError,
  AppendResult,
  AppendTogetherOptions,
  ConcurrencyError,
  EventStore,
  EventStoreUnavailableError,
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
  ValidatedPart,
  validateAppend,
  validateAppendTogether,
  validateReadAll,
  validateReadStream,
  validateStreamName,
  validateSubscribe,
} from '../event-store-input.validation';
import { duplicateEventIdError, replayFromStoredRows, storedAppendMismatch, type StoredEventPlace } from '../stored-append-replay';
import { DEADLOCK_DETECTED_SQLSTATE, errorCode, isTransientPostgresError, violatedUniqueConstraint } from './postgres-errors';
import { migratePostgresSchema } from './postgres-schema.migrations';
import { POSTGRES_NOTIFY_CHANNEL, PostgresChangeListener, PostgresSubscription } from './postgres-subscription';

/** Connections each store keeps to the server at most (appends and reads share them). */
export const POSTGRES_POOL_CONNECTIONS = 10;
/** How long a call waits to connect (or for a free connection) before failing as unavailable, in ms. */
export const POSTGRES_CONNECT_TIMEOUT_MS = 5_000;
/**
 * Attempts of an `any` / `stream_exists` append that lost a race for the next revision (another
 * writer took it between the check and the insert): those expect no revision, so they try again.
 * Also the attempts of an append the server rolled back to break a deadlock.
 */
export const POSTGRES_ANY_REVISION_ATTEMPTS = 16;
/** Bits of a position below the writing transaction's id: the event's index within the transaction. */
export const POSTGRES_POSITION_INDEX_BITS = 16n;
/**
 * The highest position a reader of `$all` may hand over, exclusive: the first position of the oldest
 * transaction still running. Every transaction below it has ended, so nothing can still commit there;
 * what is above it waits until it is (docs/architecture.md, "The global order on PostgreSQL").
 */
const READ_BOUND_SQL = '(pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 65536)';

const EVENT_COLUMNS = 'position::text, stream_name, revision::text, event_id::text, type, data::text, metadata::text, recorded_at';

const STATEMENTS = {
  append: 'SELECT outcome, last_revision::text, last_position::text FROM ledger_append($1, $2, $3::uuid[], $4::text[], $5::text[], $6::text[])',
  appendTogether:
    'SELECT outcome, part, last_revision::text, last_position::text FROM ledger_append_together($1::text[], $2::text[], $3::integer[], $4::uuid[], $5::text[], $6::text[], $7::text[])',
  readStream: `SELECT ${EVENT_COLUMNS} FROM ledger_events WHERE stream_name = $1 AND revision >= $2 ORDER BY ledger_events.revision LIMIT $3`,
  readAll: `SELECT ${EVENT_COLUMNS} FROM ledger_events WHERE position > $1 AND position < ${READ_BOUND_SQL} ORDER BY ledger_events.position LIMIT $2`,
  head: `SELECT max(position)::text AS head FROM ledger_events WHERE position < ${READ_BOUND_SQL}`,
  revision: 'SELECT max(revision)::text AS revision FROM ledger_events WHERE stream_name = $1',
  eventById: 'SELECT stream_name, revision::text, batch_expected_revision FROM ledger_events WHERE event_id = $1',
  batch: 'SELECT event_id::text, batch_expected_revision, position::text FROM ledger_events WHERE stream_name = $1 AND revision >= $2 ORDER BY ledger_events.revision LIMIT $3',
  storedIds: 'SELECT event_id::text FROM ledger_events WHERE event_id = ANY($1::uuid[])',
} as const;

interface EventRow {
  position: string;
  stream_name: string;
  revision: string;
  event_id: string;
  type: string;
  data: string;
  metadata: string;
  recorded_at: Date;
}

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    metadata: JSON.parse(row.metadata) as RecordedEvent['metadata'],
    streamName: row.stream_name,
    revision: BigInt(row.revision),
    position: BigInt(row.position),
    recordedAt: row.recorded_at.toISOString(),
  };
}

/** An append as validated, with its expected revision as the append function and the replay store it. */
interface PostgresAppend {
  readonly streamName: string;
  readonly expectedRevision: ReturnType<typeof validateAppend>['expectedRevision'];
  readonly expectedText: string;
  readonly events: readonly ValidatedEvent[];
}

function toPostgresAppend(input: ValidatedPart): PostgresAppend {
  const expected = input.expectedRevision;
  return {
    streamName: input.streamName,
    expectedRevision: expected,
    expectedText: typeof expected === 'bigint' ? expected.toString() : expected,
    events: input.events,
  };
}

/**
 * Why `ledger_append` (or `ledger_append_together`) wrote nothing: the stream's revision was not the
 * expected one, a racing writer took the next revision first, or an event id is already stored.
 */
type AppendRefusal = { readonly conflict: bigint | undefined } | { readonly raced: true } | { readonly duplicateId: true };

/** The outcome of one call of `ledger_append`. */
type AppendCall = { readonly result: AppendResult } | AppendRefusal;

/** The outcome of the parts of one transaction: each part's result, or the first part refused (nothing written). */
type PartsOutcome = { readonly results: AppendResult[] } | { readonly refused: AppendRefusal; readonly index: number };

/** A row `ledger_append` or `ledger_append_together` answers. */
interface AppendRow {
  readonly outcome: string;
  readonly last_revision: string | null;
  readonly last_position: string | null;
}

/** An append's result from its `ok` row. */
function resultOf(row: AppendRow): AppendResult {
  return { nextExpectedRevision: BigInt(row.last_revision!), position: BigInt(row.last_position!) };
}

/** A `conflict` row's refusal: the stream's revision the append found, none when the stream does not exist. */
function conflictOf(row: AppendRow): AppendRefusal {
  return { conflict: row.last_revision === null ? undefined : BigInt(row.last_revision) };
}

/** The columns of each event, as the append functions take them. */
function eventArrays(events: readonly ValidatedEvent[]): [string[], string[], string[], string[]] {
  return [events.map((event) => event.id), events.map((event) => event.type), events.map((event) => event.dataJson), events.map((event) => event.metadataJson)];
}

/**
 * One call of `ledger_append` on the pool, its own transaction; a unique violation is a refusal, any
 * other failure is thrown.
 */
async function callAppend(pool: Pool, append: PostgresAppend): Promise<AppendCall> {
  try {
    const { rows } = await pool.query<AppendRow>({
      name: 'ledger_append',
      text: STATEMENTS.append,
      values: [append.streamName, append.expectedText, ...eventArrays(append.events)],
    });
    const row = rows[0]!;
    return row.outcome === 'ok' ? { result: resultOf(row) } : conflictOf(row);
  } catch (error) {
    const constraint = violatedUniqueConstraint(error);
    if (constraint === 'ledger_events_stream_revision_unique') return { raced: true };
    if (constraint === 'ledger_events_event_id_unique') return { duplicateId: true };
    throw error;
  }
}

/**
 * One call of `ledger_append_together` on the pool, its own transaction: every part's result, or the
 * first part refused, the function having rolled back what the parts before it wrote. Any other
 * failure is thrown.
 */
async function callAppendTogether(pool: Pool, parts: readonly PostgresAppend[]): Promise<PartsOutcome> {
  const { rows } = await pool.query<AppendRow & { readonly part: number }>({
    name: 'ledger_append_together',
    text: STATEMENTS.appendTogether,
    values: [
      parts.map((part) => part.streamName),
      parts.map((part) => part.expectedText),
      parts.map((part) => part.events.length),
      ...eventArrays(parts.flatMap((part) => part.events)),
    ],
  });
  const row = rows[0]!;
  if (row.outcome === 'ok') return { results: rows.map(resultOf) };
  const refused: AppendRefusal = row.outcome === 'raced' ? { raced: true } : row.outcome === 'duplicate_id' ? { duplicateId: true } : conflictOf(row);
  return { refused, index: row.part };
}

/**
 * The event store port on PostgreSQL (node-postgres). Each append is one call of the `ledger_append`
 * function (postgres-schema.migrations.ts) in its own transaction: the expected revision is checked
 * against the stream's committed head and the batch inserted; a writer racing for the same revision
 * waits on the unique (stream, revision) index and loses with ConcurrencyError. An append is
 * acknowledged after COMMIT returned, and the store refuses to open on a server whose
 * `synchronous_commit` is off (openPostgresEventStore), so an acknowledged append is on disk. Both
 * `acknowledge` levels are therefore durable, as on KurrentDB.
 *
 * **Global order.** A position is the writing transaction's id × 2^16 + the event's index in it.
 * Readers of `$all` (readAll, subscriptions, headPosition) stop below the oldest transaction still
 * running (READ_BOUND_SQL), so an append whose transaction started earlier and commits later is
 * never skipped: it is handed over before anything after it. Stream reads see every commit.
 *
 * **Appends across streams** (appendTogether) are one call of `ledger_append_together`, a statement
 * on the pool in its own transaction, so one round trip as a single append: it calls `ledger_append`
 * for each part in order, so each part is checked against what the parts before it wrote and the
 * parts' events take the one transaction's positions in the order given. The first refusal rolls back
 * what the parts before it wrote (a subtransaction inside the function) and is answered as a row
 * naming the part, which this class answers as for one append. A racing writer on any of their
 * streams waits on the unique index as for one append.
 *
 * **Idempotency**, as in the embedded store: a batch whose first id is stored is answered with the
 * stored append's result when it is exactly that append (same stream, ids in order, expected revision).
 *
 * **Subscriptions** follow live through LISTEN/NOTIFY: after each append the store notifies
 * POSTGRES_NOTIFY_CHANNEL (outside the append's transaction: a NOTIFY inside it would serialise every
 * commit on the server's notification queue lock), and polls as a backstop.
 */
export class PostgresEventStore implements EventStore {
  private readonly subscriptions = new Set<PostgresSubscription>();
  private readonly appendsInFlight = new Set<Promise<unknown>>();
  private listener: PostgresChangeListener | undefined;
  private notifying: Promise<void> | undefined;
  private notifyAgain = false;
  private closing: Promise<void> | undefined;

  /** Takes a pool on a migrated database; use openPostgresEventStore. */
  constructor(
    private readonly pool: Pool,
    private readonly connectionString: string,
  ) {}

  append(streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    if (this.closing) return Promise.reject(new Error('The event store is closed'));
    let input: ReturnType<typeof validateAppend>;
    try {
      input = validateAppend(streamName, events, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.track(this.appendParts([toPostgresAppend(input)], false).then((results) => results[0]!));
  }

  /** One transaction for every part; `acknowledge` is durable either way, and its commit is its acknowledgement (no onCommitted). */
  appendTogether(parts: readonly StreamAppend[], options?: AppendTogetherOptions): Promise<AppendResult[]> {
    if (this.closing) return Promise.reject(new Error('The event store is closed'));
    let input: ValidatedPart[];
    try {
      input = validateAppendTogether(parts, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.track(this.appendParts(input.map(toPostgresAppend), true));
  }

  /** Lets close() wait for the append, and announces its end (committed or not) to subscriptions. */
  private track<T>(appending: Promise<T>): Promise<T> {
    const tracked = appending.catch(() => undefined).finally(() => this.announceChange());
    this.appendsInFlight.add(tracked);
    void tracked.then(() => this.appendsInFlight.delete(tracked));
    return appending;
  }

  /**
   * Appends the parts in one statement, its own transaction (one part: `ledger_append`; several:
   * `ledger_append_together`), and answers each part's result. A refused part is answered
   * after the transaction ended (answerRefusal); an `any` / `stream_exists` part that lost a race for
   * the next revision, or a deadlock, tries the whole again. `together`: input errors name their part's field.
   */
  private async appendParts(parts: readonly PostgresAppend[], together: boolean): Promise<AppendResult[]> {
    try {
      for (let attempt = 1; ; attempt++) {
        const outcome = await (parts.length === 1 ? this.appendAlone(parts[0]!) : callAppendTogether(this.pool, parts)).catch((error: unknown) => {
          // Rolled back by the server, so nothing of it committed: sent again, it meets the winner's commit.
          if (errorCode(error) === DEADLOCK_DETECTED_SQLSTATE && attempt < POSTGRES_ANY_REVISION_ATTEMPTS) return undefined;
          throw error;
        });
        if (outcome === undefined) continue;
        if ('results' in outcome) return outcome.results;
        const failed = parts[outcome.index]!;
        const racedAgain = 'raced' in outcome.refused && attempt < POSTGRES_ANY_REVISION_ATTEMPTS;
        if (racedAgain && (failed.expectedRevision === 'any' || failed.expectedRevision === 'stream_exists')) continue;
        return await this.answerRefusal(parts, outcome.index, outcome.refused, together);
      }
    } catch (error) {
      if (!isTransientPostgresError(error)) throw error;
      const first = parts[0]!;
      const others = parts.length > 1 ? ` and ${parts.length - 1} more part(s)` : '';
      throw new AppendOutcomeUnknownError(
        first.streamName,
        first.expectedRevision,
        `The append to "${first.streamName}"${others} may or may not have committed (${(error as Error).message}); ` +
          're-send the same events with the same expected revision to find out',
        error,
      );
    }
  }

  /** One part: a single call of `ledger_append` is its own transaction, one round trip. */
  private async appendAlone(part: PostgresAppend): Promise<PartsOutcome> {
    const call = await callAppend(this.pool, part);
    return 'result' in call ? { results: [call.result] } : { refused: call, index: 0 };
  }

  /**
   * The answer to parts refused at `index`, once their transaction ended: the stored results when the
   * parts are a re-sent append already committed, otherwise that part's ConcurrencyError (with the
   * revision the refusal found, or the racing writer's) or the refusal of its stored event id.
   */
  private async answerRefusal(parts: readonly PostgresAppend[], index: number, refused: AppendRefusal, together: boolean): Promise<AppendResult[]> {
    const name = (at: number, error: Error): Error => (together ? inPart(at, error) : error);
    const failed = parts[index]!;
    const current = 'conflict' in refused ? refused.conflict : 'raced' in refused ? await this.currentRevision(failed.streamName) : undefined;
    const replay = await this.replayOfParts(parts, name);
    if (replay instanceof Error) throw replay;
    if (replay !== undefined) return replay;
    if ('duplicateId' in refused) throw name(index, await this.duplicateIdError(failed));
    throw new ConcurrencyError(failed.streamName, failed.expectedRevision, current ?? 'no_stream');
  }

  /**
   * When the first part's first id is already stored: each part's original result if every part is
   * exactly a stored append, otherwise the error saying what differs. `undefined` when that id is new.
   */
  private async replayOfParts(parts: readonly PostgresAppend[], name: (at: number, error: Error) => Error): Promise<AppendResult[] | Error | undefined> {
    const results: AppendResult[] = [];
    for (let index = 0; index < parts.length; index++) {
      const replay = await this.replayOf(parts[index]!);
      if (replay instanceof Error) return name(index, replay);
      if (replay === undefined && index === 0) return undefined;
      if (replay === undefined) {
        return new InvalidEventStoreInputError(
          `parts[${index}].events[0].id`,
          `${parts[index]!.events[0]!.id} is not stored, but the parts before it are: the parts only partly match a stored append; re-send exactly the original parts, or use new ids`,
        );
      }
      results.push(replay);
    }
    return results;
  }

  /**
   * When the batch's first id is already stored: the original result if this is exactly that stored
   * append, otherwise the error saying what differs. `undefined` when the first id is new.
   */
  private async replayOf(append: PostgresAppend): Promise<AppendResult | Error | undefined> {
    const stored = await this.storedPlace(append.events[0]!.id);
    if (stored === undefined) return undefined;
    const mismatch = storedAppendMismatch(append, stored);
    if (mismatch !== undefined) return mismatch;
    const { rows } = await this.pool.query<{ event_id: string; batch_expected_revision: string | null; position: string }>({
      name: 'ledger_batch',
      text: STATEMENTS.batch,
      values: [stored.streamName, stored.revision.toString(), append.events.length + 1],
    });
    return replayFromStoredRows(
      append,
      stored.revision,
      rows.map((row) => ({ id: row.event_id, batchExpected: row.batch_expected_revision, position: BigInt(row.position) })),
    );
  }

  private async storedPlace(id: string): Promise<StoredEventPlace | undefined> {
    const { rows } = await this.pool.query<{ stream_name: string; revision: string; batch_expected_revision: string | null }>({
      name: 'ledger_event_by_id',
      text: STATEMENTS.eventById,
      values: [id],
    });
    const row = rows[0];
    return row === undefined ? undefined : { streamName: row.stream_name, revision: BigInt(row.revision), batchExpected: row.batch_expected_revision };
  }

  /** The refusal naming the first event of the batch whose id is already stored. */
  private async duplicateIdError(append: PostgresAppend): Promise<Error> {
    const ids = append.events.map((event) => event.id);
    const { rows } = await this.pool.query<{ event_id: string }>({ name: 'ledger_stored_ids', text: STATEMENTS.storedIds, values: [ids] });
    const stored = new Set(rows.map((row) => row.event_id));
    const index = Math.max(0, ids.findIndex((id) => stored.has(id)));
    return duplicateEventIdError(ids[index]!, index, await this.storedPlace(ids[index]!));
  }

  async readStream(streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    const input = validateReadStream(streamName, options);
    const rows = await this.read<EventRow>('readStream', 'ledger_read_stream', STATEMENTS.readStream, [
      input.streamName,
      input.fromRevision.toString(),
      input.maxCount ?? null,
    ]);
    return rows.map(toRecordedEvent);
  }

  async streamRevision(streamName: string): Promise<bigint | undefined> {
    this.assertOpen();
    return this.currentRevision(validateStreamName(streamName));
  }

  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertOpen();
    const input = validateReadAll(options);
    return this.readPage(input.after, input.maxCount ?? null);
  }

  subscribeToAll(handler: SubscriptionHandler, options?: SubscribeOptions): Subscription {
    this.assertOpen();
    const after = validateSubscribe(handler, options);
    this.listener ??= new PostgresChangeListener(this.connectionString, () => this.wakeSubscriptions());
    const subscription = new PostgresSubscription(
      { readPage: (from, maxCount) => this.readPage(from, maxCount) },
      handler,
      after,
      options?.onError,
      (finished) => this.subscriptions.delete(finished),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** The last position a reader of `$all` can see now (below the oldest transaction still running). */
  async headPosition(): Promise<bigint | undefined> {
    this.assertOpen();
    const [row] = await this.read<{ head: string | null }>('headPosition', 'ledger_head', STATEMENTS.head, []);
    return row?.head == null ? undefined : BigInt(row.head);
  }

  /** Transactions between two positions (each append is one), the store's own unit of distance. */
  positionDistance(from: bigint | undefined, to: bigint): bigint {
    const distance = (to >> POSTGRES_POSITION_INDEX_BITS) - (from === undefined ? 0n : from >> POSTGRES_POSITION_INDEX_BITS);
    return distance > 0n ? distance : 0n;
  }

  /**
   * Lets appends in flight settle, stops the subscriptions (awaiting their handlers) and the
   * listener, then closes the pool. Appends after it are refused. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.appendsInFlight]);
      await Promise.allSettled([...this.subscriptions].map((subscription) => subscription.stop()));
      await this.listener?.close();
      await this.notifying;
      await this.pool.end();
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('The event store is closed');
  }

  private async readPage(after: bigint | undefined, maxCount: number | null): Promise<RecordedEvent[]> {
    const rows = await this.read<EventRow>('readAll', 'ledger_read_all', STATEMENTS.readAll, [(after ?? -1n).toString(), maxCount]);
    return rows.map(toRecordedEvent);
  }

  private async currentRevision(streamName: string): Promise<bigint | undefined> {
    const [row] = await this.read<{ revision: string | null }>('streamRevision', 'ledger_revision', STATEMENTS.revision, [streamName]);
    return row?.revision == null ? undefined : BigInt(row.revision);
  }

  /** A read, its transient failures (server away) reported as EventStoreUnavailableError. */
  private async read<Row extends object>(operation: string, name: string, text: string, values: unknown[]): Promise<Row[]> {
    try {
      return (await this.pool.query<Row>({ name, text, values })).rows;
    } catch (error) {
      if (!isTransientPostgresError(error)) throw error;
      throw new EventStoreUnavailableError(operation, `PostgreSQL did not answer ${operation} (${(error as Error).message})`, error);
    }
  }

  private wakeSubscriptions(): void {
    for (const subscription of this.subscriptions) subscription.wakeable.wake();
  }

  /**
   * Wakes this store's subscriptions and notifies the other instances' after an append's transaction
   * ended (committed or not: a transaction that ended may be what held readers back). One NOTIFY is
   * in flight at a time; appends ending meanwhile share the next one.
   */
  private announceChange(): void {
    this.wakeSubscriptions();
    if (this.notifying !== undefined) {
      this.notifyAgain = true;
      return;
    }
    this.notifying = (async () => {
      do {
        this.notifyAgain = false;
        await this.pool.query(`NOTIFY ${POSTGRES_NOTIFY_CHANNEL}`).catch(() => undefined);
      } while (this.notifyAgain);
      this.notifying = undefined;
    })();
  }
}

/** Thrown when the server would acknowledge commits before they are on disk and the operator did not allow it. */
export class PostgresAsyncCommitError extends Error {
  override readonly name = 'PostgresAsyncCommitError';
}

export interface PostgresEventStoreOptions {
  /** `postgres://…` or `postgresql://…` (user, password, host, port, database, and libpq options such as `sslmode`). */
  readonly connectionString: string;
  /**
   * Accept a server whose `synchronous_commit` is off, where an acknowledged append may be lost in a
   * server crash (LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT=1). Default false: such a server is refused.
   */
  readonly allowAsyncCommit?: boolean;
}

/** Refuses a server that acknowledges commits before they are durable, unless the operator allowed it. */
async function checkDurableCommits(pool: Pool, allowAsyncCommit: boolean): Promise<void> {
  const { rows } = await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
  if (rows[0]?.synchronous_commit !== 'off' || allowAsyncCommit) return;
  throw new PostgresAsyncCommitError(
    'PostgreSQL synchronous_commit is off for this connection, so an acknowledged append could be lost in a server crash: ' +
      'set synchronous_commit = on (server, database or role), or set LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT=1 to accept that',
  );
}

/**
 * Thrown at open when the log holds positions made of transaction ids this server has not reached:
 * the database was restored from a dump into another cluster, whose counter started again. New
 * events would sort before old ones, and every reader would skip them.
 */
export class PostgresTransactionCounterBehindError extends Error {
  override readonly name = 'PostgresTransactionCounterBehindError';
}

/** Refuses a log whose last position is ahead of the server's transaction counter (see the error). */
async function checkTransactionCounter(pool: Pool): Promise<void> {
  const { rows } = await pool.query<{ last: string | null; next: string }>(
    `SELECT (max(position) >> ${POSTGRES_POSITION_INDEX_BITS})::text AS last, pg_snapshot_xmax(pg_current_snapshot())::text AS next FROM ledger_events`,
  );
  const { last, next } = rows[0]!;
  if (last === null || BigInt(last) < BigInt(next)) return;
  throw new PostgresTransactionCounterBehindError(
    `The PostgreSQL log's last position belongs to transaction ${last}, but this server's next transaction id is ${next} ` +
      `(restored from a dump into another cluster?): new events would sort before old ones. Stop the server and move its counter past the log ` +
      `with pg_resetwal -x <an xid above ${last}>, or restore from a physical backup`,
  );
}

/**
 * Connects to PostgreSQL, migrates the schema to this build's version (postgres-schema.migrations.ts)
 * and checks that commits are durable; the returned store is ready to append.
 */
export async function openPostgresEventStore(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
  const pool = new Pool({
    connectionString: options.connectionString,
    max: POSTGRES_POOL_CONNECTIONS,
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    application_name: 'llm-ledger',
  });
  // An idle connection cut by a server restart is dropped from the pool; the next call connects anew.
  pool.on('error', () => undefined);
  try {
    await migratePostgresSchema(pool);
    await checkDurableCommits(pool, options.allowAsyncCommit === true);
    await checkTransactionCounter(pool);
    return new PostgresEventStore(pool, options.connectionString);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}
