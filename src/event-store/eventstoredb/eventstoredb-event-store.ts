import {
  ANY,
  AllStreamRecordedEvent,
  AllStreamSubscription,
  AppendExpectedRevision,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  JSONType,
  NO_STREAM,
  Position,
  ReadPosition,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
} from '@eventstore/db-client';
import {
  AppendOptions,
  AppendResult,
  ConcurrencyError,
  EventMetadata,
  EventStore,
  ExpectedRevision,
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
/** First wait before resubscribing after a dropped subscription, in milliseconds. */
export const RESUBSCRIBE_INITIAL_DELAY_MS = 100;
/** Longest wait between resubscription attempts, in milliseconds (the wait doubles up to it). */
export const RESUBSCRIBE_MAX_DELAY_MS = 5_000;

/** The server's "no position" marker (unsigned 64-bit all ones), sent where a position is unknown. */
const NO_POSITION = (1n << 64n) - 1n;

/**
 * Our `position` is the event's commit position in the transaction log. Appends made through this
 * port are implicit transactions, for which KurrentDB gives every event its own commit position equal
 * to its prepare position; so a commit position identifies one event and orders `$all`, and
 * `{ commit: p, prepare: p }` is a valid place to resume reading from.
 */
function knownPosition(position: Position | undefined): bigint | undefined {
  if (position === undefined) return undefined;
  const commit = position.commit;
  return commit < 0n || commit >= NO_POSITION ? undefined : commit;
}

function toReadPosition(after: bigint | undefined): ReadPosition {
  return after === undefined ? START : { commit: after, prepare: after };
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

/** Thrown inside the subscription loop to tell a handler failure from a dropped connection. */
class HandlerFailure {
  constructor(readonly error: unknown) {}
}

/**
 * A catch-up subscription to `$all` (system events excluded on the server) that survives dropped
 * connections: when the gRPC stream fails or ends, it resubscribes from the last handled position
 * after a wait that doubles from RESUBSCRIBE_INITIAL_DELAY_MS up to RESUBSCRIBE_MAX_DELAY_MS (reset by
 * the next delivered event). Events at or before the last handled position are skipped, so a resumed
 * subscription repeats nothing. A handler that throws halts it; `stop()` then rejects with that error.
 */
class EventStoreDbSubscription implements Subscription {
  private stopped = false;
  private current: AllStreamSubscription | undefined;
  private wakeBackoff: (() => void) | undefined;
  private failure: { error: unknown } | undefined;
  private position: bigint | undefined;
  private delivered = false;
  private readonly done: Promise<void>;

  constructor(
    private readonly client: EventStoreDBClient,
    private readonly handler: SubscriptionHandler,
    after: bigint | undefined,
    private readonly onFinished: (subscription: EventStoreDbSubscription) => void,
  ) {
    this.position = after;
    this.done = this.run().then(
      () => this.onFinished(this),
      (error: unknown) => {
        this.failure = { error };
        this.onFinished(this);
      },
    );
  }

  get lastPosition(): bigint | undefined {
    return this.delivered ? this.position : undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeBackoff?.();
    await this.current?.unsubscribe().catch(() => undefined);
    await this.done;
    if (this.failure) throw this.failure.error;
  }

  private async run(): Promise<void> {
    // Start on a later turn, so the handler never runs before subscribeToAll has returned.
    await Promise.resolve();
    let delayMs = RESUBSCRIBE_INITIAL_DELAY_MS;
    while (!this.stopped) {
      const subscription = this.client.subscribeToAll({
        fromPosition: toReadPosition(this.position),
        filter: excludeSystemEvents(),
      });
      this.current = subscription;
      try {
        for await (const resolved of subscription) {
          if (this.stopped) break;
          const event = resolved.event as AllStreamRecordedEvent | undefined;
          if (event === undefined || isSystemRecord(event)) continue;
          const position = event.position.commit;
          if (this.position !== undefined && position <= this.position) continue;
          try {
            await this.handler(toRecordedEvent(event, position));
          } catch (error) {
            throw new HandlerFailure(error);
          }
          this.position = position;
          this.delivered = true;
          delayMs = RESUBSCRIBE_INITIAL_DELAY_MS;
        }
      } catch (error) {
        if (error instanceof HandlerFailure) throw error.error;
        // Otherwise the connection dropped: resubscribe below, from the last handled position.
      } finally {
        this.current = undefined;
        await subscription.unsubscribe().catch(() => undefined);
      }
      if (this.stopped) break;
      await this.backoff(delayMs);
      delayMs = Math.min(delayMs * 2, RESUBSCRIBE_MAX_DELAY_MS);
    }
  }

  private backoff(delayMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wakeBackoff?.(), delayMs);
      this.wakeBackoff = () => {
        clearTimeout(timer);
        this.wakeBackoff = undefined;
        resolve();
      };
    });
  }
}

