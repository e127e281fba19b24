import {
  AppendOptions,
  AppendTogetherOptions,
  EventMetadata,
  ExpectedRevision,
  InvalidEventStoreInputError,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  StreamAppend,
  SubscribeOptions,
} from './event-store.port';

/**
 * Input checks shared by every store, so that both refuse the same input with the same field name
 * and write nothing. Each bound is named once here, with its unit.
 */

/** Longest stream name, in characters (`invocation-<uuid>` is 47). */
export const MAX_STREAM_NAME_LENGTH = 200;
/** Longest event type, in characters. */
export const MAX_EVENT_TYPE_LENGTH = 200;
/** Most events in one append: an append is one transaction, and a transaction should stay short. */
export const MAX_EVENTS_PER_APPEND = 1_000;
/**
 * Largest append, in bytes, counted as KurrentDB counts it: per event the UTF-8 bytes of its data and
 * metadata plus twice the length of its type. KurrentDB's default bound is 1 MiB per append up to
 * version 25.0 and 256 MiB from 25.1 (16 MiB per event on all); the smallest is kept so an append
 * accepted here fits every server version, and the embedded store keeps the same envelope.
 */
export const MAX_APPEND_SIZE_BYTES = 1_048_576;

/** The nil UUID, which KurrentDB refuses as an event id ("Empty eventId provided"). */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Canonical 8-4-4-4-12 hex UUID: KurrentDB/EventStoreDB only accepts UUID event ids, so both stores require one. */
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const EXPECTED_REVISION_WORDS: ReadonlySet<unknown> = new Set(['no_stream', 'any', 'stream_exists']);

/** An event that passed validation, with its JSON already produced (stores write these strings). */
export interface ValidatedEvent {
  /** Lower-cased UUID. */
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  readonly metadata: EventMetadata;
  readonly dataJson: string;
  readonly metadataJson: string;
}

function fail(field: string, message: string): never {
  throw new InvalidEventStoreInputError(field, message);
}

function describeValue(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === null || typeof value !== 'object') return `${String(value)} (${typeof value})`;
  return Array.isArray(value) ? 'an array' : 'an object';
}

/**
 * A stream name: non-empty, at most MAX_STREAM_NAME_LENGTH characters, and not starting with `$`,
 * which KurrentDB reserves for its own system streams (and which `readAll` therefore hides).
 */
/** A stream name may hold any character but may not start with `$` (the store's system streams). */
export const STREAM_NAME_PATTERN = /^[^$]/;

export function validateStreamName(streamName: unknown, field = 'streamName'): string {
  if (typeof streamName !== 'string') fail(field, `must be a string, got ${describeValue(streamName)}`);
  if (streamName.length === 0) fail(field, 'must not be empty');
  if (streamName.length > MAX_STREAM_NAME_LENGTH) {
    fail(field, `must be at most ${MAX_STREAM_NAME_LENGTH} characters (MAX_STREAM_NAME_LENGTH), got ${streamName.length}`);
  }
  if (!STREAM_NAME_PATTERN.test(streamName)) fail(field, 'must not start with "$", which is reserved for system streams');
  return streamName;
}

/** 'no_stream' | 'any' | 'stream_exists' | a non-negative bigint. Numbers are refused so a revision never loses precision. */
export function validateExpectedRevision(value: unknown, field = 'options.expectedRevision'): ExpectedRevision {
  if (typeof value === 'bigint') {
    if (value < 0n) fail(field, `must not be negative, got ${value}n`);
    return value;
  }
  if (EXPECTED_REVISION_WORDS.has(value)) return value as ExpectedRevision;
  fail(field, `must be 'no_stream', 'any', 'stream_exists' or a non-negative integer bigint, got ${describeValue(value)}`);
}

