import { EventStoreDBClient, StreamDeletedError as ClientStreamDeletedError, UnknownError } from '@eventstore/db-client';
import { randomUUID } from 'node:crypto';
import { AggregateDecider, AggregateRepository } from '../../src/aggregates/aggregate.repository';
import {
  AppendOutcomeUnknownError,
  DeletedStreamError,
  EventStoreUnavailableError,
  InvalidEventStoreInputError,
  RecordedEvent,
} from '../../src/event-store/event-store.port';
import { MAX_APPEND_SIZE_BYTES } from '../../src/event-store/event-store-input.validation';
import {
  EventStoreDbEventStore,
  fromPortPosition,
  openEventStoreDb,
  toPortPosition,
} from '../../src/event-store/eventstoredb/eventstoredb-event-store';
import { parseStoreUrl } from '../../src/event-store/open-event-store';
import { AppendFault, EventStoreDbWireServer } from '../support/eventstoredb-wire-server';
import { newEvent } from './event-store.contract';

/**
 * Issue 15's eleven disagreements between the adapter and KurrentDB, each closed and proven through
 * the real `@eventstore/db-client` against the wire-level test double in test/support (which speaks
 * the client's own gRPC protocol as the server's source says the server does; it is not a KurrentDB).
 */

async function failure(attempt: Promise<unknown>): Promise<unknown> {
  return attempt.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );
}

/**
 * Re-sends while the outcome is unknown, as the repository does: the first call after a server
 * restart may meet the old, dying connection.
 */
async function settled<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof AppendOutcomeUnknownError) || tries >= 5) throw error;
    }
  }
}

/** Resolves when `count` events were handled. */
function collector(): { events: RecordedEvent[]; handle: (event: RecordedEvent) => void; until: (count: number) => Promise<void> } {
  const events: RecordedEvent[] = [];
  let waiters: Array<{ count: number; resolve: () => void }> = [];
  return {
    events,
    handle: (event) => {
      events.push(event);
      waiters = waiters.filter((waiter) => (events.length >= waiter.count ? (waiter.resolve(), false) : true));
    },
    until: (count) => (events.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve }))),
  };
}

/** A counter aggregate: each Add appends one Added event. */
const counter: AggregateDecider<{ add: number }, { type: 'Added'; data: { n: number } }, number> = {
  decide: (command) => [{ type: 'Added', data: { n: command.add } }],
  evolve: (state, event) => state + event.data.n,
  initialState: () => 0,
};

