import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { ConcurrencyError, EventStoreUnavailableError, NewEvent, RecordedEvent } from '../../src/event-store/event-store.port';
import {
  openPostgresEventStore,
  PostgresAsyncCommitError,
  PostgresEventStore,
  PostgresTransactionCounterBehindError,
} from '../../src/event-store/postgres/postgres-event-store';
import { POSTGRES_SCHEMA_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from '../../src/event-store/postgres/postgres-schema.migrations';
import { PostgresTestServer } from '../support/postgres-server';
import { newEvent } from './event-store.contract';

// Real server round trips, and one test stops and starts the server.
jest.setTimeout(120_000);

/** How often a test looks again for writers waiting on a lock, in ms. */
const LOCK_POLL_MS = 10;

let server: PostgresTestServer | undefined;

beforeAll(async () => {
  server = await PostgresTestServer.start();
});

afterAll(async () => {
  await server?.stop();
});

async function freshDatabase(): Promise<string> {
  return server!.createDatabase(`g${randomUUID().replace(/-/g, '')}`);
}

async function withClient<T>(url: string, use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Resolves once `count` statements on the server wait for a lock (a writer waiting on another's uncommitted row). */
async function untilWaiting(client: Client, count: number): Promise<void> {
  while (Number((await client.query<{ waiting: string }>('SELECT count(*) AS waiting FROM pg_locks WHERE NOT granted')).rows[0]!.waiting) < count) {
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

/** Appends `events` to `stream` through `ledger_append` in the client's transaction, as the store does. */
async function appendThrough(client: Client, stream: string, expected: string, events: readonly NewEvent[]): Promise<void> {
  await client.query(`SELECT ledger_append($1, $2, $3::uuid[], $4::text[], $5::text[], $6::text[])`, [
    stream,
    expected,
    events.map((event) => event.id),
    events.map((event) => event.type),
    events.map((event) => JSON.stringify(event.data)),
    events.map((event) => JSON.stringify(event.metadata)),
  ]);
}

interface TogetherRow {
  outcome: string;
  part: number;
  last_revision: string | null;
  last_position: string | null;
}

/** One call of `ledger_append_together` with the parts given, its answer's rows. */
async function appendTogetherThrough(client: Client, parts: ReadonlyArray<{ stream: string; expected: string; events: readonly NewEvent[] }>): Promise<TogetherRow[]> {
  const events = parts.flatMap((part) => part.events);
  const { rows } = await client.query<TogetherRow>(
    `SELECT outcome, part, last_revision::text, last_position::text
       FROM ledger_append_together($1::text[], $2::text[], $3::integer[], $4::uuid[], $5::text[], $6::text[], $7::text[])`,
    [
      parts.map((part) => part.stream),
      parts.map((part) => part.expected),
      parts.map((part) => part.events.length),
      events.map((event) => event.id),
      events.map((event) => event.type),
      events.map((event) => JSON.stringify(event.data)),
      events.map((event) => JSON.stringify(event.metadata)),
    ],
  );
  return rows;
}

/** Collects what a subscription hands over and resolves once `count` events arrived. */
function collector(): { events: RecordedEvent[]; until(count: number): Promise<void>; handle(event: RecordedEvent): void } {
  const events: RecordedEvent[] = [];
  let waiters: Array<{ count: number; resolve: () => void }> = [];
  return {
    events,
    handle(event) {
      events.push(event);
      waiters = waiters.filter((waiter) => (events.length >= waiter.count ? (waiter.resolve(), false) : true));
    },
    until(count) {
      return events.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve }));
    },
  };
}

describe('PostgreSQL store: the global order never skips a transaction that commits late', () => {
  let url: string;
  let store: PostgresEventStore;

  beforeEach(async () => {
    url = await freshDatabase();
    store = await openPostgresEventStore({ connectionString: url });
  });

  afterEach(async () => {
    await store.close();
  });

  it('holds back a later append while an earlier-numbered one is still uncommitted, then hands both over in position order, to readAll and to a live subscription', async () => {
    const seen = collector();
    const subscription = store.subscribeToAll((event) => seen.handle(event));
    const early = newEvent('CommittedLate');
    const late = newEvent('CommittedFirst');

    await withClient(url, async (held) => {
      // The lower number: its transaction writes first and stays open.
      await held.query('BEGIN');
      const { rows } = await held.query<{ last_position: string }>(
        `SELECT last_position::text FROM ledger_append($1, 'no_stream', $2::uuid[], $3::text[], $4::text[], $5::text[])`,
        ['order-early', [early.id], [early.type], [JSON.stringify(early.data)], [JSON.stringify(early.metadata)]],
      );
      const earlyPosition = BigInt(rows[0]!.last_position);

      // The higher number commits first, through the store.
      const committed = await store.append('order-late', [late], { expectedRevision: 'no_stream' });
      expect(committed.position > earlyPosition).toBe(true);
      expect(await store.readStream('order-late')).toHaveLength(1);
      // A reader of $all now must not see it: handing it over would skip the lower one for good.
      expect(await store.readAll()).toEqual([]);
      expect(await store.headPosition()).toBeUndefined();

      await held.query('COMMIT');
    });
    // The held transaction's writer announces its end as the store does after each append.
    await withClient(url, (client) => client.query('NOTIFY ledger_events'));

    const all = await store.readAll();
    expect(all.map((event) => event.id)).toEqual([early.id, late.id]);
    await seen.until(2);
    await subscription.stop();
    expect(seen.events.map((event) => event.id)).toEqual([early.id, late.id]);
    expect(await store.headPosition()).toBe(all[1]!.position);
  });
});

describe('PostgreSQL store: an append across streams is one transaction, all or nothing', () => {
  it('lets one of two appendTogether calls racing for the same revision of a shared stream commit, and leaves nothing of the loser, not even its own new stream written before the race', async () => {
    const url = await freshDatabase();
    const stores = await Promise.all([openPostgresEventStore({ connectionString: url }), openPostgresEventStore({ connectionString: url })]);
    try {
      await stores[0].append('shared', [newEvent()], { expectedRevision: 'no_stream' });
      const race = await withClient(url, async (blocker) => {
        // Revision 1 of the shared stream held uncommitted, so both writers reach it and wait there, their own streams written.
        const held = newEvent();
        await blocker.query('BEGIN');
        await blocker.query(`SELECT ledger_append('shared', '0', $1::uuid[], $2::text[], $3::text[], $4::text[])`, [
          [held.id],
          [held.type],
          [JSON.stringify(held.data)],
          [JSON.stringify(held.metadata)],
        ]);
        const racing = Promise.allSettled(
          stores.map((store, index) =>
            store.appendTogether!([
              { streamName: `own-${index}`, events: [newEvent()], expectedRevision: 'no_stream' },
              { streamName: 'shared', events: [newEvent()], expectedRevision: 0n },
            ]),
          ),
        );
        while (Number((await blocker.query<{ waiting: string }>('SELECT count(*) AS waiting FROM pg_locks WHERE NOT granted')).rows[0]!.waiting) < 2) {
          await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
        }
        await blocker.query('ROLLBACK');
        return racing;
      });

      const winner = race.findIndex((outcome) => outcome.status === 'fulfilled');
      const loser = race.findIndex((outcome) => outcome.status === 'rejected');
      expect([winner, loser].sort()).toEqual([0, 1]);
      const refusal = (race[loser] as PromiseRejectedResult).reason as ConcurrencyError;
      expect(refusal).toBeInstanceOf(ConcurrencyError);
      expect({ streamName: refusal.streamName, actual: refusal.actual }).toEqual({ streamName: 'shared', actual: 1n });
      expect(await stores[0].streamRevision(`own-${loser}`)).toBeUndefined();
      expect((await stores[0].readAll()).map((event) => [event.streamName, event.revision])).toEqual([
        ['shared', 0n],
        [`own-${winner}`, 0n],
        ['shared', 1n],
      ]);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});

describe('PostgreSQL store: an append across streams in one statement', () => {
  let url: string;

  beforeEach(async () => {
    url = await freshDatabase();
  });

  it('sends a multi-part append as one call of ledger_append_together on the pool: no BEGIN, no COMMIT, no call per part', async () => {
    const store = await openPostgresEventStore({ connectionString: url });
    const sent = jest.spyOn(Client.prototype, 'query');
    try {
      await store.appendTogether!([
        { streamName: 'one-a', events: [newEvent(), newEvent()], expectedRevision: 'no_stream' },
        { streamName: 'one-b', events: [newEvent()], expectedRevision: 'no_stream' },
        { streamName: 'one-a', events: [newEvent()], expectedRevision: 1n },
      ]);
      const statements = sent.mock.calls
        .map(([query]) => (typeof query === 'string' ? query : (query as { text: string }).text))
        // The store's announcement to other instances, after the append ended.
        .filter((text) => !text.startsWith('NOTIFY'));
      expect(statements).toHaveLength(1);
      expect(statements[0]).toContain('ledger_append_together(');
    } finally {
      sent.mockRestore();
      await store.close();
    }
  });

  it('answers a refused later part with one row naming the refusal and the part, and keeps nothing of the earlier part on another stream: a conflict, a stored id, a racing writer', async () => {
    const store = await openPostgresEventStore({ connectionString: url });
    const stored = newEvent();
    await store.append('taken', [stored], { expectedRevision: 'no_stream' });
    await store.close();
    const earlier = { stream: 'earlier', expected: 'no_stream', events: [newEvent(), newEvent()] };

    await withClient(url, async (client) => {
      expect(await appendTogetherThrough(client, [earlier, { stream: 'taken', expected: 'no_stream', events: [newEvent()] }])).toEqual([
        { outcome: 'conflict', part: 1, last_revision: '0', last_position: null },
      ]);
      expect(await appendTogetherThrough(client, [earlier, { stream: 'elsewhere', expected: 'any', events: [newEvent(), { ...stored }] }])).toEqual([
        { outcome: 'duplicate_id', part: 1, last_revision: null, last_position: null },
      ]);
      const raced = await withClient(url, async (blocker) => {
        // Revision 1 of `taken` held uncommitted: the call writes `earlier`, then waits there, and loses when it commits.
        await blocker.query('BEGIN');
        await appendThrough(blocker, 'taken', '0', [newEvent()]);
        const racing = appendTogetherThrough(client, [earlier, { stream: 'taken', expected: '0', events: [newEvent()] }]);
        await untilWaiting(blocker, 1);
        await blocker.query('COMMIT');
        return racing;
      });
      expect(raced).toEqual([{ outcome: 'raced', part: 1, last_revision: null, last_position: null }]);

      const { rows } = await client.query<{ stream_name: string; revision: string }>('SELECT stream_name, revision::text FROM ledger_events ORDER BY position');
      expect(rows).toEqual([
        { stream_name: 'taken', revision: '0' },
        { stream_name: 'taken', revision: '1' },
      ]);
    });
  });

  it('tries the whole again when an `any` part after another stream\'s part loses a race, and the first try left nothing: both racing writers commit, each stream once', async () => {
    const stores = await Promise.all([openPostgresEventStore({ connectionString: url }), openPostgresEventStore({ connectionString: url })]);
    try {
      await stores[0].append('shared', [newEvent()], { expectedRevision: 'no_stream' });
      const race = await withClient(url, async (blocker) => {
        // Revision 1 of the shared stream held uncommitted, then committed: both writers, their own streams written, lose it.
        await blocker.query('BEGIN');
        await appendThrough(blocker, 'shared', '0', [newEvent()]);
        const racing = Promise.all(
          stores.map((store, index) =>
            store.appendTogether!([
              { streamName: `own-${index}`, events: [newEvent()], expectedRevision: 'no_stream' },
              { streamName: 'shared', events: [newEvent()], expectedRevision: 'any' },
            ]),
          ),
        );
        await untilWaiting(blocker, 2);
        await blocker.query('COMMIT');
        return racing;
      });

      // A second try that met its own first try's stream would be refused: `no_stream` on an existing stream.
      expect(race.map((results) => results[0]!.nextExpectedRevision)).toEqual([0n, 0n]);
      expect(race.map((results) => results[1]!.nextExpectedRevision).sort()).toEqual([2n, 3n]);
      const all = await stores[0].readAll();
      expect(all.filter((event) => event.streamName.startsWith('own-')).map((event) => event.revision)).toEqual([0n, 0n]);
      expect(all.filter((event) => event.streamName === 'shared').map((event) => event.revision)).toEqual([0n, 1n, 2n, 3n]);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('sends again an append across streams the server rolled back to break a deadlock, so two writers taking two streams in opposite orders both commit', async () => {
    const stores = await Promise.all([openPostgresEventStore({ connectionString: url }), openPostgresEventStore({ connectionString: url })]);
    try {
      await stores[0].appendTogether!([
        { streamName: 'x', events: [newEvent()], expectedRevision: 'no_stream' },
        { streamName: 'y', events: [newEvent()], expectedRevision: 'no_stream' },
      ]);
      const both = await withClient(url, async (blocker) => {
        // The first writer writes x, then waits on `gate`; the second writes y, then waits on the first's x.
        // Let through, the first waits on the second's y: a deadlock, which the server breaks by rolling one back.
        await blocker.query('BEGIN');
        await appendThrough(blocker, 'gate', 'no_stream', [newEvent()]);
        const first = stores[0].appendTogether!([
          { streamName: 'x', events: [newEvent()], expectedRevision: 'any' },
          { streamName: 'gate', events: [newEvent()], expectedRevision: 'any' },
          { streamName: 'y', events: [newEvent()], expectedRevision: 'any' },
        ]);
        await untilWaiting(blocker, 1);
        const second = stores[1].appendTogether!([
          { streamName: 'y', events: [newEvent()], expectedRevision: 'any' },
          { streamName: 'x', events: [newEvent()], expectedRevision: 'any' },
        ]);
        await untilWaiting(blocker, 2);
        await blocker.query('ROLLBACK');
        return Promise.all([first, second]);
      });

      expect(both.map((results) => results.length)).toEqual([3, 2]);
      const all = await stores[0].readAll();
      expect(all.filter((event) => event.streamName === 'x').map((event) => event.revision)).toEqual([0n, 1n, 2n]);
      expect(all.filter((event) => event.streamName === 'y').map((event) => event.revision)).toEqual([0n, 1n, 2n]);
      expect(all.filter((event) => event.streamName === 'gate').map((event) => event.revision)).toEqual([0n]);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});

describe('PostgreSQL store: an acknowledgement only after a durable commit', () => {
  it('refuses to open on a database whose synchronous_commit is off, in one line naming the setting and the override, and opens when the operator allows it', async () => {
    const url = await freshDatabase();
    const database = new URL(url).pathname.slice(1);
    await withClient(url, (client) => client.query(`ALTER DATABASE "${database}" SET synchronous_commit = off`));

    const refusal = await openPostgresEventStore({ connectionString: url }).then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(refusal).toBeInstanceOf(PostgresAsyncCommitError);
    const message = (refusal as Error).message;
    expect(message).toMatch(/synchronous_commit/);
    expect(message).toMatch(/LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT=1/);
    expect(message).not.toMatch(/\n/);
    const allowed = await openPostgresEventStore({ connectionString: url, allowAsyncCommit: true });
    await allowed.append('allowed', [newEvent()], { expectedRevision: 'no_stream' });
    await allowed.close();
  });
});

describe('PostgreSQL store: positions made of transaction ids', () => {
  it('refuses a log whose positions are ahead of the server\'s transaction counter (a dump restored into another cluster), naming the way out', async () => {
    const url = await freshDatabase();
    const store = await openPostgresEventStore({ connectionString: url });
    await store.append('restored', [newEvent()], { expectedRevision: 'no_stream' });
    await store.close();
    // What a restore into a younger cluster looks like: the log's last position from a transaction id not reached yet.
    await withClient(url, (client) =>
      client.query("UPDATE ledger_events SET position = (pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 1000000) * 65536 WHERE stream_name = 'restored'"),
    );

    const refusal = await openPostgresEventStore({ connectionString: url }).then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(refusal).toBeInstanceOf(PostgresTransactionCounterBehindError);
    expect((refusal as Error).message).toMatch(/pg_resetwal -x/);
  });
});

describe('PostgreSQL store: schema created and migrated by the service on start', () => {
  it('migrates a fresh database once when several instances open it at the same moment, and each can append', async () => {
    const url = await freshDatabase();

    const stores = await Promise.all(Array.from({ length: 6 }, () => openPostgresEventStore({ connectionString: url })));
    try {
      const versions = await withClient(url, async (client) => (await client.query<{ version: number }>('SELECT version FROM ledger_schema_migrations ORDER BY version')).rows);
      expect(versions.map((row) => row.version)).toEqual(Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, index) => index + 1));
      const results = await Promise.all(stores.map((store, index) => store.append(`instance-${index}`, [newEvent()], { expectedRevision: 'no_stream' })));
      expect(results.map((result) => result.nextExpectedRevision)).toEqual(stores.map(() => 0n));
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
    // Opening again finds the schema current and changes nothing.
    const again = await openPostgresEventStore({ connectionString: url });
    expect(await again.readAll()).toHaveLength(6);
    await again.close();
  });
});

describe('PostgreSQL store: a database at schema version 1', () => {
  it('migrates to the current version on open, keeps its log, and appends across streams after it', async () => {
    const url = await freshDatabase();
    const old = newEvent();
    // The database as a build of schema version 1 left it, with an event in its log.
    await withClient(url, async (client) => {
      await client.query('CREATE TABLE ledger_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      await client.query(POSTGRES_SCHEMA_MIGRATIONS[0]!);
      await client.query('INSERT INTO ledger_schema_migrations (version) VALUES (1)');
      await appendThrough(client, 'before', 'no_stream', [old]);
    });

    const store = await openPostgresEventStore({ connectionString: url });
    try {
      const versions = await withClient(url, async (client) => (await client.query<{ version: number }>('SELECT version FROM ledger_schema_migrations ORDER BY version')).rows);
      expect(versions.map((row) => row.version)).toEqual(Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, index) => index + 1));
      const results = await store.appendTogether!([
        { streamName: 'before', events: [newEvent()], expectedRevision: 0n },
        { streamName: 'after', events: [newEvent()], expectedRevision: 'no_stream' },
      ]);
      expect(results.map((result) => result.nextExpectedRevision)).toEqual([1n, 0n]);
      const all = await store.readAll();
      expect(all.map((event) => [event.streamName, event.revision])).toEqual([
        ['before', 0n],
        ['before', 1n],
        ['after', 0n],
      ]);
      expect(all[0]!.id).toBe(old.id);
    } finally {
      await store.close();
    }
  });
});

describe('PostgreSQL store: a server restart under a live subscription', () => {
  it('answers appends while the server is down as unavailable, and the subscription carries on after it is back with nothing skipped and nothing twice', async () => {
    const url = await freshDatabase();
    const store = await openPostgresEventStore({ connectionString: url });
    const seen = collector();
    const permanent: Error[] = [];
    const subscription = store.subscribeToAll((event) => seen.handle(event), {
      onError: (error, willRetry) => {
        if (!willRetry) permanent.push(error);
      },
    });
    const appended: string[] = [];
    const appendOne = async (): Promise<void> => {
      const event = newEvent('Ticked');
      await store.append('restart', [event], { expectedRevision: 'any' });
      appended.push(event.id);
    };
    try {
      for (let index = 0; index < 3; index++) await appendOne();
      await seen.until(3);

      await server!.stopServer();
      await expect(appendOne()).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(store.readAll()).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await server!.startAgain();

      for (let index = 0; index < 3; index++) await appendOne();
      await seen.until(6);
      await subscription.stop();
    } finally {
      await store.close();
    }

    expect(seen.events.map((event) => event.id)).toEqual(appended);
    expect(permanent).toEqual([]);
  });
});
