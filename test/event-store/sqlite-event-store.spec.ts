import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConcurrencyError, InvalidEventStoreInputError, RecordedEvent } from '../../src/event-store/event-store.port';
import { SqliteSchemaTooNewError, SQLITE_SCHEMA_VERSION } from '../../src/event-store/sqlite/sqlite-schema.migrations';
import { MAX_EAGER_COMMITS_PER_TURN, MAX_PAGE_SIZE_STATEMENTS, openSqliteEventStore, SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { describeEventStoreContract, newEvent } from './event-store.contract';

const directory = mkdtempSync(join(tmpdir(), 'ledger-sqlite-store-'));
const newDatabasePath = (): string => join(directory, `${randomUUID()}.sqlite`);

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describeEventStoreContract('SQLite, file-backed in WAL mode', () => openSqliteEventStore({ path: newDatabasePath() }));
describeEventStoreContract('SQLite, :memory:', () => openSqliteEventStore({ path: ':memory:' }));

async function failure(attempt: Promise<unknown>): Promise<unknown> {
  return attempt.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('SQLite event store', () => {
  let path: string;
  let store: SqliteEventStore;

  beforeEach(() => {
    path = newDatabasePath();
    store = openSqliteEventStore({ path });
  });

  afterEach(async () => {
    await store.close();
  });

  describe('schema', () => {
    it('creates the log in WAL mode and records its schema version in user_version, so a later build knows what it opens', () => {
      const inspector = new Database(path, { readonly: true });
      try {
        expect(inspector.pragma('journal_mode', { simple: true })).toBe('wal');
        expect(inspector.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION);
      } finally {
        inspector.close();
      }
    });

    it('reopens an existing file with its events and migrates nothing twice', async () => {
      const written = await store.append('order-1', [newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      await store.close();

      store = openSqliteEventStore({ path });

      expect((await store.readStream('order-1')).map((event) => event.revision)).toEqual([0n, 1n]);
      expect(await store.headPosition()).toBe(written.position);
    });

    it('refuses a file whose schema is newer than this build, rather than misreading it', async () => {
      await store.close();
      const editor = new Database(path);
      editor.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`);
      editor.close();

      expect(() => openSqliteEventStore({ path })).toThrow(SqliteSchemaTooNewError);
      store = openSqliteEventStore({ path: ':memory:' });
    });

    it('enforces unique (stream, revision) and unique event id in the schema itself, beneath the store’s own checks', async () => {
      const event = newEvent();
      await store.append('order-1', [event], { expectedRevision: 'no_stream' });
      const intruder = new Database(path);
      const insert = intruder.prepare(
        `INSERT INTO events (stream_name, revision, event_id, type, data, metadata, recorded_at_ms) VALUES (?, ?, ?, 'T', '{}', '{"schemaVersion":1}', 0)`,
      );
      try {
        expect(() => insert.run('order-1', 0, randomUUID())).toThrow(/UNIQUE constraint failed: events.stream_name, events.revision/);
        expect(() => insert.run('order-2', 0, event.id)).toThrow(/UNIQUE constraint failed: events.event_id/);
      } finally {
        intruder.close();
      }
    });

    it('refuses an unknown synchronous level instead of silently using another', () => {
      expect(() => openSqliteEventStore({ path: ':memory:', synchronous: 'OFF' as never })).toThrow(InvalidEventStoreInputError);
    });
  });

  describe('reads', () => {
    it(`pages correctly past MAX_PAGE_SIZE_STATEMENTS (${MAX_PAGE_SIZE_STATEMENTS}) distinct page sizes, the rest sharing one statement with the limit bound`, async () => {
      const events = Array.from({ length: 40 }, (_, index) => newEvent('Counted', { index }));
      await store.append('counter-1', events, { expectedRevision: 'no_stream' });
      for (let maxCount = 1; maxCount <= MAX_PAGE_SIZE_STATEMENTS + 8; maxCount++) {
        const stream = await store.readStream('counter-1', { fromRevision: 3n, maxCount });
        expect(stream.map((event) => event.revision)).toEqual(Array.from({ length: maxCount }, (_, index) => BigInt(3 + index)));
        const all = await store.readAll({ maxCount });
        expect(all).toHaveLength(maxCount);
      }
      expect(await store.readStream('counter-1', { fromRevision: 38n })).toHaveLength(2);
    });

    it('hands out frozen events, the same objects to every subscription of one commit', async () => {
      const { position: after } = await store.append('counter-2', [newEvent('Counted', { nested: { index: 0 } })], { expectedRevision: 'no_stream' });
      const seen: RecordedEvent[][] = [[], []];
      // Following from the head, each takes the next commit as the store wrote it (not read back).
      const subscriptions = seen.map((list) => store.subscribeToAll((event) => void list.push(event), { after }));
      await store.append('counter-2', [newEvent('Counted', { nested: { index: 1 } })], { expectedRevision: 0n });
      while (seen[0]!.length === 0 || seen[1]!.length === 0) await new Promise((resolve) => setImmediate(resolve));
      await Promise.all(subscriptions.map((subscription) => subscription.stop()));
      const [first, second] = [seen[0]![0]!, seen[1]![0]!];
      expect(second).toBe(first);
      expect(Object.isFrozen(first) && Object.isFrozen(first.data) && Object.isFrozen((first.data as { nested: object }).nested)).toBe(true);
      expect(() => {
        (first.data as { nested: { index: number } }).nested.index = 2;
      }).toThrow(TypeError);
      const [read] = await store.readStream('counter-2', { fromRevision: 1n });
      expect(Object.isFrozen(read) && Object.isFrozen(read!.metadata)).toBe(true);
    });
  });

  describe('group commit', () => {
    it('writes the appends issued in one tick in a single transaction, failing only the one whose expected revision is stale', async () => {
      await store.append('order-0', [newEvent()], { expectedRevision: 'no_stream' });
      const before = store.groupCommitStats;

      const outcomes = await Promise.allSettled([
        ...Array.from({ length: 9 }, (_, index) =>
          store.append(`order-${index + 1}`, [newEvent(), newEvent()], { expectedRevision: 'no_stream' }),
        ),
        store.append('order-0', [newEvent()], { expectedRevision: 5n }),
      ]);

      expect(outcomes.slice(0, 9).every((outcome) => outcome.status === 'fulfilled')).toBe(true);
      expect(outcomes[9]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
      expect(store.groupCommitStats.transactions - before.transactions).toBe(1);
      expect(store.groupCommitStats.appends - before.appends).toBe(9);
      expect(await store.readAll()).toHaveLength(19);
    });

    /**
     * Two callbacks of one event-loop turn: the first appends, the second is unrelated work queued
     * behind it. Resolves with whether the append was committed by the time the second one ran (its
     * acknowledgement may still wait for the WAL's fsync: see "durable acknowledgements").
     */
    const committedBeforeNextCallback = (target: SqliteEventStore, streamName: string): Promise<boolean> =>
      new Promise((resolve) => {
        const before = target.groupCommitStats.transactions;
        let appended: Promise<unknown> = Promise.resolve();
        setImmediate(() => void (appended = target.append(streamName, [newEvent()], { expectedRevision: 'no_stream' })));
        setImmediate(() => {
          const committed = target.groupCommitStats.transactions > before;
          void appended.then(() => resolve(committed));
        });
      });

    it('commits an append as soon as the callback that made it has run, not after the rest of the turn', async () => {
      expect(await committedBeforeNextCallback(store, 'quick-1')).toBe(true);
    });

    it('waits for the end of the turn with eagerCommitsPerTurn 0, and refuses a value outside 0..MAX_EAGER_COMMITS_PER_TURN', async () => {
      const late = openSqliteEventStore({ path: ':memory:', eagerCommitsPerTurn: 0 });
      const committed = await committedBeforeNextCallback(late, 'late-1');
      await late.close();
      expect(committed).toBe(false);
      for (const eagerCommitsPerTurn of [-1, 1.5, MAX_EAGER_COMMITS_PER_TURN + 1]) {
        expect(() => openSqliteEventStore({ path: ':memory:', eagerCommitsPerTurn })).toThrow(InvalidEventStoreInputError);
      }
    });

    it(`starts at most MAX_EAGER_COMMITS_PER_TURN (${MAX_EAGER_COMMITS_PER_TURN}) commits early in one turn; the rest of the turn's appends share one commit at its end`, async () => {
      const before = store.groupCommitStats;
      const extra = 3;
      const appends: Array<Promise<unknown>> = [];
      let transactionsWithinTurn = 0;
      await new Promise<void>((resolve) => {
        for (let index = 0; index < MAX_EAGER_COMMITS_PER_TURN + extra; index++) {
          setImmediate(() => void appends.push(store.append(`busy-${index}`, [newEvent()], { expectedRevision: 'no_stream' })));
        }
        setImmediate(() => {
          transactionsWithinTurn = store.groupCommitStats.transactions - before.transactions;
          resolve();
        });
      });
      await Promise.all(appends);
      expect(transactionsWithinTurn).toBe(MAX_EAGER_COMMITS_PER_TURN);
      expect(store.groupCommitStats.transactions - before.transactions).toBe(MAX_EAGER_COMMITS_PER_TURN + 1);
      expect(store.groupCommitStats.appends - before.appends).toBe(MAX_EAGER_COMMITS_PER_TURN + extra);
    });

    it('checks each append of a group against the appends before it, so two creators of one stream in one tick cannot both win', async () => {
      const outcomes = await Promise.allSettled([
        store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' }),
        store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' }),
        store.append('order-1', [newEvent()], { expectedRevision: 0n }),
      ]);

      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ streamName: 'order-1', expected: 'no_stream', actual: 0n });
      expect(await store.streamRevision('order-1')).toBe(1n);
    });

    it('fails a one-event append whose id is taken by another stream alone, writing nothing of it, while its group commits', async () => {
      const taken = newEvent();
      await store.append('order-0', [taken], { expectedRevision: 'no_stream' });

      const outcomes = await Promise.allSettled([
        store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' }),
        store.append('order-2', [{ ...taken }], { expectedRevision: 'no_stream' }),
        store.append('order-2', [newEvent()], { expectedRevision: 'no_stream' }),
      ]);

      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(InvalidEventStoreInputError);
      expect(await store.streamRevision('order-2')).toBe(0n);
      expect((await store.readAll()).map((event) => event.streamName)).toEqual(['order-0', 'order-1', 'order-2']);
    });

    it('resolves an append only after its transaction committed: another connection already sees the events', async () => {
      const observer = new Database(path, { readonly: true });
      try {
        const count = observer.prepare('SELECT COUNT(*) FROM events').pluck();
        const pending = store.append('order-1', [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
        expect(count.get()).toBe(0);

        await pending;

        expect(count.get()).toBe(3);
      } finally {
        observer.close();
      }
    });

    it('commits appends already queued when closed, and refuses appends after', async () => {
      const queued = store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' });
      await store.close();
      await store.close();

      await expect(queued).resolves.toMatchObject({ nextExpectedRevision: 0n });
      await expect(store.append('order-2', [newEvent()], { expectedRevision: 'no_stream' })).rejects.toThrow(/closed/);
      store = openSqliteEventStore({ path });
      expect(await store.streamRevision('order-1')).toBe(0n);
    });
  });

  describe('idempotency conflicts are refused, naming what differs, and write nothing', () => {
    const batch = [newEvent(), newEvent()];
    const [a, b] = batch;

    beforeEach(async () => {
      await store.append('order-1', batch, { expectedRevision: 'no_stream' });
    });

    it.each([
      ['the stored batch plus a new id', () => [a!, b!, newEvent()], 'no_stream', 'events'],
      ['only part of the stored batch', () => [a!], 'no_stream', 'events'],
      ['a stored id that was not first in its batch', () => [b!], 'any', 'events[0].id'],
      ['a new id followed by a stored one', () => [newEvent(), a!], 'any', 'events[1].id'],
      ['the same ids with a different expected revision', () => [a!, b!], 'any', 'options.expectedRevision'],
    ] as const)('refuses %s', async (_description, events, expectedRevision, field) => {
      const head = await store.headPosition();

      const error = await failure(store.append('order-1', events(), { expectedRevision }));

      expect(error).toBeInstanceOf(InvalidEventStoreInputError);
      expect((error as InvalidEventStoreInputError).field).toBe(field);
      expect(await store.headPosition()).toBe(head);
    });

    it('refuses a stored id re-used in another stream, because an event id is unique across the store', async () => {
      const error = await failure(store.append('order-2', [a!], { expectedRevision: 'no_stream' }));

      expect(error).toMatchObject({ field: 'events[0].id', message: expect.stringContaining('order-1') });
      expect(await store.streamRevision('order-2')).toBeUndefined();
    });

    it('answers two identical appends in one tick with one result and one copy, as a retry racing its original would be', async () => {
      const batchOf = [newEvent(), newEvent()];

      const [first, second] = await Promise.all([
        store.append('order-3', batchOf, { expectedRevision: 'no_stream' }),
        store.append('order-3', batchOf, { expectedRevision: 'no_stream' }),
      ]);

      expect(second).toEqual(first);
      expect(await store.readStream('order-3')).toHaveLength(2);
    });
  });

  it('keeps revisions above 2^53 exact, because they never pass through a double', async () => {
    const huge = 2n ** 53n + 1n;
    const writer = new Database(path);
    writer
      .prepare(
        `INSERT INTO events (stream_name, revision, event_id, type, data, metadata, recorded_at_ms, batch_expected_revision)
         VALUES ('order-big', ?, ?, 'T', '{}', '{"schemaVersion":1}', 0, 'any')`,
      )
      .run(huge, randomUUID());
    writer.close();

    expect(await store.streamRevision('order-big')).toBe(huge);
    const result = await store.append('order-big', [newEvent()], { expectedRevision: huge });

    expect(result.nextExpectedRevision).toBe(huge + 1n);
    expect((await store.readStream('order-big', { fromRevision: huge + 1n }))[0]!.revision).toBe(huge + 1n);
  });

  describe('followed from another thread (the projection worker)', () => {
    it('signals the last position of each commit to onCommitted listeners, once per group commit', async () => {
      const signalled: bigint[] = [];
      const unregister = store.onCommitted((position) => signalled.push(position));
      await Promise.all([
        store.append('order-1', [newEvent(), newEvent()], { expectedRevision: 'no_stream' }),
        store.append('order-2', [newEvent()], { expectedRevision: 'no_stream' }),
      ]);
      await store.append('order-1', [newEvent()], { expectedRevision: 1n });
      unregister();
      await store.append('order-3', [newEvent()], { expectedRevision: 'no_stream' });
      expect(signalled).toEqual([3n, 4n]);
    });

    it('reads another connection\'s commit as soon as pollNow is called, without waiting for the poll', async () => {
      // The poll's timer is faked and never advanced: only pollNow can wake the subscription.
      jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
      const other = openSqliteEventStore({ path });
      let arrived!: (event: RecordedEvent) => void;
      const arrival = new Promise<RecordedEvent>((resolve) => (arrived = resolve));
      const subscription = store.subscribeToAll((event) => arrived(event));
      try {
        await new Promise((resolve) => setImmediate(resolve));
        await other.append('order-9', [newEvent()], { expectedRevision: 'no_stream' });
        store.pollNow();
        expect((await arrival).streamName).toBe('order-9');
      } finally {
        jest.useRealTimers();
        await subscription.stop();
        await other.close();
      }
    });

    it('checkpoints the write-ahead log from another connection without waiting for any lock', async () => {
      await store.append('order-1', [newEvent(), newEvent(), newEvent()], { expectedRevision: 'no_stream' });
      const other = openSqliteEventStore({ path });
      try {
        const checkpoint = other.checkpointWal();
        expect(checkpoint.busy).toBe(false);
        expect(checkpoint.walPages).toBeGreaterThan(0);
        expect(checkpoint.checkpointedPages).toBe(checkpoint.walPages);
        expect((await other.readAll()).length).toBe(3);
      } finally {
        await other.close();
      }
      const inMemory = openSqliteEventStore({ path: ':memory:' });
      expect(inMemory.checkpointWal().walPages).toBe(-1);
      await inMemory.close();
    });
  });

  describe('subscriptions', () => {
    it('sees events committed by another connection to the same file, through its poll', async () => {
      const other = openSqliteEventStore({ path });
      const seen: RecordedEvent[] = [];
      let arrived!: () => void;
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      const subscription = store.subscribeToAll((event) => {
        seen.push(event);
        arrived();
      });
      try {
        await other.append('order-1', [newEvent()], { expectedRevision: 'no_stream' });
        await arrival;
        expect(seen.map((event) => event.streamName)).toEqual(['order-1']);
      } finally {
        await subscription.stop();
        await other.close();
      }
    });

    it('hands over its own commits as it wrote them, without reading them back from the file, equal to what a read returns', async () => {
      await store.append('order-0', [newEvent()], { expectedRevision: 'no_stream' });
      const seen: RecordedEvent[] = [];
      let waiting: { count: number; resolve: () => void } | undefined;
      const subscription = store.subscribeToAll((event) => {
        seen.push(event);
        if (waiting !== undefined && seen.length >= waiting.count) waiting.resolve();
      });
      const seenCount = (count: number) => new Promise<void>((resolve) => (seen.length >= count ? resolve() : (waiting = { count, resolve })));
      try {
        await seenCount(1);
        // From here on, reading the log would go through the prepared page statement: count its uses.
        const selectAll = (store as unknown as { selectAll: { all: (...args: unknown[]) => unknown } }).selectAll;
        const readAllRows = selectAll.all.bind(selectAll);
        let pageReads = 0;
        selectAll.all = (...args: unknown[]) => {
          pageReads++;
          return readAllRows(...args);
        };
        await Promise.all([
          store.append('order-1', [newEvent(), newEvent()], { expectedRevision: 'no_stream' }),
          store.append('order-2', [newEvent()], { expectedRevision: 'no_stream' }),
        ]);
        await store.append('order-1', [newEvent()], { expectedRevision: 1n });
        await seenCount(5);
        expect(pageReads).toBe(0);
        selectAll.all = readAllRows;
        expect(seen).toEqual(await store.readAll());
      } finally {
        await subscription.stop();
      }
    });

    it('reads the log where another connection committed between its own commits, delivering everything once and in order', async () => {
      const other = openSqliteEventStore({ path });
      const seen: RecordedEvent[] = [];
      let waiting: { count: number; resolve: () => void } | undefined;
      const subscription = store.subscribeToAll((event) => {
        seen.push(event);
        if (waiting !== undefined && seen.length >= waiting.count) waiting.resolve();
      });
      const seenCount = (count: number) => new Promise<void>((resolve) => (seen.length >= count ? resolve() : (waiting = { count, resolve })));
      try {
        await store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' });
        await seenCount(1);
        await other.append('order-2', [newEvent()], { expectedRevision: 'no_stream' });
        await store.append('order-1', [newEvent()], { expectedRevision: 0n });
        await seenCount(3);
        expect(seen.map((event) => [event.streamName, event.position])).toEqual([
          ['order-1', 1n],
          ['order-2', 2n],
          ['order-1', 3n],
        ]);
      } finally {
        await subscription.stop();
        await other.close();
      }
    });

    it('halts at an event whose handler throws, keeping the checkpoint before it, and stop() reports the error, so no event is skipped', async () => {
      const first = await store.append('order-1', [newEvent()], { expectedRevision: 'no_stream' });
      await store.append('order-1', [newEvent('Poison')], { expectedRevision: 0n });
      await store.append('order-1', [newEvent()], { expectedRevision: 1n });
      const handled: string[] = [];
      let failed!: () => void;
      const failedOnce = new Promise<void>((resolve) => (failed = resolve));

      const subscription = store.subscribeToAll((event) => {
        if (event.type === 'Poison') {
          failed();
          throw new Error('cannot project this');
        }
        handled.push(event.type);
      });
      await failedOnce;

      await expect(subscription.stop()).rejects.toThrow('cannot project this');
      expect(handled).toEqual(['SomethingNoted']);
      expect(subscription.lastPosition).toBe(first.position);
    });
  });
});