// Every current server lists BatchAppend (ServerFeatures.cs:22-42 at the commit in the wire server's
// SERVER_SOURCE_COMMIT), so the unary Append path runs only against servers older than that.
describe.each([
  ['BatchAppend', true],
  ['unary Append (older servers only)', false],
] as const)('issue 15 regressions through the real client and the wire test server (%s path)', (_path, batchAppend) => {
  let server: EventStoreDbWireServer;
  let store: EventStoreDbEventStore;
  let client: EventStoreDBClient;
  const name = (suffix: string) => `reg-${suffix}-${randomUUID().slice(0, 8)}`;

  beforeEach(async () => {
    server = await EventStoreDbWireServer.start({ batchAppend });
    store = openEventStoreDb(server.connectionString);
    client = EventStoreDBClient.connectionString(server.connectionString);
  });

  afterEach(async () => {
    await store.close();
    await client.dispose();
    await server.stop();
  });

  describe('point 1: re-append is idempotent only with the original exact or no_stream revision', () => {
    it('answers the original result for the same ids and no_stream or exact revision even after a server restart', async () => {
      const s = name('p1');
      const first = [newEvent(), newEvent()];
      const second = [newEvent()];
      const original = await store.append(s, first, { expectedRevision: 'no_stream' });
      const next = await store.append(s, second, { expectedRevision: 1n });
      await server.restart();

      expect(await settled(() => store.append(s, first, { expectedRevision: 'no_stream' }))).toEqual(original);
      expect(await settled(() => store.append(s, second, { expectedRevision: 1n }))).toEqual(next);
      expect(server.storedEvents(s)).toHaveLength(3);
    });

    it('writes a second copy when the same ids are re-sent with any after a restart, which is why writers never retry with any', async () => {
      const s = name('p1-any');
      const batch = [newEvent()];
      await store.append(s, batch, { expectedRevision: 'any' });
      // Before a restart the server's id cache makes it idempotent...
      await store.append(s, batch, { expectedRevision: 'any' });
      expect(server.storedEvents(s)).toHaveLength(1);
      await server.restart();

      // ...after one, the cache is empty and the batch is written again.
      await settled(() => store.append(s, batch, { expectedRevision: 'any' }));
      expect(server.storedEvents(s).map((event) => event.id)).toEqual([batch[0]!.id, batch[0]!.id]);
    });
  });

  describe('point 2: every append failure the client throws becomes a port error, and unknown outcomes are settled with the same ids', () => {
    it.each<[AppendFault, boolean]>([
      ['commit-then-timeout', true],
      ['commit-then-drop', true],
      ['drop', false],
      ['shutdown', false],
    ])('turns %s into AppendOutcomeUnknownError (committed: %p), naming the stream and the safe retry', async (fault, committed) => {
      const s = name('p2');
      server.injectAppendFault(fault, s);

      const error = await failure(store.append(s, [newEvent()], { expectedRevision: 'no_stream' }));

      expect(error).toBeInstanceOf(AppendOutcomeUnknownError);
      expect(error).toMatchObject({ streamName: s, expected: 'no_stream', message: expect.stringContaining('same expected revision') });
      expect(server.storedEvents(s)).toHaveLength(committed ? 1 : 0);
    });

    it.each<AppendFault>(['commit-then-timeout', 'commit-then-drop', 'drop'])(
      'lets the repository settle an append that suffered %s exactly once, by re-sending the same ids with the same revision',
      async (fault) => {
        const s = name('p2-repo');
        const repository = new AggregateRepository(store);
        await repository.handle(s, counter, { add: 1 }, { newStream: true });
        server.injectAppendFault(fault, s);

        const handled = await repository.handle(s, counter, { add: 2 });

        expect(handled).toMatchObject({ state: 3, revision: 1n });
        expect(server.storedEvents(s).map((event) => JSON.parse(Buffer.from(event.data).toString('utf8')))).toEqual([{ n: 1 }, { n: 2 }]);
      },
    );

    it('turns the server refusing an append over its size bound into InvalidEventStoreInputError on events', async () => {
      const small = await EventStoreDbWireServer.start({ batchAppend, maxAppendSizeBytes: 4_096 });
      const onSmall = openEventStoreDb(small.connectionString);
      try {
        const error = await failure(onSmall.append(name('p2-size'), [newEvent('T', { text: 'x'.repeat(5_000) })], { expectedRevision: 'any' }));

        expect(error).toBeInstanceOf(InvalidEventStoreInputError);
        expect(error).toMatchObject({ field: 'events', message: expect.stringContaining('4096 bytes') });
      } finally {
        await onSmall.close();
        await small.stop();
      }
    });

    it('turns StreamDeletedError into DeletedStreamError', async () => {
      const s = name('p2-deleted');
      await store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      await client.tombstoneStream(s);

      await expect(store.append(s, [newEvent()], { expectedRevision: 0n })).rejects.toMatchObject({ name: 'DeletedStreamError', how: 'tombstoned' });
    });
  });

  describe('point 3: the nil UUID is refused before it reaches the server', () => {
    it('refuses it as events[0].id, while the server itself would refuse it too', async () => {
      const nil = '00000000-0000-0000-0000-000000000000';
      const before = { ...server.appendRequests };

      const error = await failure(store.append(name('p3'), [{ ...newEvent(), id: nil }], { expectedRevision: 'any' }));

      expect(error).toMatchObject({ name: 'InvalidEventStoreInputError', field: 'events[0].id' });
      expect(server.appendRequests).toEqual(before);
      // What the server says when a client sends it anyway.
      await expect(
        client.appendToStream(name('p3-raw'), [{ id: nil, type: 'T', data: {}, contentType: 'application/json' } as never]),
      ).rejects.toBeInstanceOf(UnknownError);
    });
  });

  describe('point 4: reading a tombstoned stream', () => {
    it('throws DeletedStreamError from readStream and streamRevision instead of the client error', async () => {
      const s = name('p4');
      await store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      await client.tombstoneStream(s);

      const read = await failure(store.readStream(s));
      const revision = await failure(store.streamRevision(s));

      for (const error of [read, revision]) {
        expect(error).toBeInstanceOf(DeletedStreamError);
        expect(error).not.toBeInstanceOf(ClientStreamDeletedError);
        expect(error).toMatchObject({ streamName: s, how: 'tombstoned' });
      }
    });
  });

  describe('point 5: a subscription retries only transient errors, and reports every error', () => {
    it('ends on access denied without resubscribing, reports it as permanent, and stop() rejects with it', async () => {
      server.failSubscriptions('access-denied');
      const reported: Array<[string, boolean]> = [];
      let ended!: () => void;
      const endedOnce = new Promise<void>((resolve) => (ended = resolve));

      const subscription = store.subscribeToAll(() => undefined, {
        onError: (error, willRetry) => {
          reported.push([error.constructor.name, willRetry]);
          if (!willRetry) ended();
        },
      });
      await endedOnce;

      await expect(subscription.stop()).rejects.toMatchObject({ type: 'access-denied' });
      expect(reported).toEqual([['AccessDeniedError', false]]);
      expect(server.subscriptionsOpened).toBe(1);
    });

    it('resubscribes after a dropped connection from the last handled event, reporting it as transient, each event once', async () => {
      const s = name('p5');
      const seen = collector();
      const reported: boolean[] = [];
      const subscription = store.subscribeToAll(seen.handle, { onError: (_error, willRetry) => reported.push(willRetry) });
      await store.append(s, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      await seen.until(2);

      server.dropSubscriptions();
      await store.append(s, [newEvent()], { expectedRevision: 1n });
      await seen.until(3);
      await subscription.stop();

      expect(seen.events.map((event) => event.revision)).toEqual([0n, 1n, 2n]);
      expect(reported).toEqual([true]);
      expect(server.subscriptionsOpened).toBe(2);
    });
  });

  /** A position whose commit position is one byte before the event's: inside the record before it. */
  const insideRecordBefore = (position: bigint): bigint => {
    const commit = fromPortPosition(position).commit - 1n;
    return toPortPosition({ commit, prepare: commit });
  };

  describe('point 6: an `after` that is not an event position (issue 27 point 3: one inside a record)', () => {
    it('reads all events after it from readAll instead of failing with InvalidPosition', async () => {
      const s = name('p6');
      await store.append(s, [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      const [first, second] = await store.readStream(s);

      // Inside the first event's record: between the first and the second, and unreadable on the server.
      const between = insideRecordBefore(second!.position);
      expect(between > first!.position).toBe(true);
      const events = await store.readAll({ after: between });

      expect(events.map((event) => event.revision)).toEqual([1n, 2n]);
    });

    it('subscribes after it, delivering the events after it once, instead of resubscribing forever', async () => {
      const s = name('p6-sub');
      await store.append(s, [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      const [, second] = await store.readStream(s);
      const seen = collector();

      const subscription = store.subscribeToAll(seen.handle, { after: insideRecordBefore(second!.position) });
      await seen.until(2);
      await subscription.stop();

      expect(seen.events.map((event) => event.revision)).toEqual([1n, 2n]);
      expect(server.subscriptionsOpened).toBe(2);
    });
  });

  describe('point 7: events of one legacy transaction share a commit position', () => {
    it('gives each its own position in $all order, and resumes a subscription between two of them exactly once', async () => {
      const s = name('p7');
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      server.appendLegacyTransaction(
        s,
        ids.map((id) => ({ id, type: 'T', data: {} })),
      );

      const events = (await store.readAll()).filter((event) => event.streamName === s);
      const commits = events.map((event) => fromPortPosition(event.position).commit);
      const seen = collector();
      const subscription = store.subscribeToAll(seen.handle, { after: events[1]!.position });
      await store.append(name('p7-after'), [newEvent()], { expectedRevision: 'no_stream' });
      await seen.until(2);
      await subscription.stop();

      expect(events.map((event) => event.id)).toEqual(ids);
      expect(new Set(commits).size).toBe(1);
      expect(events[0]!.position < events[1]!.position && events[1]!.position < events[2]!.position).toBe(true);
      expect(seen.events[0]!.id).toBe(ids[2]);
      expect(seen.events).toHaveLength(2);
    });
  });

  describe('point 7 (follow-up): distances between positions', () => {
    it('counts log bytes between commit positions, so a projection one event behind is not 2^64 positions behind', async () => {
      const s = name('p7-lag');
      const first = await store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      const second = await store.append(s, [newEvent()], { expectedRevision: 0n });

      const distance = store.positionDistance(first.position, second.position);

      expect(distance).toBe(fromPortPosition(second.position).commit - fromPortPosition(first.position).commit);
      expect(distance > 0n && distance < 2n ** 32n).toBe(true);
      expect(store.positionDistance(second.position, first.position)).toBe(0n);
    });
  });

  describe('point 8: a soft-deleted stream (issue 27 point 1 decides what the ledger does; the server itself would recreate it)', () => {
    it('reads as absent, and an append believing it new is refused with DeletedStreamError before anything is written', async () => {
      const s = name('p8');
      await store.append(s, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      await client.deleteStream(s);

      expect(await store.readStream(s)).toEqual([]);
      expect(await store.streamRevision(s)).toBeUndefined();
      const error = await failure(store.append(s, [newEvent()], { expectedRevision: 'no_stream' }));
      const repositoryError = await failure(new AggregateRepository(store).handle(s, counter, { add: 1 }));

      expect(error).toBeInstanceOf(DeletedStreamError);
      expect(error).toMatchObject({ how: 'soft-deleted', message: expect.stringContaining('neither created anew') });
      expect(repositoryError).toBeInstanceOf(DeletedStreamError);
      expect(server.storedEvents(s)).toHaveLength(2);
    });
  });

  describe('point 9: connection strings', () => {
    it('accepts kdb:// and kdb+discover:// in LEDGER_STORE and connects with kdb://', async () => {
      expect(parseStoreUrl(`kdb://127.0.0.1:${server.port}?tls=false`).kind).toBe('eventstoredb');
      expect(parseStoreUrl('kdb+discover://cluster.example:2113').kind).toBe('eventstoredb');
      const viaKdb = openEventStoreDb(`kdb://127.0.0.1:${server.port}?tls=false`);
      try {
        await viaKdb.append(name('p9'), [newEvent()], { expectedRevision: 'no_stream' });
      } finally {
        await viaKdb.close();
      }
      expect(server.appendRequests.batchAppend + server.appendRequests.unaryAppend).toBe(1);
    });

    it('says, when a server cannot be reached with TLS, that TLS is on unless the string says ?tls=false', async () => {
      const withTls = openEventStoreDb(`esdb://127.0.0.1:${server.port}`);
      try {
        const error = await failure(withTls.streamRevision(name('p9-tls')));

        expect(error).toBeInstanceOf(EventStoreUnavailableError);
        expect((error as Error).message).toContain('?tls=false');
      } finally {
        await withTls.close();
      }
      expect(parseStoreUrl.bind(undefined, 'mysql://x')).toThrow(/tls=false/);
    });
  });

  describe('point 10: close() with appends in flight', () => {
    it('lets them commit before disposing of the client, and refuses appends after', async () => {
      const appends = Array.from({ length: 20 }, (_, index) => store.append(name(`p10-${index}`), [newEvent()], { expectedRevision: 'no_stream' }));

      await store.close();

      const outcomes = await Promise.allSettled(appends);
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      await expect(store.append(name('p10-late'), [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/closed/);
    });
  });

  describe('point 11: the append size is counted as the server counts it', () => {
    /** One event whose UTF-8 data + metadata + 2 × type length is exactly `bytes`. */
    function eventOfSize(bytes: number, character: string) {
      const event = newEvent('Sized', { text: '' });
      const overhead = Buffer.byteLength(JSON.stringify(event.data)) + Buffer.byteLength(JSON.stringify(event.metadata)) + 2 * event.type.length;
      const perCharacter = Buffer.byteLength(character);
      const count = Math.floor((bytes - overhead) / perCharacter);
      const pad = 'a'.repeat(bytes - overhead - count * perCharacter);
      return { ...event, data: { text: character.repeat(count) + pad } };
    }

    it('accepts an append of exactly MAX_APPEND_SIZE_BYTES of multi-byte text, which the server (1 MiB) accepts too', async () => {
      const event = eventOfSize(MAX_APPEND_SIZE_BYTES, '€');

      await expect(store.append(name('p11'), [event], { expectedRevision: 'no_stream' })).resolves.toMatchObject({ nextExpectedRevision: 0n });
    });

    it('refuses one byte more before sending, though it is far fewer UTF-16 characters than bytes', async () => {
      const event = eventOfSize(MAX_APPEND_SIZE_BYTES + 1, '€');
      const before = { ...server.appendRequests };
      expect(JSON.stringify(event.data).length).toBeLessThan(MAX_APPEND_SIZE_BYTES / 2);

      const error = await failure(store.append(name('p11-over'), [event], { expectedRevision: 'no_stream' }));

      expect(error).toMatchObject({ name: 'InvalidEventStoreInputError', field: 'events', message: expect.stringContaining('MAX_APPEND_SIZE_BYTES') });
      expect(server.appendRequests).toEqual(before);
    });
  });
});
