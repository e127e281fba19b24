import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openReadModelStore, type SqliteReadModelStore } from '../../../src/projection-runner';

describe('SqliteReadModelStore.deferIndexes: the index by key dropped for a bulk load and built once after it', () => {
  let dir: string;
  let path: string;
  let store: SqliteReadModelStore;

  const indexNames = (): string[] => {
    const raw = new Database(path, { readonly: true });
    try {
      return raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'documents'").pluck().all() as string[];
    } finally {
      raw.close();
    }
  };
  const put = (projection: string, id: string, indexKey?: string): void =>
    store.write((session) => session.documents(projection).put('docs', id, { id }, indexKey === undefined ? {} : { indexKey }));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'read-model-indexes-'));
    path = join(dir, 'read.sqlite');
    store = openReadModelStore({ path });
  });

  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('drops the index when it indexes nothing, and lists by key the same before and after it is rebuilt', () => {
    put('other', 'a');
    expect(store.deferIndexes()).toBe(true);
    expect(indexNames()).toEqual([]);
    put('p', 'b', 'k');
    put('p', 'c', 'k');
    expect(store.list('p', 'docs', { indexKey: 'k' }).map((listed) => listed.id)).toEqual(['b', 'c']);
    store.restoreIndexes();
    expect(indexNames()).toEqual(['documents_by_index_key']);
    expect(store.list('p', 'docs', { indexKey: 'k' }).map((listed) => listed.id)).toEqual(['b', 'c']);
  });

  it('keeps the index when some document still has an index key (a rebuild of some projections only)', () => {
    put('kept', 'a', 'k');
    expect(store.deferIndexes()).toBe(false);
    expect(indexNames()).toEqual(['documents_by_index_key']);
  });

  it('builds a dropped index when the file is opened again, as after a crash mid-load, except for the load’s own connections', () => {
    expect(store.deferIndexes()).toBe(true);
    const loader = openReadModelStore({ path, restoreIndexes: false });
    loader.close();
    expect(indexNames()).toEqual([]);
    const reopened = openReadModelStore({ path });
    reopened.close();
    expect(indexNames()).toEqual(['documents_by_index_key']);
  });
});
