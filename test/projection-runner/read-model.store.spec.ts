import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DocumentWriteError,
  MAX_LIST_LIMIT,
  READ_MODEL_SCHEMA_VERSION,
  openReadModelStore,
  readModelPathFor,
  type SqliteReadModelStore,
} from '../../src/projection-runner';

describe('SqliteReadModelStore — documents and checkpoints of projections', () => {
  let dir: string;
  let store: SqliteReadModelStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'read-model-store-'));
    store = openReadModelStore({ path: join(dir, 'ledger.read.sqlite') });
  });

  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores, replaces and deletes JSON documents keyed by projection, collection and id', () => {
    store.write((session) => {
      const tx = session.documents('balances');
      tx.put('accounts', 'org-1', { available: 120 });
      tx.put('accounts', 'org-2', { available: 5 });
      tx.put('accounts', 'org-1', { available: 130 });
      tx.delete('accounts', 'org-2');
      session.documents('other').put('accounts', 'org-1', { elsewhere: true });
    });

    expect(store.get('balances', 'accounts', 'org-1')).toEqual({ available: 130 });
    expect(store.get('balances', 'accounts', 'org-2')).toBeUndefined();
    expect(store.get('other', 'accounts', 'org-1')).toEqual({ elsewhere: true });
  });

  it('sees its own earlier writes within a transaction, deletions included', () => {
    store.write((session) => session.documents('p').put('c', 'a', { n: 1 }));
    const seen = store.write((session) => {
      const tx = session.documents('p');
      const before = tx.get<{ n: number }>('c', 'a');
      tx.put('c', 'a', { n: before!.n + 1 });
      const after = tx.get('c', 'a');
      tx.delete('c', 'a');
      return { before, after, deleted: tx.get('c', 'a') };
    });
    expect(seen).toEqual({ before: { n: 1 }, after: { n: 2 }, deleted: undefined });
  });

  it('lists a collection in id order, by index key, a page at a time', () => {
    store.write((session) => {
      const tx = session.documents('explanations');
      for (const id of ['inv-3', 'inv-1', 'inv-2', 'inv-4']) {
        tx.put('invocations', id, { id }, { indexKey: id === 'inv-2' ? 'org-b' : 'org-a' });
      }
    });

    expect(store.list('explanations', 'invocations').map((doc) => doc.id)).toEqual(['inv-1', 'inv-2', 'inv-3', 'inv-4']);
    expect(store.list('explanations', 'invocations', { indexKey: 'org-a' }).map((doc) => doc.id)).toEqual([
      'inv-1',
      'inv-3',
      'inv-4',
    ]);
    const firstPage = store.list('explanations', 'invocations', { indexKey: 'org-a', limit: 2 });
    const secondPage = store.list('explanations', 'invocations', { indexKey: 'org-a', afterId: firstPage[1]!.id });
    expect(secondPage).toEqual([{ id: 'inv-4', document: { id: 'inv-4' }, indexKey: 'org-a' }]);
    expect(() => store.list('explanations', 'invocations', { limit: MAX_LIST_LIMIT + 1 })).toThrow(RangeError);
  });

  it('lists every document of a collection, or of one index key, a page at a time as it is iterated (listEvery)', () => {
    store.write((session) => {
      const tx = session.documents('p');
      for (let n = 1; n <= 7; n++) tx.put('c', `id-${n}`, { n }, { indexKey: n % 2 === 0 ? 'even' : 'odd' });
    });
    // Page sizes that divide the documents exactly and that do not: every one once, in id order.
    for (const pageSize of [1, 3, 7, 8]) {
      expect([...store.listEvery<{ n: number }>('p', 'c', { pageSize })].map(({ document }) => document.n)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect([...store.listEvery('p', 'c', { pageSize, indexKey: 'odd' })].map(({ id, indexKey }) => `${id} ${indexKey}`)).toEqual(['id-1 odd', 'id-3 odd', 'id-5 odd', 'id-7 odd']);
    }
    expect([...store.listEvery('p', 'none')]).toEqual([]);
    expect(() => [...store.listEvery('p', 'c', { pageSize: MAX_LIST_LIMIT + 1 })]).toThrow(RangeError);
  });

  it('clears a document index key when it is written again without one, because the key belongs to each write', () => {
    store.write((session) => session.documents('p').put('c', 'a', {}, { indexKey: 'k' }));
    store.write((session) => session.documents('p').put('c', 'a', {}));
    expect(store.list('p', 'c', { indexKey: 'k' })).toEqual([]);
  });

  it.each([
    ['in one flush', undefined],
    // A bound of 2 flushes between the puts of one object: the object changes in between.
    ['across flushes of the bounded cache', 2],
  ])('writes one object put under several keys as it is at each flush (%s)', (_, maxCachedDocuments) => {
    store.write(
      (session) => {
        const tx = session.documents('p');
        const entry = { state: 'reserved' };
        tx.put('by-state', 'a', entry, { indexKey: 'k1' });
        tx.put('by-organization', 'a', entry, { indexKey: 'k2' });
        tx.put('all', 'a', entry);
        entry.state = 'dispatched';
        tx.put('by-operation', 'a', entry);
        tx.put('other', 'a', { state: 'other' });
        tx.put('last', 'a', entry);
      },
      maxCachedDocuments === undefined ? {} : { maxCachedDocuments },
    );
    const states = ['by-state', 'by-organization', 'all', 'by-operation', 'other', 'last'].map((collection) => store.get('p', collection, 'a'));
    expect(states).toEqual(
      maxCachedDocuments === undefined
        ? [{ state: 'dispatched' }, { state: 'dispatched' }, { state: 'dispatched' }, { state: 'dispatched' }, { state: 'other' }, { state: 'dispatched' }]
        : // The first two were flushed when the third arrived, before the change.
          [{ state: 'reserved' }, { state: 'reserved' }, { state: 'dispatched' }, { state: 'dispatched' }, { state: 'other' }, { state: 'dispatched' }],
    );
    expect(store.list('p', 'by-organization', { indexKey: 'k2' }).map((doc) => doc.id)).toEqual(['a']);
  });

  it('keeps a checkpoint position beyond 2^63 exactly, because EventStoreDB positions are unsigned 64-bit', () => {
    const position = 2n ** 64n - 1n;
    store.write((session) => session.setCheckpoint('balances', 3, position));
    expect(store.checkpoint('balances')).toEqual({ projection: 'balances', version: 3, position });
  });

  it('keeps neither the documents nor the checkpoint of a transaction that throws', () => {
    expect(() =>
      store.write((session) => {
        session.documents('p').put('c', 'a', { n: 1 });
        session.setCheckpoint('p', 1, 10n);
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(store.get('p', 'c', 'a')).toBeUndefined();
    expect(store.checkpoint('p')).toBeUndefined();
  });

  it('rolls back writes the cache already flushed to SQLite, because its bound flushes inside the same transaction', () => {
    expect(() =>
      store.write(
        (session) => {
          const tx = session.documents('p');
          for (let index = 0; index < 10; index += 1) tx.put('c', `d${index}`, { index });
          // Flushed entries are read back from SQLite, still uncommitted.
          expect(tx.get('c', 'd0')).toEqual({ index: 0 });
          throw new Error('after the flushes');
        },
        { maxCachedDocuments: 2 },
      ),
    ).toThrow('after the flushes');
    expect(store.list('p', 'c')).toEqual([]);

    store.write(
      (session) => {
        const tx = session.documents('p');
        for (let index = 0; index < 10; index += 1) tx.put('c', `d${index}`, { index });
      },
      { maxCachedDocuments: 2 },
    );
    expect(store.list('p', 'c')).toHaveLength(10);
  });

  it('refuses a document that is not JSON, and writes nothing of that transaction', () => {
    expect(() =>
      store.write((session) => {
        session.documents('p').put('c', 'ok', { fine: true });
        session.documents('p').put('c', 'bad', { amount: 1n });
      }),
    ).toThrow(DocumentWriteError);
    expect(() => store.write((session) => session.documents('p').put('c', '', {}))).toThrow(DocumentWriteError);
    expect(() => store.write((session) => session.documents('p').put('c', 'u', undefined))).toThrow(DocumentWriteError);
    expect(store.list('p', 'c')).toEqual([]);
  });

  it('refuses an asynchronous transaction body, because it would commit before the body finished', () => {
    expect(() => store.write(async () => undefined)).toThrow('synchronous');
  });

  it('resets a projection: its documents go and its checkpoint restarts at the given version', () => {
    store.write((session) => {
      session.documents('p').put('c', 'a', {});
      session.documents('q').put('c', 'a', {});
      session.setCheckpoint('p', 1, 7n);
    });
    store.resetProjection('p', 2);
    expect(store.get('p', 'c', 'a')).toBeUndefined();
    expect(store.get('q', 'c', 'a')).toEqual({});
    expect(store.checkpoint('p')).toEqual({ projection: 'p', version: 2, position: undefined });
  });

  it('keeps its data across reopening, and refuses a file written by a newer schema', () => {
    store.write((session) => session.documents('p').put('c', 'a', { kept: true }));
    store.close();
    store = openReadModelStore({ path: join(dir, 'ledger.read.sqlite') });
    expect(store.get('p', 'c', 'a')).toEqual({ kept: true });

    const newer = join(dir, 'newer.sqlite');
    const raw = new Database(newer);
    raw.pragma(`user_version = ${READ_MODEL_SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => openReadModelStore({ path: newer })).toThrow(/newer than this build/);
  });
});

describe('readModelPathFor — where the embedded store keeps read models', () => {
  it('puts the read-model file beside the log, named after it', () => {
    expect(readModelPathFor('./var/ledger.sqlite')).toBe('./var/ledger.read.sqlite');
    expect(readModelPathFor('/data/ledger.db')).toBe('/data/ledger.read.db');
    expect(readModelPathFor('/data/ledger')).toBe('/data/ledger.read.sqlite');
    expect(readModelPathFor(':memory:')).toBe(':memory:');
  });
});