/**
 * The event store port on KurrentDB/EventStoreDB (`@eventstore/db-client`). Expected revisions map
 * one to one; `WrongExpectedVersionError` becomes ConcurrencyError; revisions and commit positions stay
 * bigint end to end. `readAll` and subscriptions hide system (`$`) events, which the port never writes.
 * Idempotent re-append is the server's: same ids with the same expected revision write nothing. The
 * embedded store's refusal of a batch whose ids only partly match a stored one is not reproduced:
 * there the server decides (a conflict, or with `any` possibly a second copy), so callers should
 * re-append exactly the batch they first sent. Stream reads need KurrentDB/EventStoreDB 22.6 or later,
 * which returns each event's log position.
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly subscriptions = new Set<EventStoreDbSubscription>();
  private closing: Promise<void> | undefined;

  constructor(private readonly client: EventStoreDBClient) {}

  async append(streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    const input = validateAppend(streamName, events, options);
    const eventData = input.events.map((event) =>
      jsonEvent({
        id: event.id,
        type: event.type,
        data: event.data as JSONType,
        metadata: event.metadata as unknown as JSONType,
      }),
    );
    try {
      const result = await this.client.appendToStream(input.streamName, eventData, {
        expectedRevision: toEsdbExpectedRevision(input.expectedRevision),
      });
      const position =
        knownPosition(result.position) ?? (await this.positionOf(input.streamName, result.nextExpectedRevision));
      return { nextExpectedRevision: result.nextExpectedRevision, position };
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        throw new ConcurrencyError(input.streamName, input.expectedRevision, error.actualVersion);
      }
      throw error;
    }
  }

  async readStream(streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    const input = validateReadStream(streamName, options);
    if (input.maxCount === 0) return [];
    const events: RecordedEvent[] = [];
    try {
      const read = this.client.readStream(input.streamName, {
        fromRevision: input.fromRevision,
        direction: FORWARDS,
        ...(input.maxCount === undefined ? {} : { maxCount: input.maxCount }),
      });
      for await (const resolved of read) {
        const event = resolved.event as AnyRecordedEvent | undefined;
        if (event !== undefined) events.push(toRecordedEvent(event, positionOrFail(event)));
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async streamRevision(streamName: string): Promise<bigint | undefined> {
    const name = validateStreamName(streamName);
    try {
      for await (const resolved of this.client.readStream(name, { fromRevision: END, direction: BACKWARDS, maxCount: 1 })) {
        if (resolved.event !== undefined) return resolved.event.revision;
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return undefined;
      throw error;
    }
    return undefined;
  }

  /** Pages through `$all` after `after`, skipping system records, until `maxCount` events or the end. */
  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    const input = validateReadAll(options);
    const maxCount = input.maxCount ?? Number.POSITIVE_INFINITY;
    const events: RecordedEvent[] = [];
    let after = input.after;
    while (events.length < maxCount) {
      let records = 0;
      // Reading from a position includes the record there; `<= after` drops it.
      for await (const resolved of this.client.readAll({
        fromPosition: toReadPosition(after),
        direction: FORWARDS,
        maxCount: ESDB_READ_PAGE_EVENTS,
      })) {
        records++;
        const event = resolved.event;
        if (event === undefined) continue;
        const position = event.position.commit;
        if (after !== undefined && position <= after) continue;
        after = position;
        if (isSystemRecord(event) || events.length >= maxCount) continue;
        events.push(toRecordedEvent(event, position));
      }
      if (records < ESDB_READ_PAGE_EVENTS) break;
    }
    return events;
  }

  subscribeToAll(handler: SubscriptionHandler, options?: SubscribeOptions): Subscription {
    if (this.closing) throw new Error('The event store is closing');
    const after = validateSubscribe(handler, options);
    const subscription = new EventStoreDbSubscription(this.client, handler, after, (finished) =>
      this.subscriptions.delete(finished),
    );
    this.subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Commit position of the newest non-system event, scanning back at most ESDB_HEAD_SCAN_MAX_EVENTS
   * records; past that bound, the newest record's position (a safe checkpoint: nothing of ours is after it).
   */
  async headPosition(): Promise<bigint | undefined> {
    let newest: bigint | undefined;
    // Exclusive upper bound of the next page, reading backwards.
    let before: bigint | undefined;
    let scanned = 0;
    while (scanned < ESDB_HEAD_SCAN_MAX_EVENTS) {
      let records = 0;
      for await (const resolved of this.client.readAll({
        fromPosition: before === undefined ? END : { commit: before, prepare: before },
        direction: BACKWARDS,
        maxCount: ESDB_READ_PAGE_EVENTS,
      })) {
        records++;
        const event = resolved.event;
        if (event === undefined) continue;
        const position = event.position.commit;
        if (before !== undefined && position >= before) continue;
        before = position;
        newest ??= position;
        if (!isSystemRecord(event)) return position;
      }
      scanned += records;
      // Reached the start of the log without meeting one of our events: the port's log is empty.
      if (records < ESDB_READ_PAGE_EVENTS) return undefined;
    }
    return newest;
  }

  /** Stops the subscriptions (awaiting their handlers), then disposes of the client's channels. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.subscriptions].map((subscription) => subscription.stop()));
      await this.client.dispose();
    })();
    return this.closing;
  }

  private async positionOf(streamName: string, revision: bigint): Promise<bigint> {
    for await (const resolved of this.client.readStream(streamName, { fromRevision: revision, maxCount: 1 })) {
      const event = resolved.event as AnyRecordedEvent | undefined;
      if (event !== undefined) return positionOrFail(event);
    }
    throw new Error(`Event ${revision} of "${streamName}" was acknowledged but cannot be read back`);
  }
}

/**
 * Connects to KurrentDB/EventStoreDB. Accepts `esdb://`, `esdb+discover://` and the newer
 * `kurrentdb://` / `kurrent://` spellings (this client only parses `esdb`, so those are translated).
 * The client connects lazily, on the first call.
 */
export function openEventStoreDb(connectionString: string): EventStoreDbEventStore {
  const esdbConnectionString = connectionString.trim().replace(/^(kurrentdb|kurrent)(\+discover)?:\/\//i, 'esdb$2://');
  return new EventStoreDbEventStore(EventStoreDBClient.connectionString(esdbConnectionString));
}
