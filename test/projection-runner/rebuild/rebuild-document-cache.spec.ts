import { DocumentWriteError, openReadModelStore, type SqliteReadModelStore } from '../../../src/projection-runner';
import { RebuildDocumentCache, REBUILD_RETAINED_DOCUMENTS } from '../../../src/projection-runner/rebuild/rebuild-document-cache';

describe('RebuildDocumentCache: one projection’s documents during a rebuild, kept across pages', () => {
  let store: SqliteReadModelStore;
  let reads: string[];
  let writes: string[];

  /** Commits the cache's changes as a rebuild does, recording each statement it makes. */
  const commit = (cache: RebuildDocumentCache): void => {
    cache.serialise();
    store.write((session) =>
      cache.write({
        documents: (projection) => session.documents(projection),
        setCheckpoint: (projection, version, position) => session.setCheckpoint(projection, version, position),
        expectCheckpoint: (projection, expected) => session.expectCheckpoint(projection, expected),
        putSerialised: (projection, collection, id, body, indexKey) => {
          writes.push(`put ${collection}/${id}`);
          session.putSerialised(projection, collection, id, body, indexKey);
        },
        deleteDocument: (projection, collection, id) => {
          writes.push(`delete ${collection}/${id}`);
          session.deleteDocument(projection, collection, id);
        },
      }),
    );
    cache.committed();
  };

  beforeEach(() => {
    store = openReadModelStore({ path: ':memory:' });
    store.resetProjection('p', 1);
    reads = [];
    writes = [];
    const get = store.get.bind(store);
    jest.spyOn(store, 'get').mockImplementation((projection, collection, id) => {
      reads.push(`${collection}/${id}`);
      return get(projection, collection, id);
    });
  });

  afterEach(() => store.close());

  it('reads no row for an id above every id it wrote to that collection, since the projection was wiped', () => {
    const cache = new RebuildDocumentCache('p', store, 100);
    expect(cache.get('docs', 'b')).toBeUndefined();
    cache.put('docs', 'b', { n: 1 });
    commit(cache);
    expect(cache.get('docs', 'c')).toBeUndefined();
    expect(cache.get('other', 'a')).toBeUndefined();
    expect(reads).toEqual([]);
  });

  it('reads the committed row of a document it no longer holds, and gets its latest version', () => {
    const cache = new RebuildDocumentCache('p', store, 2);
    for (const id of ['a', 'b', 'c', 'd']) cache.put('docs', id, { id, n: 1 });
    commit(cache);
    cache.put('docs', 'e', { id: 'e', n: 1 });
    cache.put('docs', 'f', { id: 'f', n: 1 });
    // Only two fit: the oldest clean ones made room.
    expect(cache.get('docs', 'a')).toEqual({ id: 'a', n: 1 });
    expect(reads).toEqual(['docs/a']);
  });

  it('deletes no row for a document written and removed between two commits, and deletes one committed before', () => {
    const cache = new RebuildDocumentCache('p', store, 100);
    cache.put('open', 'a', { open: true });
    commit(cache);
    cache.put('open', 'b', { open: true });
    cache.delete('open', 'b');
    cache.delete('open', 'a');
    commit(cache);
    expect(writes).toEqual(['put open/a', 'delete open/a']);
    expect(store.count('p')).toBe(0);
  });

  it('writes each changed document once per commit, at its latest value and index key', () => {
    const cache = new RebuildDocumentCache('p', store, 100);
    cache.put('docs', 'a', { n: 1 }, { indexKey: 'x' });
    cache.put('docs', 'a', { n: 2 }, { indexKey: 'y' });
    commit(cache);
    expect(writes).toEqual(['put docs/a']);
    expect(store.list('p', 'docs', { indexKey: 'y' })).toEqual([{ id: 'a', document: { n: 2 }, indexKey: 'y' }]);
  });

  it('says it is full once the documents changed since the last commit reach its bound, and keeps every one of them', () => {
    const cache = new RebuildDocumentCache('p', store, 3);
    for (const id of ['a', 'b', 'c']) cache.put('docs', id, { id });
    expect(cache.full).toBe(true);
    cache.put('docs', 'd', { id: 'd' });
    expect(cache.changed).toBe(4);
    commit(cache);
    expect(cache.full).toBe(false);
    expect(store.count('p', 'docs')).toBe(4);
  });

  it('forgets its uncommitted changes on discard, so the next read is the committed row', () => {
    const cache = new RebuildDocumentCache('p', store, 100);
    cache.put('docs', 'a', { n: 1 });
    commit(cache);
    cache.put('docs', 'a', { n: 2 });
    cache.discard();
    expect(cache.get('docs', 'a')).toEqual({ n: 1 });
    expect(cache.changed).toBe(0);
  });

  it('refuses at serialise a document that cannot be stored, naming it', () => {
    const cache = new RebuildDocumentCache('p', store, 100);
    cache.put('docs', 'a', { n: 1n });
    expect(() => cache.serialise()).toThrow(DocumentWriteError);
    expect(() => cache.serialise()).toThrow('cannot write document "docs"/"a": not JSON-serialisable');
  });

  it('refuses a key or an index key out of bounds as the transaction cache does', () => {
    const cache = new RebuildDocumentCache('p', store, 100);
    expect(() => cache.put('', 'a', {})).toThrow(DocumentWriteError);
    expect(() => cache.put('docs', 'x'.repeat(1_001), {})).toThrow(DocumentWriteError);
    expect(() => cache.put('docs', 'a', {}, { indexKey: 'x'.repeat(1_001) })).toThrow(DocumentWriteError);
    expect(() => cache.put('docs', 'a', undefined)).toThrow(DocumentWriteError);
  });

  it('keeps at most REBUILD_RETAINED_DOCUMENTS clean documents after a commit', () => {
    const cache = new RebuildDocumentCache('p', store, 100_000);
    const ids = Array.from({ length: REBUILD_RETAINED_DOCUMENTS + 10 }, (_, index) => `id-${String(index).padStart(6, '0')}`);
    for (const id of ids) cache.put('docs', id, { id });
    commit(cache);
    // The newest are kept: reading them needs no row; the oldest are read back.
    cache.get('docs', ids.at(-1)!);
    cache.get('docs', ids[0]!);
    expect(reads).toEqual([`docs/${ids[0]}`]);
  });
});
