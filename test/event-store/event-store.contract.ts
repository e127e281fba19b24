import { randomUUID } from 'node:crypto';
import {
  AppendResult,
  ConcurrencyError,
  EventStore,
  ExpectedRevision,
  InvalidEventStoreInputError,
  NewEvent,
  RecordedEvent,
} from '../../src/event-store/event-store.port';
import { MAX_STREAM_NAME_LENGTH } from '../../src/event-store/event-store-input.validation';

/** Opens a store for one test; the suite closes it afterwards. */
export type EventStoreFactory = () => EventStore | Promise<EventStore>;

/** Most attempts a racing writer makes before the test gives up on it (50 writers need at most 50). */
const MAX_WRITER_ATTEMPTS = 200;
const RACING_WRITERS = 50;

export function newEvent(type = 'SomethingNoted', data: unknown = { note: 'hello' }, metadata: Record<string, unknown> = {}): NewEvent {
  return { id: randomUUID(), type, data, metadata: { schemaVersion: 1, ...metadata } };
}

/** Collects the handler's events of one test (a shared server may hold others) and waits for a count. */
class Collector {
  readonly events: RecordedEvent[] = [];
  private waiters: Array<{ count: number; resolve: () => void }> = [];
  inFlight = 0;
  maxInFlight = 0;

  constructor(private readonly prefix: string) {}

  readonly handle = async (event: RecordedEvent): Promise<void> => {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    // Yield once, so a store that did not await the handler would show two in flight.
    await Promise.resolve();
    this.inFlight--;
    if (!event.streamName.startsWith(this.prefix)) return;
    this.events.push(event);
    this.waiters = this.waiters.filter((waiter) => {
      if (this.events.length < waiter.count) return true;
      waiter.resolve();
      return false;
    });
  };