function toJson(value: unknown, field: string): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (/bigint/i.test(reason)) fail(field, 'is not JSON-serialisable: it contains a bigint (encode it as a string)');
    if (/circular/i.test(reason)) fail(field, 'is not JSON-serialisable: it contains a circular reference');
    fail(field, `is not JSON-serialisable: ${reason}`);
  }
  if (json === undefined) fail(field, `is not a JSON value, got ${describeValue(value)}`);
  return json;
}

function validateMetadata(metadata: unknown, field: string): EventMetadata {
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
    fail(field, `must be an object with a schemaVersion, got ${describeValue(metadata)}`);
  }
  const candidate = metadata as Record<string, unknown>;
  const schemaVersion = candidate['schemaVersion'];
  if (typeof schemaVersion !== 'number' || !Number.isInteger(schemaVersion) || schemaVersion < 1) {
    fail(`${field}.schemaVersion`, `must be a positive integer, got ${describeValue(schemaVersion)}`);
  }
  for (const key of ['correlationId', 'causationId']) {
    const id = candidate[key];
    if (id !== undefined && (typeof id !== 'string' || id.length === 0)) {
      fail(`${field}.${key}`, `must be a non-empty string when present, got ${describeValue(id)}`);
    }
  }
  return candidate as EventMetadata;
}

/**
 * Checks a whole append before anything is written: stream name, expected revision, and every event
 * (UUID id unique within the batch, type, JSON-serialisable data and metadata, schemaVersion).
 * An empty event list is refused: it has no id to make it idempotent and no position to return.
 */
export function validateAppend(
  streamName: unknown,
  events: unknown,
  options: AppendOptions | undefined,
): { streamName: string; expectedRevision: ExpectedRevision; events: ValidatedEvent[] } {
  const name = validateStreamName(streamName);
  if (options === null || typeof options !== 'object') fail('options', 'must be an object with an expectedRevision');
  const expectedRevision = validateExpectedRevision(options.expectedRevision);
  validateAcknowledgement(options);
  const checked = validateEvents(events, '', new Map());
  checkAppendSize([checked.events], checked.bytesAtMost, 'events', '');
  return { streamName: name, expectedRevision, events: checked.events };
}

/** `acknowledge`, `onCommitted`, `durableAtOnce` and `durableOffLoop`, shared by both kinds of append. */
function validateAcknowledgement(options: AppendOptions | AppendTogetherOptions): void {
  const { acknowledge, onCommitted, durableAtOnce, durableOffLoop } = options as { acknowledge?: unknown; onCommitted?: unknown; durableAtOnce?: unknown; durableOffLoop?: unknown };
  if (onCommitted !== undefined && typeof onCommitted !== 'function') fail('options.onCommitted', `must be a function, got ${describeValue(onCommitted)}`);
  if (durableAtOnce !== undefined && typeof durableAtOnce !== 'boolean') fail('options.durableAtOnce', `must be a boolean, got ${describeValue(durableAtOnce)}`);
  if (durableOffLoop !== undefined && typeof durableOffLoop !== 'boolean') fail('options.durableOffLoop', `must be a boolean, got ${describeValue(durableOffLoop)}`);
  if (acknowledge !== undefined && acknowledge !== 'durable' && acknowledge !== 'committed') {
    fail('options.acknowledge', `must be 'durable' or 'committed', got ${describeValue(acknowledge)}`);
  }
}

/**
 * The events of one append, or of one part of an append across streams (their fields named after
 * `prefix`, `''` or `parts[i].`). Ids are checked against `seenIds` (an id, where it was first used),
 * which the check extends, so the parts of one append across streams share it. `bytesAtMost` bounds
 * the events' size from above without encoding them: UTF-8 takes at most 3 bytes per UTF-16 unit.
 */
