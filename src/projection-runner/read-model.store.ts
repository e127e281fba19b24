import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { pathBesideLog } from '../event-store/sqlite/path-beside-log';
import type { SqliteSynchronous } from '../event-store/sqlite/sqlite-synchronous';
import { ReadModelConflictError } from './projection-runner.errors';
import type { ReadModelTx } from './projection.types';
import { CachedReadModelTx, type DocumentStatements } from './read-model.transaction';

/**
 * Read models live in SQLite, always, whatever holds the log:
 *
 * - with the embedded SQLite log, in their own file beside it (see `readModelPathFor`): the log file
 *   only ever receives appends, so a rebuild that wipes and rewrites millions of documents never holds
 *   the log's single write lock, and the read-model file can be deleted at any time and rebuilt;
 * - with EventStoreDB/KurrentDB, in a local SQLite file per service instance (e.g. `./var/read-model.sqlite`):
 *   each instance runs its own projection runner against the shared log, so reads stay local and no
 *   instance depends on another's read model.
 *
 * Each projection's checkpoint is stored in this file next to its documents and is written in the same
 * transaction as they are, which is what makes a crash harmless: after a restart the runner resumes
 * from a checkpoint that describes exactly the documents on disk.
 *
 * Durability: `synchronous=NORMAL` (default) in WAL mode survives a process crash; a power loss may
 * drop the last committed transactions, but their checkpoint goes with them, so the runner re-applies
 * those events on restart and the model stays consistent. `FULL` also survives power loss at the cost of
 * an fsync per transaction.
 */

/** Version of this file's schema (PRAGMA user_version). Read models are derived data: an older one is dropped and rebuilt. */
export const READ_MODEL_SCHEMA_VERSION = 1;
/** How long a write waits for another connection's lock before failing with SQLITE_BUSY, in milliseconds. */
export const READ_MODEL_BUSY_TIMEOUT_MS = 5_000;
/** SQLite page cache of one connection, in KiB. */
export const READ_MODEL_PAGE_CACHE_KIB = 65_536;
/** Page size of a new read-model file, in bytes: larger than the 4 KiB default so JSON documents stay inline. */
export const READ_MODEL_PAGE_SIZE_BYTES = 8_192;
/**
 * WAL size at which SQLite checkpoints it into the database file, in pages (32 MiB at 8 KiB pages).
 * Higher than SQLite's 1,000 because a rebuild commits large transactions: fewer, larger checkpoints.
 */
export const READ_MODEL_WAL_AUTOCHECKPOINT_PAGES = 4_000;
/** Longest projection name, in characters. */
export const MAX_PROJECTION_NAME_LENGTH = 200;
/** Most documents `list` returns in one call. */
export const MAX_LIST_LIMIT = 1_000;
/** Default bound of a transaction's write-through cache, in documents per projection. */
export const DEFAULT_MAX_CACHED_DOCUMENTS = 100_000;

export interface ReadModelStoreOptions {
  /** SQLite file path, or `:memory:` for a scratch store (e.g. `audit verify`). */
  readonly path: string;
  /** Default `NORMAL`; see the durability note above. */
  readonly synchronous?: SqliteSynchronous;
  /**
   * Default true: create any secondary index a bulk load dropped (`deferIndexes`) and did not get to
   * restore, because it crashed. False only for the extra connections of a bulk load in progress.
   */
  readonly restoreIndexes?: boolean;
}

/** Where a projection stands: the version that wrote its documents and the last position applied. */
export interface ProjectionCheckpoint {
  readonly projection: string;
  readonly version: number;
  /** Global log position of the last event applied (handled or skipped); undefined when none yet. */
  readonly position: bigint | undefined;
}

/** A stored document as the comparison sees it: the JSON text, unparsed. */
export interface StoredDocument {
  readonly collection: string;
  readonly id: string;
  readonly body: string;
  readonly indexKey: string | undefined;
}