  /** Resolves once `count` events of this test were handled (the suite's timeout bounds the wait). */
  until(count: number): Promise<void> {
    if (this.events.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  get ids(): string[] {
    return this.events.map((event) => event.id);
  }
}

async function expectConflict(
  attempt: Promise<unknown>,
  streamName: string,
  expected: ExpectedRevision,
  actual: bigint | 'no_stream',
): Promise<void> {
  const error = await attempt.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ConcurrencyError);
  const conflict = error as ConcurrencyError;
  expect({ streamName: conflict.streamName, expected: conflict.expected, actual: conflict.actual }).toEqual({
    streamName,
    expected,
    actual,
  });
  expect(conflict.message).toContain(streamName);
  expect(conflict.message).toContain(String(expected));
  expect(conflict.message).toContain(String(actual));
}

/** The store under test, fresh for each test, with the test's own stream prefix. */
interface StoreUnderTest {
  readonly store: EventStore;
  readonly prefix: string;
  /** The log's head before the test appended anything. */
  readonly baseline: bigint | undefined;
  stream(suffix: string): string;
  /** The events of this test's streams (a shared server may hold others). */
  ours(events: RecordedEvent[]): RecordedEvent[];
  ourEventsSinceBaseline(): Promise<RecordedEvent[]>;
}

/** Opens a store before each test of the enclosing describe and closes it after. */
function storeUnderTest(factory: EventStoreFactory): StoreUnderTest {
  let store: EventStore;
  let prefix: string;
  let baseline: bigint | undefined;
  beforeEach(async () => {
    store = await factory();
    prefix = `contract${randomUUID().replace(/-/g, '')}`;
    baseline = await store.headPosition();
  });
  afterEach(async () => {
    await store.close();
  });
  const ours = (events: RecordedEvent[]): RecordedEvent[] => events.filter((event) => event.streamName.startsWith(prefix));
  return {
    get store() {
      return store;
    },
    get prefix() {
      return prefix;
    },
    get baseline() {
      return baseline;
    },
    stream: (suffix) => `${prefix}-${suffix}`,
    ours,
    ourEventsSinceBaseline: async () => ours(await store.readAll({ after: baseline })),
  };
}

/**
 * The behaviour every event store must have, run against each implementation, one `describe` per
 * property. Stream names carry a per-test prefix and reads are filtered by it, so the suite also runs
 * against a shared server.
 */
export function describeEventStoreContract(name: string, factory: EventStoreFactory, { acrossStreams = true }: { readonly acrossStreams?: boolean } = {}): void {
  describe(`event store contract: ${name}`, () => {
    const t = storeUnderTest(factory);
    describeExpectedRevisions(t);
    describeAppendTogether(t, acrossStreams);
    describeRacingWriters(t);
    describeIdempotentAppend(t);
    describeGlobalOrder(t);
    describeStreamReads(t);
    describeRoundTrip(t);
    describeDeliveryAcrossRestart(t);
    describeDeliveryOrder(t);
    describeSynchronousHandler(t);
    describeStopAfterHandler(t);
    describeBadInput(t);
  });
}

function describeExpectedRevisions(t: StoreUnderTest): void {
  describe('appending with an expected revision', () => {
    it('creates a stream with no_stream and answers revision 0 and a bigint position, the next expected revision for its writer', async () => {
      const result = await t.store.append(t.stream('a'), [newEvent()], { expectedRevision: 'no_stream' });

      expect(result.nextExpectedRevision).toBe(0n);
      expect(typeof result.position).toBe('bigint');
      expect(await t.store.streamRevision(t.stream('a'))).toBe(0n);
      expect(await t.store.headPosition()).toBe(result.position);
    });

    it('extends a stream with its exact current revision, with stream_exists, and with any', async () => {
      const s = t.stream('a');
      await t.store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      const exact = await t.store.append(s, [newEvent(), newEvent()], { expectedRevision: 0n });
      const exists = await t.store.append(s, [newEvent()], { expectedRevision: 'stream_exists' });
      const any = await t.store.append(s, [newEvent()], { expectedRevision: 'any' });
      const anyOnNew = await t.store.append(t.stream('b'), [newEvent()], { expectedRevision: 'any' });

      expect([exact.nextExpectedRevision, exists.nextExpectedRevision, any.nextExpectedRevision]).toEqual([2n, 3n, 4n]);
      expect(anyOnNew.nextExpectedRevision).toBe(0n);
      expect(exact.position < exists.position && exists.position < any.position).toBe(true);
    });

    it('refuses no_stream on an existing stream with a ConcurrencyError naming stream, expected and actual, because the writer believed it was creating the stream', async () => {
      const s = t.stream('a');
      await t.store.append(s, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });

      await expectConflict(t.store.append(s, [newEvent()], { expectedRevision: 'no_stream' }), s, 'no_stream', 1n);
      expect(await t.store.streamRevision(s)).toBe(1n);
    });

    it('refuses stream_exists on a missing stream with a ConcurrencyError, because the writer meant to extend a stream that is not there', async () => {
      const s = t.stream('missing');

      await expectConflict(t.store.append(s, [newEvent()], { expectedRevision: 'stream_exists' }), s, 'stream_exists', 'no_stream');
      expect(await t.store.streamRevision(s)).toBeUndefined();
    });

    it('refuses an exact revision that is not the current one with a ConcurrencyError, because someone appended after the writer read', async () => {
      const s = t.stream('a');
      await t.store.append(s, [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });

      await expectConflict(t.store.append(s, [newEvent()], { expectedRevision: 1n }), s, 1n, 2n);
      await expectConflict(t.store.append(t.stream('missing'), [newEvent()], { expectedRevision: 0n }), t.stream('missing'), 0n, 'no_stream');
      expect(await t.store.streamRevision(s)).toBe(2n);
      expect(await t.ourEventsSinceBaseline()).toHaveLength(3);
    });
  });
}

