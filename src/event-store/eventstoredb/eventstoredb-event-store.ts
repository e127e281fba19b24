import { CatchUpSubscription, RetryDelay } from '../catch-up-subscription';
import {
  ANY,
  AllStreamSubscription,
  AppendExpectedRevision,
  BACKWARDS,
  CancelledError,
  DeadlineExceededError,
  END,
  EventStoreDBClient,
  FORWARDS,
  JSONType,
  MaxAppendSizeExceededError,
  NO_STREAM,
  Position,
  ReadPosition,
  START,
  STREAM_EXISTS,
  StreamDeletedError as ClientStreamDeletedError,
  StreamNotFoundError,
  TimeoutError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
} from '@eventstore/db-client';
import {
  AppendOptions,
  AppendOutcomeUnknownError,
  AppendResult,
  ConcurrencyError,
  DeletedStreamError,
  EventMetadata,
  EventStore,
  EventStoreUnavailableError,
  ExpectedRevision,
  InvalidEventStoreInputError,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
} from '../event-store.port';
import {
  validateAppend,
  validateReadAll,
  validateReadStream,
  validateStreamName,
  validateSubscribe,
} from '../event-store-input.validation';

/** Records read from `$all` per request while paging (system records included, then filtered out). */
export const ESDB_READ_PAGE_EVENTS = 500;
/** Most records `headPosition` reads backwards looking for the newest non-system event. */
export const ESDB_HEAD_SCAN_MAX_EVENTS = 5_000;
/**
 * Most `$all` records read looking for the log position of an event a stream read returned without
 * one (an event of a legacy TCP transaction), from the stream's previous event on.
 */
export const ESDB_POSITION_SCAN_MAX_EVENTS = 10_000;
/** First wait before resubscribing after a dropped subscription, in milliseconds. */
export const RESUBSCRIBE_INITIAL_DELAY_MS = 100;
/** Longest wait between resubscription attempts, in milliseconds (the wait doubles up to it). */
export const RESUBSCRIBE_MAX_DELAY_MS = 5_000;

/**
 * Extra attempts of a read that met a transient error. The client replaces a failed connection only
 * after a call failed on it, so the first read after a server restart fails and the next one works.
 */
export const ESDB_READ_RETRIES = 2;

/** The server's "no position" marker (unsigned 64-bit all ones), sent where a position is unknown. */
const NO_POSITION = (1n << 64n) - 1n;
/**
 * The `$tb` (truncate-before) a soft delete writes in a stream's metadata: the server's DeletedStream,
 * 2^63 − 1, as JSON.parse reads it (rounded to 2^63; no stream gets near that many events).
 */
const SOFT_DELETED_TRUNCATE_BEFORE = Number((1n << 63n) - 1n);
/** Bits of the port position that hold the prepare position (the commit position is above them). */
const PREPARE_BITS = 64n;
const PREPARE_MASK = (1n << PREPARE_BITS) - 1n;

/**
 * The port's position of an event: its commit position and its prepare position in one bigint,
 * `commit × 2^64 + prepare`. Both are needed: events of one explicit (legacy) transaction share a
 * commit position and differ only by prepare position, so the commit alone is not an identity, and
 * resuming inside such a transaction needs the pair. The order is `$all`'s order.
 */
export function toPortPosition(position: Position): bigint {
  return (position.commit << PREPARE_BITS) | position.prepare;
}

/** The (commit, prepare) pair a port position stands for. */
export function fromPortPosition(position: bigint): Position {
  return { commit: position >> PREPARE_BITS, prepare: position & PREPARE_MASK };
}

function knownPosition(position: Position | undefined): bigint | undefined {
  if (position === undefined) return undefined;
  const { commit, prepare } = position;
  if (commit < 0n || commit >= NO_POSITION || prepare < 0n || prepare >= NO_POSITION) return undefined;
  return toPortPosition(position);
}

function toEsdbExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'no_stream':
      return NO_STREAM;
    case 'any':
      return ANY;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return expected;
  }
}

type AnyRecordedEvent = {
  readonly streamId: string;
  readonly id: string;
  readonly revision: bigint;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: unknown;
  readonly isJson: boolean;
  readonly created: Date;
  readonly position?: Position;
};