export interface ListOptions {
  /** Only documents written with this index key. */
  readonly indexKey?: string;
  /** Page after this id, in the listing's order (ids ascending, or descending with `descending`). */
  readonly afterId?: string;
  /** Ids in descending order (newest first, where ids grow with time); only with `indexKey`. */
  readonly descending?: boolean;
  /** At most this many documents; default and maximum MAX_LIST_LIMIT. */
  readonly limit?: number;
}

export interface ListedDocument<T> {
  readonly id: string;
  readonly document: T;
  readonly indexKey: string | undefined;
}

/** What a write transaction offers the runner: each projection's documents, and its checkpoint. */
export interface ReadModelWriteSession {
  /** The projection's documents within this transaction (one cached view per projection). */
  documents(projection: string): ReadModelTx;
  /** Records the projection's checkpoint; committed with the documents or not at all. */
  setCheckpoint(projection: string, version: number, position: bigint | undefined): void;
  /**
   * Fails the transaction with ReadModelConflictError unless the stored checkpoint is `expected`:
   * the write lock is already held, so this is the guard against a second writer on the same file.
   */
  expectCheckpoint(projection: string, expected: bigint | undefined): void;
  /**
   * Creates or replaces a document already serialised (and checked: key lengths, MAX_DOCUMENT_CHARS)
   * before the transaction began, which is how a parallel rebuild keeps its work outside the lock.
   */
  putSerialised(projection: string, collection: string, id: string, body: string, indexKey: string | null): void;
  /** Removes a document; removing one that does not exist is a no-op. */
  deleteDocument(projection: string, collection: string, id: string): void;
}

export interface WriteOptions {
  /** Bound of each projection's write-through cache, in documents; default DEFAULT_MAX_CACHED_DOCUMENTS. */
  readonly maxCachedDocuments?: number;
}

/**
 * The secondary indexes of `documents`, which `list` by index key reads. The primary key is the
 * table itself; these are what a bulk load may drop and build once at its end (see `deferIndexes`).
 */
const DOCUMENT_INDEXES: Readonly<Record<string, string>> = {
  documents_by_index_key: `CREATE INDEX IF NOT EXISTS documents_by_index_key
    ON documents (projection, collection, index_key, id) WHERE index_key IS NOT NULL`,
};

interface CheckpointRow {
  projection: string;
  version: number;
  position: string | null;
}

interface DocumentRow {
  collection: string;
  id: string;
  body: string;
  index_key: string | null;
}

/** Opens (creating or migrating) a read-model store. */
export function openReadModelStore(options: ReadModelStoreOptions): SqliteReadModelStore {
  return SqliteReadModelStore.open(options);
}

/**
 * The read-model file of an embedded log: the log's name with `.read` before its extension
 * (`var/ledger.sqlite` → `var/ledger.read.sqlite`), or `.read.sqlite` appended when the name has no
 * `.sqlite`, `.sqlite3` or `.db` extension. `:memory:` maps to `:memory:`.
 */
export function readModelPathFor(logPath: string): string {
  return pathBesideLog(logPath, 'read');
}

/**
 * A document store on SQLite keyed by (projection, collection, id) → JSON, plus each projection's
 * checkpoint. Reads (`get`, `list`) are for the read side (HTTP, CLI); writes happen only through
 * `write`, one SQLite transaction at a time, which is how the runner keeps documents and checkpoint together.
 */