function describeRacingWriters(t: StoreUnderTest): void {
  describe('racing writers: each revision is won once', () => {
    it(`lets exactly one of ${RACING_WRITERS} racing writers win each revision, ending with no gap and no duplicate, because each append is checked against the revision its writer read`, async () => {
      const s = t.stream('contended');
      const winners = await Promise.all(
        Array.from({ length: RACING_WRITERS }, async (_, writer) => {
          const event = newEvent('WriterWon', { writer });
          for (let attempt = 1; attempt <= MAX_WRITER_ATTEMPTS; attempt++) {
            const current = await t.store.streamRevision(s);
            try {
              const result = await t.store.append(s, [event], { expectedRevision: current ?? 'no_stream' });
              return { id: event.id, result, attempt };
            } catch (error) {
              if (!(error instanceof ConcurrencyError)) throw error;
            }
          }
          throw new Error(`writer ${writer} never won in ${MAX_WRITER_ATTEMPTS} attempts`);
        }),
      );

      const events = await t.store.readStream(s);
      expect(events.map((event) => event.revision)).toEqual(Array.from({ length: RACING_WRITERS }, (_, i) => BigInt(i)));
      expect(new Set(events.map((event) => event.id)).size).toBe(RACING_WRITERS);
      const wonRevisions = winners.map((winner) => winner.result.nextExpectedRevision);
      expect(new Set(wonRevisions).size).toBe(RACING_WRITERS);
      for (const winner of winners) {
        expect(events[Number(winner.result.nextExpectedRevision)]!.id).toBe(winner.id);
      }
      // Somebody had to lose at least once, or the race never happened.
      expect(winners.some((winner) => winner.attempt > 1)).toBe(true);
    });
  });
}

function describeIdempotentAppend(t: StoreUnderTest): void {
  describe('idempotent append', () => {
    it('returns the original result and writes nothing when a stored batch is re-appended with the same ids and expected revision, so a retried command cannot write twice', async () => {
      const s = t.stream('a');
      const batch = [newEvent(), newEvent()];
      const original = await t.store.append(s, batch, { expectedRevision: 'no_stream' });
      await t.store.append(s, [newEvent()], { expectedRevision: original.nextExpectedRevision });
      const before = await t.ourEventsSinceBaseline();

      const replayed = await t.store.append(s, batch, { expectedRevision: 'no_stream' });

      expect(replayed).toEqual(original);
      expect(await t.ourEventsSinceBaseline()).toEqual(before);
      expect(await t.store.streamRevision(s)).toBe(2n);
    });

    it('returns the original result for a re-append with an exact expected revision', async () => {
      const s = t.stream('a');
      await t.store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      const batch = [newEvent(), newEvent(), newEvent()];
      const original = await t.store.append(s, batch, { expectedRevision: 0n });

      const replayed = await t.store.append(s, batch, { expectedRevision: 0n });

      expect(replayed).toEqual(original);
      expect(await t.store.readStream(s)).toHaveLength(4);
    });
  });
}