function validateEvents(events: unknown, prefix: string, seenIds: Map<string, string>): { events: ValidatedEvent[]; bytesAtMost: number } {
  if (!Array.isArray(events)) fail(`${prefix}events`, `must be an array, got ${describeValue(events)}`);
  if (events.length === 0) fail(`${prefix}events`, 'must contain at least one event');
  if (events.length > MAX_EVENTS_PER_APPEND) {
    fail(`${prefix}events`, `must contain at most ${MAX_EVENTS_PER_APPEND} events (MAX_EVENTS_PER_APPEND), got ${events.length}`);
  }
  const validated: ValidatedEvent[] = new Array(events.length);
  let bytesAtMost = 0;
  for (let index = 0; index < events.length; index++) {
    const field = `${prefix}events[${index}]`;
    const event = events[index] as Partial<NewEvent> | null | undefined;
    if (event === null || typeof event !== 'object') fail(field, `must be an object, got ${describeValue(event)}`);
    const rawId = event.id;
    if (typeof rawId !== 'string' || !UUID_PATTERN.test(rawId)) {
      fail(`${field}.id`, `must be a UUID (8-4-4-4-12 hex), got ${describeValue(rawId)}`);
    }
    const id = rawId.toLowerCase();
    if (id === NIL_UUID) fail(`${field}.id`, 'must not be the nil UUID, which KurrentDB refuses as an event id');
    const earlier = seenIds.get(id);
    if (earlier !== undefined) fail(`${field}.id`, `repeats an id already used earlier in the same append, at ${earlier}: ${id}`);
    seenIds.set(id, field);
    const type = event.type;
    if (typeof type !== 'string' || type.length === 0) fail(`${field}.type`, `must be a non-empty string, got ${describeValue(type)}`);
    if (type.length > MAX_EVENT_TYPE_LENGTH) {
      fail(`${field}.type`, `must be at most ${MAX_EVENT_TYPE_LENGTH} characters (MAX_EVENT_TYPE_LENGTH), got ${type.length}`);
    }
    if (type.startsWith('$')) fail(`${field}.type`, 'must not start with "$", which is reserved for system events');
    const metadata = validateMetadata(event.metadata, `${field}.metadata`);
    const dataJson = toJson(event.data, `${field}.data`);
    const metadataJson = toJson(metadata, `${field}.metadata`);
    bytesAtMost += UTF8_BYTES_PER_UTF16_UNIT_AT_MOST * (dataJson.length + metadataJson.length) + 2 * type.length;
    validated[index] = { id, type, data: event.data, metadata, dataJson, metadataJson };
  }
  return { events: validated, bytesAtMost };
}

/** Refuses events over MAX_APPEND_SIZE_BYTES; counts the exact bytes only when the bound from above is over it. */
function checkAppendSize(events: readonly (readonly ValidatedEvent[])[], bytesAtMost: number, field: string, inAll: string): void {
  if (bytesAtMost <= MAX_APPEND_SIZE_BYTES) return;
  const bytes = events.reduce((sum, some) => sum + appendSizeBytes(some), 0);
  if (bytes > MAX_APPEND_SIZE_BYTES) {
    fail(field, `take ${bytes} bytes${inAll} (UTF-8 data and metadata plus twice each type's length), over ${MAX_APPEND_SIZE_BYTES} (MAX_APPEND_SIZE_BYTES)`);
  }
}

/** One part of an append across streams, validated. */
export interface ValidatedPart {
  readonly streamName: string;
  readonly expectedRevision: ExpectedRevision;
  readonly events: ValidatedEvent[];
}

/**
 * An input error about one append, as the same error about part `index` of an append across streams
 * (`events[0].id` becomes `parts[index].events[0].id`, `options.expectedRevision` becomes
 * `parts[index].expectedRevision`); other errors unchanged.
 */
export function inPart<T>(index: number, error: T): T | InvalidEventStoreInputError {
  if (!(error instanceof InvalidEventStoreInputError)) return error;
  const inner = error.field.replace(/^options\./, '');
  return new InvalidEventStoreInputError(`parts[${index}].${inner}`, error.message.slice(error.field.length + 2));
}