export class SqliteReadModelStore {
  private readonly documentStatements: DocumentStatements;
  private readonly selectDocument: Statement<[string, string, string], string>;
  private readonly listAll: Statement<[string, string, string, number], DocumentRow>;
  private readonly listByIndexKey: Statement<[string, string, string, string, number], DocumentRow>;
  private readonly listByIndexKeyDescending: Statement<[string, string, string, string, string, number], DocumentRow>;
  private readonly countAll: Statement<[string], number>;
  private readonly countCollection: Statement<[string, string], number>;
  private readonly selectCheckpoint: Statement<[string], CheckpointRow>;
  private readonly selectCheckpoints: Statement<[], CheckpointRow>;
  private readonly upsertCheckpoint: Statement<[string, number, string | null]>;
  private readonly deleteCheckpoint: Statement<[string]>;
  private readonly deleteDocuments: Statement<[string]>;
  private readonly iterateDocuments: Statement<[string], DocumentRow>;
  private readonly selectProjectionNames: Statement<[], string>;
  private readonly runWrite: ReturnType<SqliteDatabase['transaction']>;
  private closed = false;

  private constructor(
    private readonly db: SqliteDatabase,
    readonly path: string,
    /** The file's durability setting, as opened. */
    readonly synchronous: SqliteSynchronous,
  ) {
    this.documentStatements = {
      selectBody: db
        .prepare<[string, string, string], string>(
          'SELECT body FROM documents WHERE projection = ? AND collection = ? AND id = ?',
        )
        .pluck(),
      upsert: db.prepare(
        `INSERT INTO documents (projection, collection, id, body, index_key) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (projection, collection, id) DO UPDATE SET body = excluded.body, index_key = excluded.index_key`,
      ),
      delete: db.prepare('DELETE FROM documents WHERE projection = ? AND collection = ? AND id = ?'),
    };
    // A separate statement from the transaction's: a read between batches must not reset one in use.
    this.selectDocument = db
      .prepare<[string, string, string], string>(
        'SELECT body FROM documents WHERE projection = ? AND collection = ? AND id = ?',
      )
      .pluck();
    this.listAll = db.prepare(
      `SELECT collection, id, body, index_key FROM documents
       WHERE projection = ? AND collection = ? AND id > ? ORDER BY id LIMIT ?`,
    );
    this.listByIndexKey = db.prepare(
      `SELECT collection, id, body, index_key FROM documents
       WHERE projection = ? AND collection = ? AND index_key = ? AND id > ? ORDER BY id LIMIT ?`,
    );
    this.listByIndexKeyDescending = db.prepare(
      `SELECT collection, id, body, index_key FROM documents
       WHERE projection = ? AND collection = ? AND index_key = ? AND (? = '' OR id < ?) ORDER BY id DESC LIMIT ?`,
    );
    this.countAll = db.prepare<[string], number>('SELECT count(*) FROM documents WHERE projection = ?').pluck();
    this.countCollection = db
      .prepare<[string, string], number>('SELECT count(*) FROM documents WHERE projection = ? AND collection = ?')
      .pluck();
    this.selectCheckpoint = db.prepare('SELECT projection, version, position FROM checkpoints WHERE projection = ?');
    this.selectCheckpoints = db.prepare('SELECT projection, version, position FROM checkpoints ORDER BY projection');
    this.upsertCheckpoint = db.prepare(
      `INSERT INTO checkpoints (projection, version, position) VALUES (?, ?, ?)
       ON CONFLICT (projection) DO UPDATE SET version = excluded.version, position = excluded.position`,
    );
    this.deleteCheckpoint = db.prepare('DELETE FROM checkpoints WHERE projection = ?');
    this.deleteDocuments = db.prepare('DELETE FROM documents WHERE projection = ?');
    this.iterateDocuments = db.prepare(
      'SELECT collection, id, body, index_key FROM documents WHERE projection = ? ORDER BY collection, id',
    );
    this.selectProjectionNames = db
      .prepare<[], string>(
        'SELECT projection FROM checkpoints UNION SELECT DISTINCT projection FROM documents ORDER BY projection',
      )
      .pluck();
    this.runWrite = db.transaction(
      <T>(body: (session: ReadModelWriteSession) => T, maxCachedDocuments: number): T => {
        const session = new WriteSession(this, this.documentStatements, maxCachedDocuments);
        const result = body(session);
        if (isThenable(result)) {
          throw new TypeError('A read-model write must be synchronous; it returned a promise');
        }
        session.flush();
        return result;
      },
    );
  }