/** EventStore.appendTogether: parts on several streams in one commit, all or nothing. */
function describeAppendTogether(t: StoreUnderTest, acrossStreams: boolean): void {
  describe('appending to several streams together', () => {
    if (!acrossStreams) {
      it('has no appendTogether, so its callers append part by part', () => {
        expect(t.store.appendTogether).toBeUndefined();
      });
      return;
    }
    const together = (...args: Parameters<NonNullable<EventStore['appendTogether']>>) => t.store.appendTogether!(...args);

    it('writes every part in one commit, in the order given, each stream numbered on from the parts before it', async () => {
      const [a, b] = [t.stream('a'), t.stream('b')];
      const parts = [
        { streamName: a, events: [newEvent('First'), newEvent('Second')], expectedRevision: 'no_stream' as const },
        { streamName: b, events: [newEvent('Beside')], expectedRevision: 'no_stream' as const },
        { streamName: a, events: [newEvent('Third')], expectedRevision: 1n },
      ];

      const results = await together(parts);

      expect(results.map((result) => result.nextExpectedRevision)).toEqual([1n, 0n, 2n]);
      const all = await t.ourEventsSinceBaseline();
      expect(all.map((event) => [event.streamName, event.type, event.revision])).toEqual([
        [a, 'First', 0n],
        [a, 'Second', 1n],
        [b, 'Beside', 0n],
        [a, 'Third', 2n],
      ]);
      expect(results.map((result) => result.position)).toEqual([all[1]!.position, all[2]!.position, all[3]!.position]);
      expect(all.every((event, index) => index === 0 || event.position > all[index - 1]!.position)).toBe(true);
    });

    it('writes nothing when one part’s expected revision is not its stream’s, and names that stream in the ConcurrencyError', async () => {
      const [a, b] = [t.stream('a'), t.stream('b')];
      await t.store.append(a, [newEvent()], { expectedRevision: 'no_stream' });
      const before = await t.ourEventsSinceBaseline();

      await expectConflict(
        together([
          { streamName: b, events: [newEvent()], expectedRevision: 'no_stream' },
          { streamName: a, events: [newEvent()], expectedRevision: 'no_stream' },
        ]),
        a,
        'no_stream',
        0n,
      );

      expect(await t.store.streamRevision(b)).toBeUndefined();
      expect(await t.ourEventsSinceBaseline()).toEqual(before);
    });

    it('answers a re-sent append (the same ids and expected revisions) with the first result and writes nothing more, so a retry after an unknown outcome cannot write twice', async () => {
      const [a, b] = [t.stream('a'), t.stream('b')];
      const parts = [
        { streamName: a, events: [newEvent(), newEvent()], expectedRevision: 'no_stream' as const },
        { streamName: b, events: [newEvent()], expectedRevision: 'no_stream' as const },
      ];
      const first = await together(parts);
      const before = await t.ourEventsSinceBaseline();

      expect(await together(parts)).toEqual(first);
      expect(await t.ourEventsSinceBaseline()).toEqual(before);
    });

    it('refuses a part whose event id is already stored elsewhere, naming that part’s field, and writes nothing of the others', async () => {
      const [a, b, c] = [t.stream('a'), t.stream('b'), t.stream('c')];
      const stored = newEvent();
      await t.store.append(a, [stored], { expectedRevision: 'no_stream' });
      const before = await t.ourEventsSinceBaseline();

      const error = await together([
        { streamName: b, events: [newEvent()], expectedRevision: 'no_stream' },
        { streamName: c, events: [newEvent(), { ...stored }], expectedRevision: 'no_stream' },
      ]).then(
        () => undefined,
        (caught: unknown) => caught,
      );

      expect(error).toBeInstanceOf(InvalidEventStoreInputError);
      expect((error as InvalidEventStoreInputError).field).toBe('parts[1].events[1].id');
      expect(await t.ourEventsSinceBaseline()).toEqual(before);
    });

    it.each([
      { description: 'no parts', parts: () => [], field: 'parts' },
      { description: 'a part without events', parts: (a: string) => [{ streamName: a, events: [], expectedRevision: 'no_stream' as const }], field: 'parts[0].events' },
      {
        description: 'an id used in two parts',
        parts: (a: string, b: string) => {
          const event = newEvent();
          return [
            { streamName: a, events: [event], expectedRevision: 'no_stream' as const },
            { streamName: b, events: [{ ...event }], expectedRevision: 'no_stream' as const },
          ];
        },
        field: 'parts[1].events[0].id',
      },
      { description: 'a bad expected revision', parts: (a: string) => [{ streamName: a, events: [newEvent()], expectedRevision: -1n }], field: 'parts[0].expectedRevision' },
    ])('refuses $description with the field named, and writes nothing', async ({ parts, field }) => {
      const error = await together(parts(t.stream('a'), t.stream('b'))).then(
        () => undefined,
        (caught: unknown) => caught,
      );

      expect(error).toBeInstanceOf(InvalidEventStoreInputError);
      expect((error as InvalidEventStoreInputError).field).toBe(field);
      expect(await t.ourEventsSinceBaseline()).toEqual([]);
    });
  });
}

