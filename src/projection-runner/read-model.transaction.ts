import type { Statement } from 'better-sqlite3';
import { DocumentWriteError } from './projection-runner.errors';
import type { PutOptions, ReadModelTx } from './projection.types';

/** Longest collection name, in characters. */
export const MAX_COLLECTION_NAME_LENGTH = 200;
/** Longest document id or index key, in characters. */
export const MAX_DOCUMENT_ID_LENGTH = 1_000;
/** Largest serialised document, in UTF-16 characters (JSON text); keeps one row from swamping a page cache. */
export const MAX_DOCUMENT_CHARS = 1_048_576;

/** The prepared statements a transaction writes through. */
export interface DocumentStatements {
  /** (projection, collection, id) → body, plucked. */
  readonly selectBody: Statement<[string, string, string], string>;
  /** (projection, collection, id, body, indexKey). */
  readonly upsert: Statement<[string, string, string, string, string | null]>;
  /** (projection, collection, id). */
  readonly delete: Statement<[string, string, string]>;
}

interface CacheEntry {
  document: unknown;
  /** False for a document known to be absent (deleted here, or not in the store). */
  present: boolean;
  /** True when the entry differs from the row in SQLite and must be written before commit. */
  dirty: boolean;
  indexKey: string | null;
  /**
   * Shared by the entries of one document object put under several keys in a row (a listing entry
   * written to each of its listings), so that object is serialised once for all of them.
   */
  shared: { body: string | undefined } | undefined;
}

/**
 * One projection's view of an open SQLite write transaction, with a write-through cache: a document
 * is read (and parsed) at most once per transaction and serialised at most once, at `flush`, however
 * many events of the batch change it. When the cache holds `maxCachedDocuments` entries it writes its
 * dirty entries to SQLite (still inside the transaction, so still atomic) and starts afresh, which
 * bounds the memory of a batch whatever a projection touches.
 */
export class CachedReadModelTx implements ReadModelTx {
  private readonly collections = new Map<string, Map<string, CacheEntry>>();
  private cachedDocuments = 0;
  /** The entry of the last put, to recognise the same object put again under another key. */
  private lastPut: CacheEntry | undefined;

  constructor(
    readonly projection: string,
    private readonly statements: DocumentStatements,
    private readonly maxCachedDocuments: number,
  ) {}

  get<T = unknown>(collection: string, id: string): T | undefined {
    const cached = this.collections.get(collection)?.get(id);
    if (cached !== undefined) return cached.present ? (cached.document as T) : undefined;
    const body = this.statements.selectBody.get(this.projection, collection, id);
    const document = body === undefined ? undefined : (JSON.parse(body) as T);
    this.remember(collection, id, {
      document,
      present: body !== undefined,
      dirty: false,
      indexKey: null,
      shared: undefined,
    });
    return document;
  }

  put(collection: string, id: string, document: unknown, options?: PutOptions): void {
    const indexKey = checkedPut(this.projection, collection, id, document, options);
    const entry: CacheEntry = { document, present: true, dirty: true, indexKey, shared: undefined };
    this.remember(collection, id, entry);
    // After remember: a flush it made ends the sharing (lastPut is reset), since an object may change
    // between two flushes. Within one flush every key would write the same object in the same state.
    const last = this.lastPut;
    if (last !== undefined && last.document === document && typeof document === 'object' && document !== null) {
      last.shared ??= { body: undefined };
      entry.shared = last.shared;
    }
    this.lastPut = entry;
  }

  delete(collection: string, id: string): void {
    this.assertKey(collection, id);
    this.remember(collection, id, { document: undefined, present: false, dirty: true, indexKey: null, shared: undefined });
  }

  /** Writes every dirty entry to SQLite and empties the cache. Called by the store before commit. */
  flush(): void {
    for (const [collection, documents] of this.collections) {
      for (const [id, entry] of documents) {
        if (!entry.dirty) continue;
        if (entry.present) {
          this.statements.upsert.run(this.projection, collection, id, this.serialise(collection, id, entry), entry.indexKey);
        } else {
          this.statements.delete.run(this.projection, collection, id);
        }
      }
    }
    this.collections.clear();
    this.cachedDocuments = 0;
    this.lastPut = undefined;
  }

  private remember(collection: string, id: string, entry: CacheEntry): void {
    let documents = this.collections.get(collection);
    if (documents === undefined) {
      documents = new Map();
      this.collections.set(collection, documents);
    }
    const previous = documents.get(id);
    if (previous !== undefined) {
      documents.set(id, entry);
      return;
    }
    if (this.cachedDocuments >= this.maxCachedDocuments) {
      this.flush();
      // flush() emptied the maps, including the one held above.
      documents = new Map();
      this.collections.set(collection, documents);
    }
    documents.set(id, entry);
    this.cachedDocuments += 1;
  }

  private serialise(collection: string, id: string, entry: CacheEntry): string {
    const shared = entry.shared;
    if (shared === undefined) return serialiseDocument(this.projection, collection, id, entry.document);
    shared.body ??= serialiseDocument(this.projection, collection, id, entry.document);
    return shared.body;
  }

  private assertKey(collection: string, id: string): void {
    assertDocumentKey(this.projection, collection, id);
  }
}

/** The document's JSON text; DocumentWriteError when it is not JSON-serialisable or too large. */
export function serialiseDocument(projection: string, collection: string, id: string, document: unknown): string {
  let body: string | undefined;
  try {
    body = JSON.stringify(document);
  } catch (error) {
    throw new DocumentWriteError(
      projection,
      collection,
      id,
      `not JSON-serialisable (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (body === undefined) {
    throw new DocumentWriteError(projection, collection, id, 'not JSON-serialisable');
  }
  if (body.length > MAX_DOCUMENT_CHARS) {
    throw new DocumentWriteError(
      projection,
      collection,
      id,
      `${body.length} characters of JSON exceeds MAX_DOCUMENT_CHARS (${MAX_DOCUMENT_CHARS})`,
    );
  }
  return body;
}

/**
 * The checks of a `put`: the key, a value JSON can hold, an index key within bounds. Returns the index
 * key to store (null for none); DocumentWriteError otherwise.
 */
export function checkedPut(projection: string, collection: string, id: string, document: unknown, options?: PutOptions): string | null {
  assertDocumentKey(projection, collection, id);
  if (document === undefined || typeof document === 'function' || typeof document === 'symbol') {
    throw new DocumentWriteError(projection, collection, id, `a ${typeof document} is not a JSON document`);
  }
  const indexKey = options?.indexKey ?? null;
  if (indexKey !== null && (typeof indexKey !== 'string' || indexKey.length > MAX_DOCUMENT_ID_LENGTH)) {
    throw new DocumentWriteError(projection, collection, id, `index key must be a string of at most ${MAX_DOCUMENT_ID_LENGTH} characters`);
  }
  return indexKey;
}

/** DocumentWriteError unless (collection, id) can address a document. */
export function assertDocumentKey(projection: string, collection: string, id: string): void {
  if (typeof collection !== 'string' || collection.length === 0 || collection.length > MAX_COLLECTION_NAME_LENGTH) {
    throw new DocumentWriteError(
      projection,
      String(collection),
      String(id),
      `collection must be a non-empty string of at most ${MAX_COLLECTION_NAME_LENGTH} characters`,
    );
  }
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_DOCUMENT_ID_LENGTH) {
    throw new DocumentWriteError(
      projection,
      collection,
      String(id),
      `id must be a non-empty string of at most ${MAX_DOCUMENT_ID_LENGTH} characters`,
    );
  }
}