  /** Opens (creating or migrating) the store at `options.path`. */
  static open(options: ReadModelStoreOptions): SqliteReadModelStore {
    const synchronous = options.synchronous ?? 'NORMAL';
    if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
      throw new RangeError(`synchronous must be 'NORMAL' or 'FULL', got ${String(synchronous)}`);
    }
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    const db = new Database(options.path);
    try {
      db.pragma(`busy_timeout = ${READ_MODEL_BUSY_TIMEOUT_MS}`);
      migrate(db);
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${synchronous}`);
      db.pragma(`wal_autocheckpoint = ${READ_MODEL_WAL_AUTOCHECKPOINT_PAGES}`);
      db.pragma(`cache_size = -${READ_MODEL_PAGE_CACHE_KIB}`);
      db.pragma('temp_store = MEMORY');
      if (options.restoreIndexes ?? true) createDocumentIndexes(db);
      return new SqliteReadModelStore(db, options.path, synchronous);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** A document of a projection, or undefined. */
  get<T = unknown>(projection: string, collection: string, id: string): T | undefined {
    const body = this.selectDocument.get(projection, collection, id);
    return body === undefined ? undefined : (JSON.parse(body) as T);
  }

  /**
   * Every document of a collection in ascending id order, optionally only those with an index key,
   * read `pageSize` at a time (default MAX_LIST_LIMIT) as the caller iterates. Pages are separate
   * reads: call it inside `readSnapshot` for documents that agree with each other.
   */
  *listEvery<T = unknown>(projection: string, collection: string, options: { readonly indexKey?: string; readonly pageSize?: number } = {}): Generator<ListedDocument<T>> {
    const limit = options.pageSize ?? MAX_LIST_LIMIT;
    let afterId: string | undefined;
    for (;;) {
      const page = this.list<T>(projection, collection, { limit, ...(options.indexKey === undefined ? {} : { indexKey: options.indexKey }), ...(afterId === undefined ? {} : { afterId }) });
      yield* page;
      if (page.length < limit) return;
      afterId = page[page.length - 1]!.id;
    }
  }

  /** A page of a collection's documents in ascending id order, optionally only those with an index key. */
  list<T = unknown>(projection: string, collection: string, options: ListOptions = {}): ListedDocument<T>[] {
    const limit = options.limit ?? MAX_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new RangeError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${limit}`);
    }
    // Ids are non-empty, so '' sorts before every one of them.
    const afterId = options.afterId ?? '';
    if (options.descending === true && options.indexKey === undefined) throw new RangeError('a descending listing needs an indexKey');
    const rows =
      options.indexKey === undefined
        ? this.listAll.all(projection, collection, afterId, limit)
        : options.descending === true
          ? this.listByIndexKeyDescending.all(projection, collection, options.indexKey, afterId, afterId, limit)
          : this.listByIndexKey.all(projection, collection, options.indexKey, afterId, limit);
    return rows.map((row) => ({
      id: row.id,
      document: JSON.parse(row.body) as T,
      indexKey: row.index_key ?? undefined,
    }));
  }

  /** Number of documents of a projection, in one collection or in all of them. */
  count(projection: string, collection?: string): number {
    return collection === undefined ? this.countAll.get(projection)! : this.countCollection.get(projection, collection)!;
  }

  /** The projection's stored checkpoint, or undefined when it has never run against this store. */
  checkpoint(projection: string): ProjectionCheckpoint | undefined {
    const row = this.selectCheckpoint.get(projection);
    return row === undefined ? undefined : toCheckpoint(row);
  }

  /** Every stored checkpoint, by projection name. */
  checkpoints(): ProjectionCheckpoint[] {
    return this.selectCheckpoints.all().map(toCheckpoint);
  }

  /** Names of every projection with a checkpoint or a document in this store. */
  projectionNames(): string[] {
    return this.selectProjectionNames.all();
  }

  /**
   * Runs `body` in one write transaction (BEGIN IMMEDIATE) and commits its document writes and
   * checkpoints together; if it throws, nothing of it is kept. `body` must be synchronous.
   */
  write<T>(body: (session: ReadModelWriteSession) => T, options: WriteOptions = {}): T {
    this.assertOpen();
    const maxCachedDocuments = options.maxCachedDocuments ?? DEFAULT_MAX_CACHED_DOCUMENTS;
    if (!Number.isInteger(maxCachedDocuments) || maxCachedDocuments < 1) {
      throw new RangeError(`maxCachedDocuments must be a positive integer, got ${maxCachedDocuments}`);
    }
    return this.runWrite.immediate(body, maxCachedDocuments) as T;
  }

  /** Deletes a projection's documents and sets its checkpoint to `version` with nothing applied. */
  resetProjection(projection: string, version: number): void {
    this.assertOpen();
    assertProjectionName(projection);
    this.db.transaction(() => {
      this.deleteDocuments.run(projection);
      this.upsertCheckpoint.run(projection, version, null);
    }).immediate();
  }

  /**
   * For a bulk load (a rebuild of every projection that has documents): drops the secondary indexes
   * of `documents` when they index nothing, and returns true if it did. Maintaining them row by row
   * costs about as much as writing the documents themselves (each page's rows land on a hundred
   * scattered index pages), while building them once from the finished table is a sort. Call
   * `restoreIndexes` when the load ends; if the process dies first, the next `openReadModelStore`
   * (other than the load's own `restoreIndexes: false` connections) builds them. Readers see the same
   * results meanwhile, only `list` by index key reads slower.
   */
  deferIndexes(): boolean {
    this.assertOpen();
    return this.db.transaction(() => {
      const indexed = this.db.prepare('SELECT 1 FROM documents WHERE index_key IS NOT NULL LIMIT 1').pluck().get();
      if (indexed !== undefined) return false;
      for (const name of Object.keys(DOCUMENT_INDEXES)) this.db.exec(`DROP INDEX IF EXISTS ${name}`);
      return true;
    }).immediate();
  }

  /** Creates the secondary indexes `deferIndexes` dropped (a no-op when they exist). */
  restoreIndexes(): void {
    this.assertOpen();
    this.db.transaction(() => createDocumentIndexes(this.db)).immediate();
  }

  /** Deletes a projection's documents and checkpoint (a projection that no longer exists). */
  dropProjection(projection: string): void {
    this.assertOpen();
    this.db.transaction(() => {
      this.deleteDocuments.run(projection);
      this.deleteCheckpoint.run(projection);
    }).immediate();
  }

  /**
   * A projection's documents in (collection, id) order. Iterating holds this connection busy: finish
   * (or `return()` from) the iterator before using the store again.
   */
  *documents(projection: string): Generator<StoredDocument, void, undefined> {
    for (const row of this.iterateDocuments.iterate(projection)) {
      yield { collection: row.collection, id: row.id, body: row.body, indexKey: row.index_key ?? undefined };
    }
  }

  /** Runs `body` inside one read transaction, so everything it reads comes from a single snapshot. */
  readSnapshot<T>(body: () => T): T {
    this.assertOpen();
    return this.db.transaction(body).deferred();
  }

  /** Closes the file. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  /** @internal for WriteSession */
  readCheckpointRow(projection: string): ProjectionCheckpoint | undefined {
    return this.checkpoint(projection);
  }

  /** @internal for WriteSession */
  writeCheckpointRow(projection: string, version: number, position: bigint | undefined): void {
    this.upsertCheckpoint.run(projection, version, position === undefined ? null : position.toString());
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`Read-model store ${this.path} is closed`);
  }
}