/** System records: `$`-prefixed event types (links, metadata, stats) or streams. */
function isSystemRecord(event: AnyRecordedEvent): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

function decodeData(event: AnyRecordedEvent): unknown {
  if (event.isJson || !(event.data instanceof Uint8Array)) return event.data;
  // Written by another client as binary: hand over its text (parsed when it is JSON).
  const text = Buffer.from(event.data).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function decodeMetadata(metadata: unknown): EventMetadata {
  if (metadata !== null && typeof metadata === 'object' && !(metadata instanceof Uint8Array) && !Array.isArray(metadata)) {
    const candidate = metadata as Record<string, unknown>;
    // Events written by other clients may lack our schemaVersion; they are version 1 by definition.
    return typeof candidate['schemaVersion'] === 'number' ? (candidate as EventMetadata) : { ...candidate, schemaVersion: 1 };
  }
  return { schemaVersion: 1 };
}

function toRecordedEvent(event: AnyRecordedEvent, position: bigint): RecordedEvent {
  return {
    id: event.id,
    type: event.type,
    data: decodeData(event),
    metadata: decodeMetadata(event.metadata),
    streamName: event.streamId,
    revision: event.revision,
    position,
    recordedAt: event.created.toISOString(),
  };
}

function positionOrFail(event: AnyRecordedEvent): bigint {
  const position = knownPosition(event.position);
  if (position === undefined) {
    throw new Error(
      `The server returned no log position for event ${event.id} of "${event.streamId}": stream reads carry positions from KurrentDB/EventStoreDB 22.6 on`,
    );
  }
  return position;
}

/** The outcome of an append or read is unknown or the server unreachable: worth retrying. */
function isTransient(error: unknown): boolean {
  return (
    error instanceof UnavailableError ||
    error instanceof CancelledError ||
    error instanceof DeadlineExceededError ||
    error instanceof TimeoutError
  );
}

/**
 * The server's answer to a read from a position whose commit position is inside a record:
 * InvalidPosition, or Error when the bytes there fail another way (docs/eventstoredb.md).
 */
function isUnreadablePosition(error: unknown): boolean {
  return error instanceof UnknownError && /invalid ?position|ReadAllResult: Error/i.test(error.message);
}

/**
 * Reads a whole client stream into an array. Never leaving a read half-consumed matters: the client's
 * `dispose()` waits for every read it started to finish, and one abandoned mid-way never does.
 */
async function drain<T>(read: AsyncIterable<{ event?: T }>): Promise<T[]> {
  const events: T[] = [];
  for await (const resolved of read) if (resolved.event !== undefined) events.push(resolved.event);
  return events;
}

/** Runs a read again after a transient error, up to ESDB_READ_RETRIES more times. */
async function retryingTransient<T>(read: () => Promise<T>): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await read();
    } catch (error) {
      if (!isTransient(error) || retry >= ESDB_READ_RETRIES) throw error;
    }
  }
}

/** Thrown inside the subscription loop to tell a handler failure from a store one. */
class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/**
 * A catch-up subscription to `$all` (system events excluded on the server). The client does not
 * resubscribe by itself, so this does, but only after transient errors (dropped connection, server
 * shutting down or restarting): from the exact position of the last handled event (the server's
 * `fromPosition` is exclusive), after a wait that doubles from RESUBSCRIBE_INITIAL_DELAY_MS up to
 * RESUBSCRIBE_MAX_DELAY_MS, reported to `onError` each time. Any other error (access denied, an
 * unreadable position) ends it: reported to `onError` as permanent, and `stop()` rejects with it. So
 * does a handler that throws.
 */
class EventStoreDbSubscription extends CatchUpSubscription {
  private current: AllStreamSubscription | undefined;

  constructor(
    private readonly store: EventStoreDbEventStore,
    private readonly client: EventStoreDBClient,
    handler: SubscriptionHandler,
    after: bigint | undefined,
    private readonly onError: SubscribeOptions['onError'],
    onFinished: (subscription: EventStoreDbSubscription) => void,
  ) {
    super(handler, after, onFinished as (subscription: CatchUpSubscription) => void);
  }

  protected override async interrupt(): Promise<void> {
    await this.current?.unsubscribe().catch(() => undefined);
  }