function describeGlobalOrder(t: StoreUnderTest): void {
  describe('reading all: commit order, in pages', () => {
    it('reads all events in the order their appends committed, across streams, so a projection sees causes before effects', async () => {
      const order: string[] = [];
      const results: AppendResult[] = [];
      const revisions = new Map<string, bigint>();
      for (let round = 0; round < 4; round++) {
        for (const suffix of ['x', 'y', 'z']) {
          const s = t.stream(suffix);
          const batch = round % 2 === 0 ? [newEvent()] : [newEvent(), newEvent()];
          const current = revisions.get(s);
          const result = await t.store.append(s, batch, { expectedRevision: current ?? 'no_stream' });
          revisions.set(s, result.nextExpectedRevision);
          results.push(result);
          order.push(...batch.map((event) => event.id));
        }
      }

      const all = await t.ourEventsSinceBaseline();

      expect(all.map((event) => event.id)).toEqual(order);
      for (let index = 1; index < all.length; index++) expect(all[index]!.position > all[index - 1]!.position).toBe(true);
      const positions = new Set(all.map((event) => event.position));
      for (const result of results) expect(positions.has(result.position)).toBe(true);
    });

    it('pages readAll with after and maxCount, without overlap or gap between pages', async () => {
      const ids: string[] = [];
      for (let index = 0; index < 7; index++) {
        const event = newEvent();
        ids.push(event.id);
        await t.store.append(t.stream(`p${index}`), [event], { expectedRevision: 'no_stream' });
      }

      const pages: RecordedEvent[][] = [];
      let after = t.baseline;
      for (;;) {
        const page = await t.store.readAll({ after, maxCount: 3 });
        if (page.length === 0) break;
        expect(page.length).toBeLessThanOrEqual(3);
        pages.push(page);
        after = page[page.length - 1]!.position;
      }

      expect(t.ours(pages.flat()).map((event) => event.id)).toEqual(ids);
    });
  });
}

function describeStreamReads(t: StoreUnderTest): void {
  describe('reading a stream', () => {
    it('reads a stream forwards from a revision, at most maxCount events, in revision order', async () => {
      const s = t.stream('a');
      const batch = Array.from({ length: 6 }, () => newEvent());
      await t.store.append(s, batch, { expectedRevision: 'no_stream' });

      const window = await t.store.readStream(s, { fromRevision: 2n, maxCount: 3 });
      const tail = await t.store.readStream(s, { fromRevision: 4n });
      const all = await t.store.readStream(s);

      expect(window.map((event) => [event.revision, event.id])).toEqual([2, 3, 4].map((r) => [BigInt(r), batch[r]!.id]));
      expect(tail.map((event) => event.revision)).toEqual([4n, 5n]);
      expect(all.map((event) => event.id)).toEqual(batch.map((event) => event.id));
      expect(await t.store.readStream(s, { fromRevision: 6n })).toEqual([]);
    });

    it('reads a stream that does not exist as empty, with no revision', async () => {
      expect(await t.store.readStream(t.stream('never'))).toEqual([]);
      expect(await t.store.streamRevision(t.stream('never'))).toBeUndefined();
    });
  });
}

function describeRoundTrip(t: StoreUnderTest): void {
  describe('what is written is read back', () => {
    it('gives back type, data and metadata (schema version, correlation and causation ids) as written, with bigint revision and position and an ISO recordedAt', async () => {
      const s = t.stream('a');
      const written = newEvent('InvoiceSettled', { credits: 1200, lines: [{ turn: 1, price: 7 }], note: null }, {
        correlationId: 'corr-1',
        causationId: 'cause-1',
      });
      const result = await t.store.append(s, [written], { expectedRevision: 'no_stream' });

      const [read] = await t.store.readStream(s);

      expect(read).toMatchObject({
        id: written.id,
        type: 'InvoiceSettled',
        data: written.data,
        metadata: { schemaVersion: 1, correlationId: 'corr-1', causationId: 'cause-1' },
        streamName: s,
        revision: 0n,
        position: result.position,
      });
      expect(typeof read!.revision).toBe('bigint');
      expect(typeof read!.position).toBe('bigint');
      expect(new Date(read!.recordedAt).toISOString()).toBe(read!.recordedAt);
    });
  });
}