class WriteSession implements ReadModelWriteSession {
  private readonly views = new Map<string, CachedReadModelTx>();

  constructor(
    private readonly store: SqliteReadModelStore,
    private readonly statements: DocumentStatements,
    private readonly maxCachedDocuments: number,
  ) {}

  documents(projection: string): ReadModelTx {
    let view = this.views.get(projection);
    if (view === undefined) {
      assertProjectionName(projection);
      view = new CachedReadModelTx(projection, this.statements, this.maxCachedDocuments);
      this.views.set(projection, view);
    }
    return view;
  }

  setCheckpoint(projection: string, version: number, position: bigint | undefined): void {
    assertProjectionName(projection);
    this.store.writeCheckpointRow(projection, version, position);
  }

  expectCheckpoint(projection: string, expected: bigint | undefined): void {
    const actual = this.store.readCheckpointRow(projection)?.position;
    if (actual !== expected) throw new ReadModelConflictError(projection, expected, actual);
  }

  putSerialised(projection: string, collection: string, id: string, body: string, indexKey: string | null): void {
    this.statements.upsert.run(projection, collection, id, body, indexKey);
  }

  deleteDocument(projection: string, collection: string, id: string): void {
    this.statements.delete.run(projection, collection, id);
  }

  flush(): void {
    for (const view of this.views.values()) view.flush();
  }
}