  protected async follow(): Promise<void> {
    const retry = new RetryDelay(RESUBSCRIBE_INITIAL_DELAY_MS, RESUBSCRIBE_MAX_DELAY_MS);
    let from: ReadPosition = this.position === undefined ? START : fromPortPosition(this.position);
    let resolvedFrom = false;
    while (!this.stopped) {
      const before = this.position;
      const failure = await this.followFrom(from, retry);
      // Resubscribe after the last event handled (the server's `fromPosition` is exclusive).
      if (this.position !== undefined && this.position !== before) from = fromPortPosition(this.position);
      if (this.stopped) break;
      if (isUnreadablePosition(failure) && !resolvedFrom && this.position !== undefined) {
        // `after` was inside a record: start from the last event at or before it.
        resolvedFrom = true;
        from = await this.store.readPositionAtOrBefore(this.position);
        continue;
      }
      const error = failure instanceof Error ? failure : new Error(String(failure));
      if (!isTransient(failure)) {
        this.onError?.(error, false);
        throw error;
      }
      this.onError?.(error, true);
      await this.wakeable.wait(retry.next());
    }
  }

  /** One server-side subscription from `from`, until it fails (returned) or the handler throws (thrown). */
  private async followFrom(from: ReadPosition, retry: RetryDelay): Promise<unknown> {
    const subscription = this.client.subscribeToAll({ fromPosition: from, filter: excludeSystemEvents() });
    this.current = subscription;
    try {
      for await (const resolved of subscription) {
        if (this.stopped) break;
        const event = resolved.event as AnyRecordedEvent | undefined;
        if (event === undefined || isSystemRecord(event)) continue;
        const position = positionOrFail(event);
        // Exclusive on the server already; this guards a resubscription from an `after` no event has.
        if (this.position !== undefined && position <= this.position) continue;
        try {
          await this.deliver(toRecordedEvent(event, position));
        } catch (error) {
          throw new HandlerFailure(error);
        }
        retry.reset();
      }
      // The server ended the subscription without an error: as a dropped connection.
      return new UnavailableError(undefined, 'The server ended the subscription');
    } catch (error) {
      if (error instanceof HandlerFailure) throw error.error;
      return error;
    } finally {
      this.current = undefined;
      await subscription.unsubscribe().catch(() => undefined);
    }
  }
}

