import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteEventStore, openSqliteReplayReader, type SqliteEventStore } from '../../../src/event-store/sqlite/sqlite-event-store';
import { newEvent } from '../fixtures/in-memory-event-log.fake';
import { appendSample } from '../fixtures/log-builder';

describe('openSqliteReplayReader: the embedded log read by a rebuild worker', () => {
  let dir: string;
  let logPath: string;
  let eventStore: SqliteEventStore;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'replay-reader-'));
    logPath = join(dir, 'ledger.sqlite');
    eventStore = openSqliteEventStore({ path: logPath });
    await appendSample(eventStore, 0, 30, { eventsPerAppend: 2, carts: 5, organizations: 2 });
  });

  afterEach(async () => {
    await eventStore.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('pages the whole log, counting every event, and returns the wanted ones exactly as readAll does', async () => {
    const reader = openSqliteReplayReader(logPath, ['ItemRemoved', 'CartViewed']);
    try {
      const all = await eventStore.readAll();
      const first = reader.readPage(undefined, 25);
      const second = reader.readPage(first.lastPosition, 25);
      const third = reader.readPage(second.lastPosition, 25);
      expect([first.count, second.count, third.count]).toEqual([25, 25, 10]);
      expect([first.lastPosition, second.lastPosition, third.lastPosition]).toEqual([25n, 50n, 60n]);
      expect([...first.events, ...second.events, ...third.events]).toEqual(
        all.filter((event) => event.type === 'ItemRemoved' || event.type === 'CartViewed'),
      );
      expect(reader.readPage(third.lastPosition, 25)).toEqual({ events: [], count: 0, lastPosition: undefined });
    } finally {
      reader.close();
    }
  });

  it('sees what is appended after it opened', async () => {
    const reader = openSqliteReplayReader(logPath, ['Late']);
    try {
      await eventStore.append('late-1', [newEvent('Late', { n: 1 })], { expectedRevision: 'any' });
      const page = reader.readPage(60n, 10);
      expect(page.events.map((event) => [event.type, event.data])).toEqual([['Late', { n: 1 }]]);
    } finally {
      reader.close();
    }
  });

  it('refuses a path with no log, rather than creating one', () => {
    expect(() => openSqliteReplayReader(join(dir, 'missing.sqlite'), [])).toThrow();
  });
});