function migrate(db: SqliteDatabase): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > READ_MODEL_SCHEMA_VERSION) {
    throw new Error(
      `Read-model file has schema version ${version}, newer than this build's ${READ_MODEL_SCHEMA_VERSION}; ` +
        'run the newer build, or delete the file to rebuild it from the log',
    );
  }
  if (version === READ_MODEL_SCHEMA_VERSION) return;
  const isNew = db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").pluck().get() === 0;
  // Page size is fixed once a file has content (and in WAL mode), so set it before anything else.
  if (isNew) db.pragma(`page_size = ${READ_MODEL_PAGE_SIZE_BYTES}`);
  db.transaction(() => {
    // Read models are derived from the log: an older layout is dropped and the runner rebuilds it.
    db.exec('DROP TABLE IF EXISTS documents; DROP TABLE IF EXISTS checkpoints;');
    db.exec(`
      CREATE TABLE documents (
        projection TEXT NOT NULL,
        collection TEXT NOT NULL,
        id TEXT NOT NULL,
        body TEXT NOT NULL,
        index_key TEXT,
        PRIMARY KEY (projection, collection, id)
      ) WITHOUT ROWID;
      -- position: decimal text of a bigint (EventStoreDB positions are unsigned 64-bit); NULL = none applied.
      CREATE TABLE checkpoints (
        projection TEXT NOT NULL PRIMARY KEY,
        version INTEGER NOT NULL,
        position TEXT
      ) WITHOUT ROWID;
    `);
    createDocumentIndexes(db);
    db.pragma(`user_version = ${READ_MODEL_SCHEMA_VERSION}`);
  }).immediate();
}

/** Creates the secondary indexes that are missing; when none is, it only reads the schema. */
function createDocumentIndexes(db: SqliteDatabase): void {
  const existing = new Set(
    db.prepare<[], string>("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'documents'").pluck().all(),
  );
  for (const [name, statement] of Object.entries(DOCUMENT_INDEXES)) {
    if (!existing.has(name)) db.exec(statement);
  }
}

function toCheckpoint(row: CheckpointRow): ProjectionCheckpoint {
  return {
    projection: row.projection,
    version: row.version,
    position: row.position === null ? undefined : BigInt(row.position),
  };
}

/** Throws unless `name` can name a projection. */
export function assertProjectionName(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_PROJECTION_NAME_LENGTH) {
    throw new RangeError(
      `A projection name must be a non-empty string of at most ${MAX_PROJECTION_NAME_LENGTH} characters, got ${JSON.stringify(name)}`,
    );
  }
}

function isThenable(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
  );
}