/**
 * The event store port on KurrentDB/EventStoreDB (`@eventstore/db-client` 6.2). Expected revisions map
 * one to one; revisions stay bigint; positions are (commit, prepare) pairs in one bigint
 * (toPortPosition). `readAll` and subscriptions hide system (`$`) events, which the port never writes.
 *
 * Errors become the port's: WrongExpectedVersion → ConcurrencyError; a deadline, timeout, lost
 * connection or server shutdown → AppendOutcomeUnknownError for an append (it may have committed; the
 * retry that is safe re-sends the same events with the same exact / `no_stream` revision, which the
 * server answers with the original result) or EventStoreUnavailableError for a read; a tombstoned
 * stream → DeletedStreamError; an append over the server's size bound → InvalidEventStoreInputError
 * on `events`.
 *
 * Soft-deleted streams: the server lets `no_stream` (or the old last revision) recreate one, its new
 * events numbered after the hidden ones. The ledger never does: a `no_stream` append first reads the
 * stream's metadata and refuses a soft-deleted stream with DeletedStreamError; so does a read that
 * finds the revisions it asked for hidden, or (reading on from a revision) finds the stream deleted.
 *
 * Re-appending the same ids is idempotent only with the same exact or `no_stream` revision as the
 * first time (the server compares them with the events stored after that revision, restart or not);
 * with `any` / `stream_exists` it only checks a cache a restart empties, and may write a second copy.
 * Stream reads need KurrentDB/EventStoreDB 22.6 or later, which returns each event's log position
 * (but for events of legacy TCP transactions, which are looked up in `$all`). docs/eventstoredb.md
 * says what this relies on and what was checked against the server's source.
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly subscriptions = new Set<EventStoreDbSubscription>();
  private readonly appendsInFlight = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;

  /** @param tlsHint appended to "unavailable" messages, e.g. to say the connection uses TLS. */
  constructor(
    private readonly client: EventStoreDBClient,
    private readonly tlsHint = '',
  ) {}

  append(streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    if (this.closing) return Promise.reject(new Error('The event store is closed'));
    const appending = this.appendOnce(streamName, events, options);
    // close() lets appends in flight finish: disposing the client cancels the shared BatchAppend call.
    const tracked = appending.catch(() => undefined);
    this.appendsInFlight.add(tracked);
    void tracked.then(() => this.appendsInFlight.delete(tracked));
    return appending;
  }

  private async appendOnce(streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    const input = validateAppend(streamName, events, options);
    const eventData = input.events.map((event) =>
      jsonEvent({
        id: event.id,
        type: event.type,
        data: event.data as JSONType,
        metadata: event.metadata as unknown as JSONType,
      }),
    );
    const creating = input.expectedRevision === 'no_stream';
    try {
      // A soft-deleted stream would accept `no_stream` and come back to life: refuse before writing.
      if (creating && (await this.isSoftDeleted(input.streamName))) throw new DeletedStreamError(input.streamName, 'soft-deleted');
      const result = await this.client.appendToStream(input.streamName, eventData, {
        expectedRevision: toEsdbExpectedRevision(input.expectedRevision),
      });
      const first = result.nextExpectedRevision - BigInt(eventData.length) + 1n;
      if (creating && first !== 0n) {
        // Deleted between the check and the append: committed after its hidden events. Say so, loudly.
        throw new DeletedStreamError(input.streamName, 'soft-deleted', first - 1n);
      }
      const position =
        knownPosition(result.position) ?? (await this.positionOf(input.streamName, result.nextExpectedRevision));
      return { nextExpectedRevision: result.nextExpectedRevision, position };
    } catch (error) {
      if (error instanceof DeletedStreamError) throw error;
      if (error instanceof WrongExpectedVersionError) {
        const actual = error.actualVersion;
        if (input.expectedRevision === 'no_stream' && actual !== 'no_stream' && (await this.readsAsAbsent(input.streamName))) {
          throw new DeletedStreamError(input.streamName, 'soft-deleted', actual);
        }
        throw new ConcurrencyError(input.streamName, input.expectedRevision, actual);
      }
      if (error instanceof ClientStreamDeletedError) {
        // `stream_exists` on a soft-deleted stream fails the same way as any append to a tombstoned one.
        throw new DeletedStreamError(input.streamName, (await this.isTombstoned(input.streamName)) ? 'tombstoned' : 'soft-deleted');
      }
      if (error instanceof MaxAppendSizeExceededError) {
        throw new InvalidEventStoreInputError(
          'events',
          `exceed the server's maximum append size of ${error.maxAppendSize} bytes (UTF-8 data and metadata plus twice each type's length)`,
        );
      }
      if (isTransient(error) || error instanceof EventStoreUnavailableError) {
        throw new AppendOutcomeUnknownError(
          input.streamName,
          input.expectedRevision,
          `The append to "${input.streamName}" may or may not have committed (${(error as Error).message})${this.tlsHint}; ` +
            're-send the same events with the same expected revision to find out',
          error,
        );
      }
      throw error;
    }
  }

  async readStream(streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    const input = validateReadStream(streamName, options);
    if (input.maxCount === 0) return [];
    const read = () =>
      drain<AnyRecordedEvent>(
        this.client.readStream(input.streamName, {
          fromRevision: input.fromRevision,
          direction: FORWARDS,
          ...(input.maxCount === undefined ? {} : { maxCount: input.maxCount }),
        }) as AsyncIterable<{ event?: AnyRecordedEvent }>,
      );
    const events = await this.readOrAbsent(input.streamName, read);
    if (events === undefined) {
      // Reading on from a revision means the caller saw the stream: not found now, it may be soft-deleted.
      if (input.fromRevision > 0n && (await this.isSoftDeleted(input.streamName))) throw new DeletedStreamError(input.streamName, 'soft-deleted');
      return [];
    }
    const first = events[0];
    if (first !== undefined && first.revision > input.fromRevision) {
      // The revisions asked for are hidden (soft-deleted, then recreated by an append): never fold the rest.
      throw new DeletedStreamError(input.streamName, 'soft-deleted', first.revision - 1n);
    }
    const positions = await this.streamEventPositions(input.streamName, events);
    return events.map((event, index) => toRecordedEvent(event, positions[index]!));
  }

  async streamRevision(streamName: string): Promise<bigint | undefined> {
    const name = validateStreamName(streamName);
    const events = await this.readOrAbsent(name, () =>
      drain<AnyRecordedEvent>(this.client.readStream(name, { fromRevision: END, direction: BACKWARDS, maxCount: 1 }) as AsyncIterable<{
        event?: AnyRecordedEvent;
      }>),
    );
    return events?.[0]?.revision;
  }

  /** Pages through `$all` after `after`, skipping system records, until `maxCount` events or the end. */
  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    const input = validateReadAll(options);
    const maxCount = input.maxCount ?? Number.POSITIVE_INFINITY;
    const events: RecordedEvent[] = [];
    let after = input.after;
    let from: ReadPosition = after === undefined ? START : fromPortPosition(after);
    let resolvedFrom = false;
    while (events.length < maxCount) {
      let page: AnyRecordedEvent[];
      try {
        page = await this.readAllPage(from, FORWARDS);
      } catch (error) {
        if (!isUnreadablePosition(error) || resolvedFrom || after === undefined) throw error;
        // `after` is inside a record: read on from the last event at or before it.
        resolvedFrom = true;
        from = await this.readPositionAtOrBefore(after);
        continue;
      }
      for (const event of page) {
        const position = positionOrFail(event);
        // Reading from a position includes the record there; `<= after` drops it.
        if (after !== undefined && position <= after) continue;
        after = position;
        from = fromPortPosition(position);
        if (isSystemRecord(event) || events.length >= maxCount) continue;
        events.push(toRecordedEvent(event, position));
      }
      if (page.length < ESDB_READ_PAGE_EVENTS) break;
    }
    return events;
  }

  subscribeToAll(handler: SubscriptionHandler, options?: SubscribeOptions): Subscription {
    if (this.closing) throw new Error('The event store is closing');
    const after = validateSubscribe(handler, options);
    const subscription = new EventStoreDbSubscription(this, this.client, handler, after, options?.onError, (finished) =>
      this.subscriptions.delete(finished),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Position of the newest non-system event, scanning back at most ESDB_HEAD_SCAN_MAX_EVENTS
   * records; past that bound, the newest record's position (a safe checkpoint: nothing of ours is after it).
   */
  async headPosition(): Promise<bigint | undefined> {
    let newest: bigint | undefined;
    let scanned = 0;
    for await (const event of this.recordsBackwards()) {
      const position = positionOrFail(event);
      newest ??= position;
      if (!isSystemRecord(event)) return position;
      if (++scanned >= ESDB_HEAD_SCAN_MAX_EVENTS) return newest;
    }
    // Reached the start of the log without meeting one of our events: the port's log is empty.
    return undefined;
  }

  /** Log bytes between two positions' commit positions (the packed value itself would count 2^64 per byte). */
  positionDistance(from: bigint | undefined, to: bigint): bigint {
    const distance = fromPortPosition(to).commit - (from === undefined ? 0n : fromPortPosition(from).commit);
    return distance > 0n ? distance : 0n;
  }

  /**
   * Where to read on from so that the first record returned is the first after `after`: the exact
   * position of the last record at or before it (found reading backwards from the end, so the cost is
   * that of the records after it, which the caller reads anyway), or the start of the log.
   */
  async readPositionAtOrBefore(after: bigint): Promise<ReadPosition> {
    for await (const event of this.recordsBackwards()) {
      const position = positionOrFail(event);
      if (position <= after) return fromPortPosition(position);
    }
    return START;
  }

  /**
   * Every record of `$all`, newest first, each once. A backwards read from a position takes only the
   * records committed wholly before it, so a page that ends inside a legacy transaction goes on from
   * the transaction's commit position, its earlier events read forwards from there (docs/eventstoredb.md).
   */
  private async *recordsBackwards(): AsyncGenerator<AnyRecordedEvent> {
    let from: ReadPosition = END;
    for (;;) {
      const page = await this.readAllPage(from, BACKWARDS);
      yield* page;
      const last = page[page.length - 1];
      if (last === undefined || page.length < ESDB_READ_PAGE_EVENTS) return;
      const { commit, prepare } = fromPortPosition(positionOrFail(last));
      if (prepare !== commit) yield* (await this.transactionEventsBefore(commit, prepare)).reverse();
      from = { commit, prepare: commit };
    }
  }

  /** The events of the legacy transaction committed at `commit` whose prepare position is below `prepare`. */
  private async transactionEventsBefore(commit: bigint, prepare: bigint): Promise<AnyRecordedEvent[]> {
    const events: AnyRecordedEvent[] = [];
    // From the commit record's own position a forward read starts with the transaction's first event.
    let from: ReadPosition = { commit, prepare: 0n };
    for (;;) {
      const page = await this.readAllPage(from, FORWARDS);
      for (const event of page) {
        const position = fromPortPosition(positionOrFail(event));
        if (position.commit !== commit || position.prepare >= prepare) return events;
        if (events.length === 0 || position.prepare > fromPortPosition(positionOrFail(events[events.length - 1]!)).prepare) events.push(event);
        from = position;
      }
      if (page.length < ESDB_READ_PAGE_EVENTS) return events;
    }
  }

  /**
   * Lets appends in flight settle, stops the subscriptions (awaiting their handlers), then disposes
   * of the client's channels. Appends after it are refused. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.appendsInFlight]);
      await Promise.allSettled([...this.subscriptions].map((subscription) => subscription.stop()));
      await this.client.dispose();
    })();
    return this.closing;
  }

  private async readAllPage(from: ReadPosition, direction: typeof FORWARDS | typeof BACKWARDS): Promise<AnyRecordedEvent[]> {
    try {
      return await retryingTransient(() =>
        drain<AnyRecordedEvent>(
          this.client.readAll({ fromPosition: from, direction, maxCount: ESDB_READ_PAGE_EVENTS }) as AsyncIterable<{
            event?: AnyRecordedEvent;
          }>,
        ),
      );
    } catch (error) {
      throw this.readFailure('readAll', error);
    }
  }

  /** The read's events, or undefined for a stream that does not exist (missing or soft-deleted). */
  private async readOrAbsent<T>(streamName: string, read: () => Promise<T[]>): Promise<T[] | undefined> {
    try {
      return await retryingTransient(read);
    } catch (error) {
      if (error instanceof StreamNotFoundError) return undefined;
      if (error instanceof ClientStreamDeletedError) throw new DeletedStreamError(streamName, 'tombstoned');
      throw this.readFailure('readStream', error);
    }
  }

  private readFailure(operation: string, error: unknown): unknown {
    if (!isTransient(error)) return error;
    return new EventStoreUnavailableError(operation, `KurrentDB did not answer ${operation} (${(error as Error).message})${this.tlsHint}`, error);
  }

  /**
   * Whether an operator soft-deleted the stream: its metadata's `$tb` is the server's DeletedStream
   * (docs/eventstoredb.md). Needs metadata read permission on the stream, which users have by default.
   */
  private async isSoftDeleted(streamName: string): Promise<boolean> {
    try {
      const { metadata } = await retryingTransient(() => this.client.getStreamMetadata(streamName));
      const truncateBefore: unknown = metadata?.truncateBefore;
      return typeof truncateBefore === 'number' && truncateBefore >= SOFT_DELETED_TRUNCATE_BEFORE;
    } catch (error) {
      throw this.readFailure('getStreamMetadata', error);
    }
  }

  /**
   * Each event's log position. A stream read gives none for an event of a legacy transaction (the
   * server does not know where it committed); those are looked up in `$all`, from the position of the
   * stream's previous event on, at most ESDB_POSITION_SCAN_MAX_EVENTS records.
   */
  private async streamEventPositions(streamName: string, events: readonly AnyRecordedEvent[]): Promise<bigint[]> {
    const positions = events.map((event) => knownPosition(event.position));
    const firstMissing = positions.indexOf(undefined);
    if (firstMissing < 0) return positions as bigint[];
    const earlier = positions.slice(0, firstMissing).at(-1);
    const from = earlier === undefined ? await this.positionBefore(streamName, events[firstMissing]!.revision) : fromPortPosition(earlier);
    const wanted = new Map(events.flatMap((event, index) => (positions[index] === undefined ? [[event.id, index] as const] : [])));
    let scanned = 0;
    let after: bigint | undefined;
    let next: ReadPosition = from;
    while (wanted.size > 0 && scanned < ESDB_POSITION_SCAN_MAX_EVENTS) {
      const page = await this.readAllPage(next, FORWARDS);
      for (const record of page) {
        const position = positionOrFail(record);
        if (after !== undefined && position <= after) continue;
        after = position;
        next = fromPortPosition(position);
        scanned++;
        const index = record.streamId === streamName ? wanted.get(record.id) : undefined;
        if (index === undefined) continue;
        positions[index] = position;
        wanted.delete(record.id);
      }
      if (page.length < ESDB_READ_PAGE_EVENTS) break;
    }
    const [id] = [...wanted.keys()];
    if (id !== undefined) {
      throw new Error(
        `Event ${id} of "${streamName}" came without a log position (written in a legacy transaction) and was not found ` +
          `in the ESDB_POSITION_SCAN_MAX_EVENTS (${ESDB_POSITION_SCAN_MAX_EVENTS}) records of $all after the stream's previous event`,
      );
    }
    return positions as bigint[];
  }

  /** Where `$all` can be read from to meet the stream's event at `revision`: its nearest earlier event with a position, or the start. */
  private async positionBefore(streamName: string, revision: bigint): Promise<ReadPosition> {
    if (revision === 0n) return START;
    const earlier = await this.readOrAbsent(streamName, () =>
      drain<AnyRecordedEvent>(
        this.client.readStream(streamName, { fromRevision: revision - 1n, direction: BACKWARDS, maxCount: ESDB_READ_PAGE_EVENTS }) as AsyncIterable<{
          event?: AnyRecordedEvent;
        }>,
      ),
    );
    const position = (earlier ?? []).map((event) => knownPosition(event.position)).find((known) => known !== undefined);
    return position === undefined ? START : fromPortPosition(position);
  }

  private async readsAsAbsent(streamName: string): Promise<boolean> {
    return (await this.readOrAbsent(streamName, () => drain(this.client.readStream(streamName, { maxCount: 1 })))) === undefined;
  }

  private async isTombstoned(streamName: string): Promise<boolean> {
    try {
      await this.readOrAbsent(streamName, () => drain(this.client.readStream(streamName, { maxCount: 1 })));
      return false;
    } catch (error) {
      if (error instanceof DeletedStreamError) return true;
      throw error;
    }
  }

  private async positionOf(streamName: string, revision: bigint): Promise<bigint> {
    const events = await drain<AnyRecordedEvent>(
      this.client.readStream(streamName, { fromRevision: revision, maxCount: 1 }) as AsyncIterable<{ event?: AnyRecordedEvent }>,
    );
    if (events[0] !== undefined) return positionOrFail(events[0]);
    throw new Error(`Event ${revision} of "${streamName}" was acknowledged but cannot be read back`);
  }
}

/** `kurrentdb`, `kurrent`, `kdb` and `esdb`, each with or without `+discover`. */
const CONNECTION_SCHEME = /^(esdb|kurrentdb|kurrent|kdb)(\+discover)?:\/\//i;

/**
 * Connects to KurrentDB/EventStoreDB. Accepts `esdb://`, `kurrentdb://`, `kurrent://` and `kdb://`,
 * each with `+discover` (this client only parses `esdb`, so the others are translated). The client
 * uses TLS unless the connection string says `tls=false`; errors about an unreachable server say
 * so. The client connects lazily, on the first call.
 */
export function openEventStoreDb(connectionString: string): EventStoreDbEventStore {
  const esdbConnectionString = connectionString.trim().replace(CONNECTION_SCHEME, 'esdb$2://');
  const tlsOff = /[?&]tls=false(&|$)/i.test(esdbConnectionString);
  const tlsHint = tlsOff
    ? ''
    : '; note that the connection uses TLS, since the connection string does not say ?tls=false (needed for a server started --insecure)';
  return new EventStoreDbEventStore(EventStoreDBClient.connectionString(esdbConnectionString), tlsHint);
}