function describeDeliveryAcrossRestart(t: StoreUnderTest): void {
  describe('subscriptions: exactly once across a restart', () => {
    it('delivers every event exactly once and in order across a stop and a restart from its checkpoint, including events appended while it was stopped', async () => {
      const appended: string[] = [];
      const appendTo = async (suffix: string, count: number): Promise<void> => {
        for (let index = 0; index < count; index++) {
          const event = newEvent('Ticked', { index });
          appended.push(event.id);
          await t.store.append(t.stream(suffix), [event], { expectedRevision: 'any' });
        }
      };
      const first = new Collector(t.prefix);
      await appendTo('before', 4);

      const subscription = t.store.subscribeToAll(first.handle, { after: t.baseline });
      await first.until(4);
      await appendTo('live', 3);
      await first.until(7);
      await subscription.stop();
      const checkpoint = subscription.lastPosition;
      await appendTo('while-stopped', 3);

      const second = new Collector(t.prefix);
      const resumed = t.store.subscribeToAll(second.handle, { after: checkpoint });
      await second.until(3);
      await appendTo('after-restart', 3);
      await second.until(6);
      await resumed.stop();

      const seen = [...first.ids, ...second.ids];
      expect(seen).toEqual(appended);
      expect(new Set(seen).size).toBe(appended.length);
      expect(checkpoint).toBe(first.events[first.events.length - 1]!.position);
      expect(resumed.lastPosition).toBe(second.events[second.events.length - 1]!.position);
    });
  });
}

function describeDeliveryOrder(t: StoreUnderTest): void {
  describe('subscriptions: backlog then live, in order, one call at a time', () => {
    it('hands over the backlog and then live events in position order, one handler call at a time', async () => {
      for (let index = 0; index < 5; index++) await t.store.append(t.stream('s'), [newEvent(), newEvent()], { expectedRevision: 'any' });
      const collector = new Collector(t.prefix);

      const subscription = t.store.subscribeToAll(collector.handle, { after: t.baseline });
      await Promise.all(
        Array.from({ length: 5 }, (_, index) => t.store.append(t.stream(`c${index}`), [newEvent()], { expectedRevision: 'no_stream' })),
      );
      await collector.until(15);
      await subscription.stop();

      const positions = collector.events.map((event) => event.position);
      for (let index = 1; index < positions.length; index++) expect(positions[index]! > positions[index - 1]!).toBe(true);
      expect(collector.maxInFlight).toBe(1);
      expect(collector.ids).toEqual((await t.ourEventsSinceBaseline()).map((event) => event.id));
    });
  });
}

