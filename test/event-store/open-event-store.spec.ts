import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventStoreDbEventStore } from '../../src/event-store/eventstoredb/eventstoredb-event-store';
import { InvalidStoreUrlError, openEventStore, parseStoreUrl } from '../../src/event-store/open-event-store';
import { SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';

describe('LEDGER_STORE parsing', () => {
  it.each([
    ['sqlite:./var/ledger.sqlite', './var/ledger.sqlite'],
    ['sqlite:/srv/ledger.sqlite', '/srv/ledger.sqlite'],
    ['sqlite:///srv/ledger.sqlite', '/srv/ledger.sqlite'],
    ['sqlite::memory:', ':memory:'],
    ['  sqlite:ledger.sqlite\n', 'ledger.sqlite'],
  ])('reads %p as the embedded store at %p', (value, path) => {
    expect(parseStoreUrl(value)).toEqual({ kind: 'sqlite', path });
  });

  it.each([
    'esdb://localhost:2113?tls=false',
    'esdb+discover://admin:changeit@cluster.internal:2113',
    'kurrentdb://localhost:2113?tls=false',
    'kurrentdb+discover://node1:2113,node2:2113',
    'kurrent://localhost:2113',
  ])('reads %p as an EventStoreDB/KurrentDB connection string, passed on unchanged', (value) => {
    expect(parseStoreUrl(value)).toEqual({ kind: 'eventstoredb', connectionString: value });
  });

  it.each([
    'postgres://ledger@db.internal:5432/ledger',
    'postgresql://ledger:s3cret@10.0.0.5/ledger?sslmode=require',
    'postgres://localhost/ledger',
  ])('reads %p as a PostgreSQL connection URL, passed on unchanged', (value) => {
    expect(parseStoreUrl(value)).toEqual({ kind: 'postgres', connectionString: value });
  });

  it.each([
    ['an unknown scheme', 'mysql://localhost/ledger', /LEDGER_STORE.*"mysql:"/],
    ['a PostgreSQL URL with no host', 'postgres:///ledger', /LEDGER_STORE.*postgres:\/\/ URL names no host/],
    ['a bare path without a scheme', './var/ledger.sqlite', /LEDGER_STORE.*no scheme/],
    ['an empty value', '   ', /LEDGER_STORE is empty/],
    ['sqlite: without a path', 'sqlite:', /LEDGER_STORE.*file path/],
    ['a connection string with no host', 'esdb://', /LEDGER_STORE.*no host/],
    ['a mistyped scheme', 'sqlite3:./x.db', /LEDGER_STORE.*"sqlite3:"/],
  ])('refuses %s with an error naming LEDGER_STORE and the accepted forms', (_what, value, message) => {
    expect(() => parseStoreUrl(value)).toThrow(InvalidStoreUrlError);
    expect(() => parseStoreUrl(value)).toThrow(message);
  });

  it('never repeats a refused connection string, which may carry a password', () => {
    expect(() => parseStoreUrl('mongodb://admin:s3cret@db:27017')).toThrow(expect.objectContaining({ message: expect.not.stringContaining('s3cret') }));
  });
});

describe('opening the store LEDGER_STORE names', () => {
  it('opens the embedded store, creating the directory of its file', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'ledger-open-store-'));
    try {
      const store = await openEventStore(`sqlite:${join(directory, 'var', 'ledger.sqlite')}`, { synchronous: 'FULL' });
      expect(store).toBeInstanceOf(SqliteEventStore);
      await store.close();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('commits with synchronous=FULL unless NORMAL is asked for, so an acknowledged append is on disk (issue 24)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'ledger-open-store-'));
    try {
      const durable = await openEventStore(`sqlite:${join(directory, 'full.sqlite')}`);
      const fast = await openEventStore(`sqlite:${join(directory, 'normal.sqlite')}`, { synchronous: 'NORMAL' });
      expect((durable as SqliteEventStore).synchronous).toBe('FULL');
      expect((fast as SqliteEventStore).synchronous).toBe('NORMAL');
      await Promise.all([durable.close(), fast.close()]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('opens the EventStoreDB adapter for a connection string, without connecting until first use', async () => {
    const store = await openEventStore('esdb://localhost:2113?tls=false');
    expect(store).toBeInstanceOf(EventStoreDbEventStore);
    await store.close();
  });

  it('refuses an unknown URL before opening anything', async () => {
    await expect(openEventStore('redis://localhost')).rejects.toBeInstanceOf(InvalidStoreUrlError);
  });
});
