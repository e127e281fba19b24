import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import {
  BACKWARDS,
  EventStoreDBClient,
  NO_STREAM,
  Position,
  START,
  UnknownError,
  excludeSystemEvents,
  jsonEvent,
} from '@eventstore/db-client';
import { AggregateDecider, AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { DeletedStreamError, RecordedEvent } from '../../src/event-store/event-store.port';
import {
  ESDB_READ_PAGE_EVENTS,
  EventStoreDbEventStore,
  fromPortPosition,
  openEventStoreDb,
  toPortPosition,
} from '../../src/event-store/eventstoredb/eventstoredb-event-store';
import { EventStoreDbWireServer, SERVER_SOURCE_COMMIT, WIRE_DELETED_STREAM_REVISION } from '../support/eventstoredb-wire-server';
import { newEvent } from './event-store.contract';

/**
 * Issue 27: where the wire test server differed from KurrentDB, each point made to behave as the
 * server's source says (kurrent-io/KurrentDB at SERVER_SOURCE_COMMIT, paths under src/KurrentDB.Core/,
 * named in each describe), and what the adapter does about it. Everything goes through the real
 * `@eventstore/db-client` over 127.0.0.1; the raw client shows what the server does, the adapter what
 * the ledger makes of it.
 */

const UNKNOWN_POSITION = (1n << 64n) - 1n;

async function failure(attempt: Promise<unknown>): Promise<unknown> {
  return attempt.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );
}