/**
 * An append across streams (EventStore.appendTogether): each part as `validateAppend` checks one
 * append, its fields named `parts[i].…`, and the parts together within the bounds of one append
 * (MAX_EVENTS_PER_APPEND, MAX_APPEND_SIZE_BYTES, no id twice): they are one transaction.
 */
export function validateAppendTogether(parts: unknown, options: AppendTogetherOptions | undefined): ValidatedPart[] {
  if (options !== undefined && (options === null || typeof options !== 'object')) fail('options', `must be an object, got ${describeValue(options)}`);
  validateAcknowledgement(options ?? {});
  if (!Array.isArray(parts)) fail('parts', `must be an array, got ${describeValue(parts)}`);
  if (parts.length === 0) fail('parts', 'must contain at least one part');
  const validated: ValidatedPart[] = new Array(parts.length);
  const seenIds = new Map<string, string>();
  let events = 0;
  let bytesAtMost = 0;
  for (let index = 0; index < parts.length; index++) {
    const field = `parts[${index}]`;
    const part = parts[index] as Partial<StreamAppend> | null | undefined;
    if (part === null || typeof part !== 'object') fail(field, `must be an object, got ${describeValue(part)}`);
    const streamName = validateStreamName(part.streamName, `${field}.streamName`);
    const expectedRevision = validateExpectedRevision(part.expectedRevision, `${field}.expectedRevision`);
    const checked = validateEvents(part.events, `${field}.`, seenIds);
    validated[index] = { streamName, expectedRevision, events: checked.events };
    events += checked.events.length;
    bytesAtMost += checked.bytesAtMost;
  }
  if (events > MAX_EVENTS_PER_APPEND) fail('parts', `must contain at most ${MAX_EVENTS_PER_APPEND} events in all (MAX_EVENTS_PER_APPEND), got ${events}`);
  checkAppendSize(
    validated.map((part) => part.events),
    bytesAtMost,
    'parts',
    ' in all',
  );
  return validated;
}

/** Most UTF-8 bytes one UTF-16 code unit encodes to (a surrogate pair: 4 bytes for 2 units). */
const UTF8_BYTES_PER_UTF16_UNIT_AT_MOST = 3;

/** An append's size as MAX_APPEND_SIZE_BYTES counts it, in bytes. */
function appendSizeBytes(events: readonly ValidatedEvent[]): number {
  let bytes = 0;
  for (const event of events) {
    bytes += Buffer.byteLength(event.dataJson, 'utf8') + Buffer.byteLength(event.metadataJson, 'utf8') + 2 * event.type.length;
  }
  return bytes;
}

function validateMaxCount(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    fail(field, `must be a non-negative integer, got ${describeValue(value)}`);
  }
  return value;
}

function validatePosition(value: unknown, field: string): bigint | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'bigint' || value < 0n) fail(field, `must be a non-negative bigint, got ${describeValue(value)}`);
  return value;
}

export function validateReadStream(
  streamName: unknown,
  options: ReadStreamOptions | undefined,
): { streamName: string; fromRevision: bigint; maxCount: number | undefined } {
  const name = validateStreamName(streamName);
  const fromRevision = validatePosition(options?.fromRevision, 'options.fromRevision') ?? 0n;
  return { streamName: name, fromRevision, maxCount: validateMaxCount(options?.maxCount, 'options.maxCount') };
}

export function validateReadAll(options: ReadAllOptions | undefined): { after: bigint | undefined; maxCount: number | undefined } {
  return {
    after: validatePosition(options?.after, 'options.after'),
    maxCount: validateMaxCount(options?.maxCount, 'options.maxCount'),
  };
}

export function validateSubscribe(handler: unknown, options: SubscribeOptions | undefined): bigint | undefined {
  if (typeof handler !== 'function') fail('handler', `must be a function, got ${describeValue(handler)}`);
  return validatePosition(options?.after, 'options.after');
}