function describeSynchronousHandler(t: StoreUnderTest): void {
  describe('subscriptions: a synchronous handler', () => {
    it('gets the backlog and live events in position order though it returns no promise, and its checkpoint follows', async () => {
      for (let index = 0; index < 3; index++) await t.store.append(t.stream('s'), [newEvent(), newEvent()], { expectedRevision: 'any' });
      const seen: RecordedEvent[] = [];
      let waiting: { count: number; resolve: () => void } | undefined;
      const handler = (event: RecordedEvent): void => {
        if (event.streamName.startsWith(t.prefix)) seen.push(event);
        if (waiting !== undefined && seen.length >= waiting.count) waiting.resolve();
      };
      const subscription = t.store.subscribeToAll(handler, { after: t.baseline });
      await t.store.append(t.stream('live'), [newEvent()], { expectedRevision: 'no_stream' });
      if (seen.length < 7) await new Promise<void>((resolve) => (waiting = { count: 7, resolve }));
      await subscription.stop();

      expect(seen.map((event) => event.id)).toEqual((await t.ourEventsSinceBaseline()).map((event) => event.id));
      expect(subscription.lastPosition! >= seen.at(-1)!.position).toBe(true);
    });

    it('waits for the promise a handler returns for one event before the next, though it returned none for the event before', async () => {
      await t.store.append(t.stream('s'), [newEvent(), newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      const ours = (await t.ourEventsSinceBaseline()).map((event) => event.id);
      const seen: string[] = [];
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const secondEntered = new Promise<void>((resolve) => (entered = resolve));
      let done!: () => void;
      const allSeen = new Promise<void>((resolve) => (done = resolve));
      // The second of ours is handled asynchronously; the others return nothing.
      const subscription = t.store.subscribeToAll(
        (event) => {
          if (!event.streamName.startsWith(t.prefix)) return undefined;
          seen.push(event.id);
          if (seen.length === ours.length) done();
          if (seen.length !== 2) return undefined;
          entered();
          return released;
        },
        { after: t.baseline },
      );
      await secondEntered;
      await new Promise((resolve) => setImmediate(resolve));
      expect(seen).toEqual(ours.slice(0, 2));
      release();
      await allSeen;
      await subscription.stop();

      expect(seen).toEqual(ours);
      expect(subscription.lastPosition).toBe((await t.ourEventsSinceBaseline()).at(-1)!.position);
    });
  });
}

function describeStopAfterHandler(t: StoreUnderTest): void {
  describe('subscriptions: stop waits for the handler', () => {
    it('resolves stop() only after the handler call in flight has finished, so a checkpoint is never ahead of the work', async () => {
      await t.store.append(t.stream('s'), [newEvent()], { expectedRevision: 'no_stream' });
      let entered!: () => void;
      const handlerEntered = new Promise<void>((resolve) => (entered = resolve));
      let release!: () => void;
      const handlerReleased = new Promise<void>((resolve) => (release = resolve));
      let finished = false;
      const subscription = t.store.subscribeToAll(
        async (event) => {
          if (!event.streamName.startsWith(t.prefix)) return;
          entered();
          await handlerReleased;
          finished = true;
        },
        { after: t.baseline },
      );
      await handlerEntered;

      let stopped = false;
      const stopping = subscription.stop().then(() => (stopped = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(stopped).toBe(false);
      release();
      await stopping;

      expect(finished).toBe(true);
      expect(stopped).toBe(true);
    });
  });
}

function describeBadInput(t: StoreUnderTest): void {
  describe('bad input is refused with the field named, and nothing is written', () => {
    const cases = badInputs(t);

    it.each(cases)('refuses $description', async ({ act, field, message }) => {
      const s = t.stream('target');

      const error = await act(s).then(
        () => undefined,
        (caught: unknown) => caught,
      );

      expect(error).toBeInstanceOf(InvalidEventStoreInputError);
      expect((error as InvalidEventStoreInputError).field).toBe(field);
      if (message) expect((error as Error).message).toMatch(message);
      expect(await t.store.streamRevision(s)).toBeUndefined();
      expect(await t.ourEventsSinceBaseline()).toEqual([]);
      expect(await t.store.headPosition()).toBe(t.baseline);
    });
  });
}

interface Refusal {
  readonly description: string;
  readonly act: (s: string) => Promise<unknown>;
  readonly field: string;
  readonly message?: RegExp;
}

/** Each kind of bad input, what it does, and the field its refusal names. */
function badInputs(t: StoreUnderTest): Refusal[] {
  const cyclic: Record<string, unknown> = { name: 'loop' };
  cyclic['self'] = cyclic;
  const refusal = (description: string, act: Refusal['act'], field: string, message?: RegExp): Refusal => ({
    description,
    act,
    field,
    message,
  });
  return [
    refusal('an empty stream name, which could never be read back', () => t.store.append('', [newEvent()], { expectedRevision: 'any' }), 'streamName', /empty/),
    refusal(
      'a stream name over MAX_STREAM_NAME_LENGTH, so names stay indexable',
      () => t.store.append('x'.repeat(MAX_STREAM_NAME_LENGTH + 1), [newEvent()], { expectedRevision: 'any' }),
      'streamName',
      /MAX_STREAM_NAME_LENGTH/,
    ),
    refusal('a stream name starting with $, which KurrentDB reserves', () => t.store.append('$system', [newEvent()], { expectedRevision: 'any' }), 'streamName'),
    refusal('data holding a bigint, which JSON cannot carry', (s) => t.store.append(s, [newEvent('T', { credits: 10n })], { expectedRevision: 'any' }), 'events[0].data', /bigint/),
    refusal('data holding a cycle, which JSON cannot carry', (s) => t.store.append(s, [newEvent('T', cyclic)], { expectedRevision: 'any' }), 'events[0].data', /circular/),
    refusal('metadata holding a bigint', (s) => t.store.append(s, [newEvent('T', {}, { traceId: 1n })], { expectedRevision: 'any' }), 'events[0].metadata', /bigint/),
    refusal('a negative expected revision', (s) => t.store.append(s, [newEvent()], { expectedRevision: -1n }), 'options.expectedRevision', /negative/),
    refusal(
      'a non-integer expected revision, which no stream can be at',
      (s) => t.store.append(s, [newEvent()], { expectedRevision: 1.5 as unknown as bigint }),
      'options.expectedRevision',
    ),
    refusal('an empty event list, which has no id to make it idempotent', (s) => t.store.append(s, [], { expectedRevision: 'any' }), 'events', /at least one/),
    refusal('an event without an id', (s) => t.store.append(s, [{ ...newEvent(), id: undefined as unknown as string }], { expectedRevision: 'any' }), 'events[0].id'),
    refusal('an event id that is not a UUID', (s) => t.store.append(s, [{ ...newEvent(), id: 'order-1' }], { expectedRevision: 'any' }), 'events[0].id', /UUID/),
    refusal(
      'the nil UUID as an event id, which KurrentDB refuses',
      (s) => t.store.append(s, [{ ...newEvent(), id: '00000000-0000-0000-0000-000000000000' }], { expectedRevision: 'any' }),
      'events[0].id',
      /nil UUID/,
    ),
    refusal('an event without a type', (s) => t.store.append(s, [{ ...newEvent(), type: '' }], { expectedRevision: 'any' }), 'events[0].type'),
    refusal('a schemaVersion of 0', (s) => t.store.append(s, [newEvent('T', {}, { schemaVersion: 0 })], { expectedRevision: 'any' }), 'events[0].metadata.schemaVersion'),
    refusal('a schemaVersion of 1.5', (s) => t.store.append(s, [newEvent('T', {}, { schemaVersion: 1.5 })], { expectedRevision: 'any' }), 'events[0].metadata.schemaVersion'),
    refusal(
      'an event without a schemaVersion, which could never be upcast',
      (s) => t.store.append(s, [{ ...newEvent(), metadata: {} as never }], { expectedRevision: 'any' }),
      'events[0].metadata.schemaVersion',
    ),
    refusal(
      'the same id twice in one append',
      (s) => {
        const event = newEvent();
        return t.store.append(s, [event, { ...event }], { expectedRevision: 'any' });
      },
      'events[1].id',
    ),
    refusal(
      'a good first event followed by a bad one, so a batch is never half-written',
      (s) => t.store.append(s, [newEvent(), newEvent('T', { credits: 1n })], { expectedRevision: 'any' }),
      'events[1].data',
    ),
    refusal('a negative fromRevision when reading a stream', (s) => t.store.readStream(s, { fromRevision: -1n }), 'options.fromRevision'),
    refusal('a non-integer maxCount when reading all', () => t.store.readAll({ maxCount: 2.5 }), 'options.maxCount'),
  ];
}