async function drain<T>(read: AsyncIterable<{ event?: T }>): Promise<T[]> {
  const events: T[] = [];
  for await (const resolved of read) if (resolved.event !== undefined) events.push(resolved.event);
  return events;
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

const counter: AggregateDecider<{ add: number }, { type: 'Added'; data: { n: number } }, number> = {
  decide: (command) => [{ type: 'Added', data: { n: command.add } }],
  evolve: (state, event) => state + event.data.n,
  initialState: () => 0,
};

const raw = (type = 'Noted') => jsonEvent({ type, data: { note: 'raw' } });

describe(`issue 27: the wire test server as KurrentDB's source says (${SERVER_SOURCE_COMMIT.slice(0, 7)})`, () => {
  let server: EventStoreDbWireServer;
  let store: EventStoreDbEventStore;
  let client: EventStoreDBClient;
  const name = (suffix: string) => `i27-${suffix}-${randomUUID().slice(0, 8)}`;

  const startOn = async (options: Parameters<typeof EventStoreDbWireServer.start>[0]) => {
    server = await EventStoreDbWireServer.start(options);
    store = openEventStoreDb(server.connectionString);
    client = EventStoreDBClient.connectionString(server.connectionString);
  };

  beforeEach(() => startOn({ batchAppend: true }));

  afterEach(async () => {
    await store.close();
    await client.dispose();
    await server.stop();
  });

  describe('point 1: a soft-deleted stream is never recreated by the ledger (IndexWriter.cs:283-284, :324; StorageWriterService.cs:424-428, 566-597)', () => {
    it('lets the raw client recreate it with no_stream, numbering on after the hidden events, as soft_delete.cs:87-111 expects', async () => {
      const s = name('p1-raw');
      await client.appendToStream(s, [raw(), raw()], { expectedRevision: NO_STREAM });
      await client.deleteStream(s);

      const recreated = await client.appendToStream(s, [raw(), raw(), raw()], { expectedRevision: NO_STREAM });
      const read = await drain<{ revision: bigint }>(client.readStream(s));
      const { metadata } = await client.getStreamMetadata(s);

      expect(recreated.nextExpectedRevision).toBe(4n);
      expect(read.map((event) => event.revision)).toEqual([2n, 3n, 4n]);
      expect(metadata?.truncateBefore).toBe(2);
    });

    it('lets the raw client recreate it with the old last revision too, as soft_delete.cs:114-137 expects', async () => {
      const s = name('p1-exact');
      await client.appendToStream(s, [raw(), raw()], { expectedRevision: NO_STREAM });
      await client.deleteStream(s);

      const recreated = await client.appendToStream(s, [raw()], { expectedRevision: 1n });

      expect(recreated.nextExpectedRevision).toBe(2n);
    });

    it('refuses no_stream on it with DeletedStreamError before sending any append, so nothing is written', async () => {
      const s = name('p1');
      await store.append(s, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      await client.deleteStream(s);
      const before = { ...server.appendRequests };

      const error = await failure(store.append(s, [newEvent()], { expectedRevision: 'no_stream' }));

      expect(error).toBeInstanceOf(DeletedStreamError);
      expect(error).toMatchObject({ streamName: s, how: 'soft-deleted', code: 'stream_deleted' });
      expect(server.appendRequests).toEqual(before);
      expect(server.storedEvents(s)).toHaveLength(2);
    });

    it('refuses it to the repository, which creates a stream it believes new (an invocation id just made) with no_stream', async () => {
      const s = name('p1-repo');
      await store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      await client.deleteStream(s);

      const asNew = await failure(new AggregateRepository(store).handle(s, counter, { add: 1 }, { newStream: true }));
      const asRead = await failure(new AggregateRepository(store).handle(s, counter, { add: 1 }));

      expect(asNew).toBeInstanceOf(DeletedStreamError);
      expect(asRead).toBeInstanceOf(DeletedStreamError);
      expect(server.storedEvents(s)).toHaveLength(1);
    });

    it('refuses to read a stream recreated behind its back, whose revisions before the recreation are hidden, instead of folding the rest', async () => {
      const s = name('p1-hidden');
      await store.append(s, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      await client.deleteStream(s);
      await client.appendToStream(s, [raw()], { expectedRevision: 1n });

      const read = await failure(store.readStream(s));
      const handled = await failure(new AggregateRepository(store).handle(s, counter, { add: 1 }));

      expect(read).toMatchObject({ name: 'DeletedStreamError', how: 'soft-deleted', lastRevision: 1n });
      expect((read as Error).message).toContain('up to revision 1');
      expect(handled).toBeInstanceOf(DeletedStreamError);
      // Reading on from the first visible revision is what the caller asked for: allowed.
      expect((await store.readStream(s, { fromRevision: 2n })).map((event) => event.revision)).toEqual([2n]);
    });

    it('refuses a read on from a revision that finds the stream soft-deleted (a snapshot or cache had seen it), while a read from 0 finds it absent', async () => {
      const s = name('p1-on');
      await store.append(s, [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      await client.deleteStream(s);

      expect(await store.readStream(s)).toEqual([]);
      expect(await store.streamRevision(s)).toBeUndefined();
      await expect(store.readStream(s, { fromRevision: 2n })).rejects.toMatchObject({ name: 'DeletedStreamError', how: 'soft-deleted' });
    });

    it('reports a no_stream append that landed after hidden events (a delete between its check and its append) instead of taking it as a new stream', async () => {
      // No server: a delete cannot be timed between the two calls over the wire, so a client stands in.
      const fake = {
        getStreamMetadata: async (streamName: string) => ({ streamName }),
        appendToStream: async () => ({ success: true, nextExpectedRevision: 4n, position: { commit: 900n, prepare: 900n } }),
      };
      const onFake = new EventStoreDbEventStore(fake as unknown as EventStoreDBClient);

      const error = await failure(onFake.append('account-x', [newEvent()], { expectedRevision: 'no_stream' }));

      expect(error).toMatchObject({ name: 'DeletedStreamError', how: 'soft-deleted', lastRevision: 3n });
    });
  });

  describe('point 2: legacy-transaction events carry no position in stream reads (Data/ResolvedEvent.cs:64-78, StorageReaderWorker.cs:104-105, Grpc/Streams.Read.cs:384-426)', () => {
    it('sends them without one to the raw client, which $all reads give', async () => {
      const s = name('p2-raw');
      server.appendLegacyTransaction(s, [{ id: randomUUID(), type: 'T', data: {} }]);

      const [fromStream] = await drain<{ position?: Position }>(client.readStream(s));
      const [fromAll] = (await drain<{ streamId: string; position?: Position }>(client.readAll())).filter((event) => event.streamId === s);

      expect(fromStream!.position).toEqual({ commit: UNKNOWN_POSITION, prepare: UNKNOWN_POSITION });
      expect(fromAll!.position!.commit).not.toBe(fromAll!.position!.prepare);
    });

    it.each([
      ['after a self-committed event of the stream', true],
      ['at the start of the stream', false],
    ])('gives readStream the positions $all has for them, %s', async (_where, eventBefore) => {
      const s = name('p2');
      if (eventBefore) await store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      await store.append(name('p2-other'), [newEvent()], { expectedRevision: 'no_stream' });
      server.appendLegacyTransaction(
        s,
        [1, 2, 3].map(() => ({ id: randomUUID(), type: 'T', data: {} })),
      );
      await store.append(s, [newEvent()], { expectedRevision: eventBefore ? 3n : 2n });

      const fromStream = await store.readStream(s);
      const fromAll = (await store.readAll()).filter((event) => event.streamName === s);

      expect(fromStream.map((event) => [event.id, event.position])).toEqual(fromAll.map((event) => [event.id, event.position]));
      expect(fromStream).toHaveLength(eventBefore ? 5 : 4);
    });
  });

  describe('point 3: only a commit position inside a record is unreadable (StorageReaderWorker.All.cs:44-49, 100-105; TFChunkReadSide.cs:488-515)', () => {
    /** Inside the record that ends where the event's starts. */
    const insideRecordBefore = (position: bigint): Position => {
      const commit = fromPortPosition(position).commit - 1n;
      return { commit, prepare: commit };
    };

    it('reads the raw client on from the start of a record that is no event position, and fails it inside a record', async () => {
      const s = name('p3-raw');
      await store.append(s, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      const [, second] = await store.readStream(s);
      const { commit } = fromPortPosition(second!.position);

      const fromRecordStart = await drain<{ id: string }>(client.readAll({ fromPosition: { commit, prepare: 0n }, maxCount: 1 }));
      const inside = await failure(drain(client.readAll({ fromPosition: insideRecordBefore(second!.position), maxCount: 1 })));

      expect(fromRecordStart.map((event) => event.id)).toEqual([second!.id]);
      expect(inside).toBeInstanceOf(UnknownError);
      expect((inside as Error).message).toContain('Unexpected ReadAllResult: InvalidPosition >> ');
    });

    it.each(['invalid-position', 'error'] as const)(
      'reads and subscribes on from a position inside a record when the server answers it as %s',
      async (midRecordReads) => {
        await store.close();
        await client.dispose();
        await server.stop();
        await startOn({ batchAppend: true, midRecordReads });
        const s = name('p3');
        await store.append(s, [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        const [, second] = await store.readStream(s);
        const after = toPortPosition(insideRecordBefore(second!.position));
        const seen = collector();

        const read = (await store.readAll({ after })).filter((event) => event.streamName === s);
        const subscription = store.subscribeToAll(seen.handle, { after });
        await seen.until(2);
        await subscription.stop();

        const raw = await failure(drain(client.readAll({ fromPosition: insideRecordBefore(second!.position), maxCount: 1 })));
        expect((raw as Error).message).toContain(midRecordReads === 'error' ? 'ReadAllResult: Error >> ' : 'ReadAllResult: InvalidPosition >> ');
        expect(read.map((event) => event.revision)).toEqual([1n, 2n]);
        expect(seen.events.map((event) => event.revision)).toEqual([1n, 2n]);
        expect(server.subscriptionsOpened).toBe(2);
      },
    );
  });

  describe('point 4: $all holds $metadata and $streamDeleted records among user events (StorageWriterService.cs:483-504, 547-597)', () => {
    it('shows them to the raw client, and hides them from readAll, headPosition and subscriptions', async () => {
      const deleted = name('p4-soft');
      const tombstoned = name('p4-tomb');
      const seen = collector();
      const subscription = store.subscribeToAll(seen.handle);
      await store.append(deleted, [newEvent()], { expectedRevision: 'no_stream' });
      await store.append(tombstoned, [newEvent()], { expectedRevision: 'no_stream' });
      await client.deleteStream(deleted);
      await client.tombstoneStream(tombstoned);
      await seen.until(2);

      const rawAll = await drain<{ streamId: string; type: string; revision: bigint }>(client.readAll());
      const system = rawAll.filter((event) => event.streamId === `$$${deleted}` || event.streamId === tombstoned).map((event) => [event.streamId, event.type]);
      const ours = (await store.readAll()).map((event) => event.streamName);
      await store.append(name('p4-after'), [newEvent()], { expectedRevision: 'no_stream' });
      await seen.until(3);
      await subscription.stop();

      expect(system).toEqual([
        [tombstoned, 'SomethingNoted'],
        [`$$${deleted}`, '$metadata'],
        [tombstoned, '$streamDeleted'],
      ]);
      expect(rawAll.find((event) => event.type === '$streamDeleted')!.revision).toBe(WIRE_DELETED_STREAM_REVISION);
      expect(ours).toEqual([deleted, tombstoned]);
      expect(seen.events.map((event) => event.type)).toEqual(['SomethingNoted', 'SomethingNoted', 'SomethingNoted']);
    });

    it('answers headPosition with the newest user event, past the system records written after it', async () => {
      const s = name('p4-head');
      const appended = await store.append(s, [newEvent()], { expectedRevision: 'no_stream' });
      await client.deleteStream(s);
      await client.tombstoneStream(s);

      expect(await store.headPosition()).toBe(appended.position);
    });
  });

  describe('point 5: backwards $all reads skip a legacy transaction\'s earlier events from one of its positions (AllReader.cs:264-310)', () => {
    const SYSTEM_TYPED = ESDB_READ_PAGE_EVENTS + 100;
    const USER_TYPED = 50;

    /** A user event, then one transaction: USER_TYPED user events, then SYSTEM_TYPED `$` events. */
    async function bigTransaction(): Promise<{ before: bigint; events: Array<{ id: string; type: string }> }> {
      const before = await store.append(name('p5-before'), [newEvent()], { expectedRevision: 'no_stream' });
      const events = [
        ...Array.from({ length: USER_TYPED }, () => ({ id: randomUUID(), type: 'Noted' })),
        ...Array.from({ length: SYSTEM_TYPED }, () => ({ id: randomUUID(), type: '$Noted' })),
      ];
      server.appendLegacyTransaction(name('p5'), events.map((event) => ({ ...event, data: {} })));
      return { before: before.position, events };
    }

    it('shows the raw client the skip: back from a transaction event\'s own position, none of its earlier events come', async () => {
      const { events } = await bigTransaction();
      const all = await drain<{ id: string; position?: Position }>(client.readAll());
      const middle = all.find((event) => event.id === events[10]!.id)!;

      const back = await drain<{ id: string }>(client.readAll({ fromPosition: middle.position!, direction: BACKWARDS, maxCount: 20 }));

      const transaction = new Set(events.map((event) => event.id));
      expect(back.filter((event) => transaction.has(event.id))).toEqual([]);
    });

    it('finds the newest user event of the transaction across a page boundary inside it', async () => {
      const { events } = await bigTransaction();
      const all = (await store.readAll()).filter((event) => event.id === events[USER_TYPED - 1]!.id);

      expect(await store.headPosition()).toBe(all[0]!.position);
    });

    it('reads on from one of its positions, and resolves an `after` inside one of its records to the event before it', async () => {
      const { before, events } = await bigTransaction();
      const ours = (await store.readAll()).filter((event) => events.some((written) => written.id === event.id));
      // Inside the record of the transaction's 21st event (prepared before its commit record).
      const inside = toPortPosition({ commit: fromPortPosition(ours[20]!.position).prepare + 1n, prepare: 0n });

      const onFrom = await store.readAll({ after: ours[20]!.position, maxCount: 5 });
      const resolved = await store.readPositionAtOrBefore(inside);
      const afterInside = await store.readAll({ after: inside, maxCount: 3 });

      expect(onFrom.map((event) => event.id)).toEqual(ours.slice(21, 26).map((event) => event.id));
      // Every event of the transaction commits after `inside`: the last record at or before it is the one before them.
      expect(toPortPosition(resolved as Position)).toBe(before);
      expect(afterInside.map((event) => event.id)).toEqual(ours.slice(0, 3).map((event) => event.id));
    });
  });

  describe('point 6: checkpoints come before CaughtUp and can fall between events (Enumerator.AllSubscriptionFiltered.cs:309-334)', () => {
    it('sends the raw client a last checkpoint before CaughtUp, one at a position no record has', async () => {
      await store.append(name('p6'), [newEvent()], { expectedRevision: 'no_stream' });
      await client.appendToStream(name('p6-sys'), Array.from({ length: 40 }, () => raw('$Noted')), { expectedRevision: NO_STREAM });
      const order: string[] = [];
      const checkpoints: Position[] = [];
      const subscription = client.subscribeToAll({
        fromPosition: START,
        filter: excludeSystemEvents({ checkpointReached: (_subscription, position) => void (order.push('checkpoint'), checkpoints.push(position)) }),
      });
      subscription.on('data', () => undefined);
      await new Promise<void>((resolve) => subscription.on('caughtUp', () => (order.push('caughtUp'), resolve())));
      await subscription.unsubscribe();

      const starts = new Set(server.records().map((record) => `${record.commit}/${record.prepare}`));
      expect(order.slice(-2)).toEqual(['checkpoint', 'caughtUp']);
      expect(checkpoints.some((position) => !starts.has(`${position.commit}/${position.prepare}`))).toBe(true);
    });

    it('leaves the adapter delivering each event once, resuming from its last event, not a checkpoint', async () => {
      const s = name('p6-once');
      await store.append(s, [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      await client.appendToStream(name('p6-sys'), Array.from({ length: 40 }, () => raw('$Noted')), { expectedRevision: NO_STREAM });
      const seen = collector();
      const subscription = store.subscribeToAll(seen.handle);
      await seen.until(2);

      server.dropSubscriptions();
      await store.append(s, [newEvent()], { expectedRevision: 1n });
      await seen.until(3);
      await subscription.stop();

      expect(seen.events.map((event) => event.revision)).toEqual([0n, 1n, 2n]);
    });
  });

  describe('point 7: every current server lists BatchAppend (Grpc/ServerFeatures.cs:22-42, ClusterVNodeStartup.cs:154)', () => {
    it('sends the adapter\'s appends through BatchAppend, so the unary Append path is tested for older servers only', async () => {
      await store.append(name('p7'), [newEvent()], { expectedRevision: 'no_stream' });

      expect(server.appendRequests).toEqual({ batchAppend: 1, unaryAppend: 0 });
    });
  });

  describe('point 8: docker/compose.yml runs a released server', () => {
    it('pins the KurrentDB image to a release version (no pre-release suffix), the one docs/eventstoredb.md names', () => {
      const compose = readFileSync(join(__dirname, '../../docker/compose.yml'), 'utf8');
      const docs = readFileSync(join(__dirname, '../../docs/eventstoredb.md'), 'utf8');

      const tag = /image: docker\.kurrent\.io\/kurrent-latest\/kurrentdb:(\S+)/.exec(compose)?.[1];

      expect(tag).toMatch(/^\d+\.\d+\.\d+$/);
      expect(docs).toContain(`kurrentdb:${tag}`);
      expect(docs).toContain(`v${tag}`);
    });
  });
});
