import type { PutOptions, ReadModelTx } from '../projection.types';
import type { ReadModelWriteSession, SqliteReadModelStore } from '../read-model.store';
import { assertDocumentKey, checkedPut, serialiseDocument } from '../read-model.transaction';

/**
 * Clean documents a rebuild keeps from one page to the next, per projection: enough for the
 * invocations still in flight at a page boundary, whose documents the next page changes again. More
 * would only keep finished documents alive for the garbage collector to copy.
 */
export const REBUILD_RETAINED_DOCUMENTS = 4_096;

interface Entry {
  readonly collection: string;
  readonly id: string;
  document: unknown;
  /** False for a document known to be absent. */
  present: boolean;
  /** True while the entry differs from the committed row: it is in `dirty`. */
  dirty: boolean;
  indexKey: string | null;
  /** The JSON of a dirty present entry, set by `serialise`. */
  body: string | undefined;
}

/**
 * One projection's documents while a rebuild replays it, in front of a read-model file that nothing
 * else writes for this projection: a write-back cache that lives across pages. A page is applied to
 * it with no transaction open (a miss is an ordinary read of the committed row, which is current
 * because only this replay writes it); `serialise` then prepares the changed documents, still
 * outside the write lock, and `write` stores them inside the transaction that also moves the
 * projection's checkpoint.
 *
 * The projection was wiped when its rebuild began, so an id greater than every id this cache ever
 * wrote to a collection is known to be absent without a read; with time-ordered ids (UUIDv7
 * invocations) that spares the lookup of every new document, and the delete of every document both
 * written and removed within one page (an invocation opened and settled).
 */
export class RebuildDocumentCache implements ReadModelTx {
  private readonly collections = new Map<string, Map<string, Entry>>();
  /** Per collection, the greatest id ever written to the file by this cache (JS string order). */
  private readonly greatestStoredId = new Map<string, string>();
  private dirty: Entry[] = [];
  private size = 0;

  constructor(
    readonly projection: string,
    private readonly store: SqliteReadModelStore,
    /** Most documents this cache holds while a page is applied; beyond it the page must be committed. */
    private readonly maxCachedDocuments: number,
  ) {}

  /** True when the documents changed since the last commit reach the bound: commit before going on. */
  get full(): boolean {
    return this.dirty.length >= this.maxCachedDocuments;
  }

  /** Documents changed since the last commit. */
  get changed(): number {
    return this.dirty.length;
  }

  get<T = unknown>(collection: string, id: string): T | undefined {
    const cached = this.collections.get(collection)?.get(id);
    if (cached !== undefined) return cached.present ? (cached.document as T) : undefined;
    const document = this.neverStored(collection, id) ? undefined : this.store.get<T>(this.projection, collection, id);
    const entry = this.remember(collection, id);
    entry.document = document;
    entry.present = document !== undefined;
    return document;
  }

  put(collection: string, id: string, document: unknown, options?: PutOptions): void {
    const indexKey = checkedPut(this.projection, collection, id, document, options);
    const entry = this.remember(collection, id);
    entry.document = document;
    entry.present = true;
    entry.indexKey = indexKey;
    this.markDirty(entry);
  }

  delete(collection: string, id: string): void {
    this.assertKey(collection, id);
    const entry = this.remember(collection, id);
    entry.document = undefined;
    entry.present = false;
    entry.indexKey = null;
    this.markDirty(entry);
  }

  /**
   * Serialises every changed document (outside the write lock). Throws DocumentWriteError for one that
   * cannot be stored; the caller then discards this projection's changes.
   */
  serialise(): void {
    for (let index = 0; index < this.dirty.length; index++) {
      const entry = this.dirty[index]!;
      entry.body = entry.present ? this.serialiseOne(entry) : undefined;
    }
  }

  /** Writes the serialised changes inside the caller's transaction. */
  write(session: ReadModelWriteSession): void {
    for (let index = 0; index < this.dirty.length; index++) {
      const entry = this.dirty[index]!;
      if (entry.present) {
        session.putSerialised(this.projection, entry.collection, entry.id, entry.body!, entry.indexKey);
      } else if (!this.neverStored(entry.collection, entry.id)) {
        session.deleteDocument(this.projection, entry.collection, entry.id);
      }
    }
  }

  /** After the commit of `write`: the changes are the committed rows now. */
  committed(): void {
    for (let index = 0; index < this.dirty.length; index++) {
      const entry = this.dirty[index]!;
      entry.dirty = false;
      entry.body = undefined;
      if (entry.present) {
        const greatest = this.greatestStoredId.get(entry.collection);
        if (greatest === undefined || entry.id > greatest) this.greatestStoredId.set(entry.collection, entry.id);
      }
    }
    this.dirty = [];
    this.trim(REBUILD_RETAINED_DOCUMENTS);
  }

  /** Forgets the changes since the last commit (the projection faulted, or its commit failed). */
  discard(): void {
    for (let index = 0; index < this.dirty.length; index++) {
      const entry = this.dirty[index]!;
      if (this.collections.get(entry.collection)?.delete(entry.id) === true) this.size -= 1;
    }
    this.dirty = [];
  }

  /** True when no row of the collection with this id can exist: it is above every id ever written. */
  private neverStored(collection: string, id: string): boolean {
    const greatest = this.greatestStoredId.get(collection);
    return greatest === undefined || id > greatest;
  }

  private markDirty(entry: Entry): void {
    if (entry.dirty) return;
    entry.dirty = true;
    this.dirty.push(entry);
  }

  /** The entry of a document, created (absent, clean) when the cache holds none. */
  private remember(collection: string, id: string): Entry {
    let documents = this.collections.get(collection);
    if (documents === undefined) {
      documents = new Map();
      this.collections.set(collection, documents);
    }
    let entry = documents.get(id);
    if (entry !== undefined) return entry;
    // Clean entries make room first; dirty ones are bounded by `full`, which the replay checks.
    if (this.size >= this.maxCachedDocuments) this.trim(this.maxCachedDocuments >>> 1);
    entry = { collection, id, document: undefined, present: false, dirty: false, indexKey: null, body: undefined };
    documents.set(id, entry);
    this.size += 1;
    return entry;
  }

  /** Drops the oldest clean entries until at most `target` remain (or only dirty ones). */
  private trim(target: number): void {
    if (this.size <= target) return;
    const shares = this.collections.size;
    for (const documents of this.collections.values()) {
      const keep = Math.max(1, Math.floor(target / shares));
      for (const [id, entry] of documents) {
        if (documents.size <= keep) break;
        if (entry.dirty) continue;
        documents.delete(id);
        this.size -= 1;
      }
    }
  }

  private serialiseOne(entry: Entry): string {
    return serialiseDocument(this.projection, entry.collection, entry.id, entry.document);
  }

  private assertKey(collection: string, id: string): void {
    assertDocumentKey(this.projection, collection, id);
  }
}
