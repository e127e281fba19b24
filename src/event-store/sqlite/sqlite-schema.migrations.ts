import type Database from 'better-sqlite3';

/**
 * The embedded store's schema, as an ordered list of migrations. Migration `n` (1-based) takes a
 * database from schema version `n - 1` to `n`; the version lives in SQLite's `user_version` header
 * field, so it changes atomically with the migration's DDL. Append new migrations; never edit one
 * that has shipped.
 */
export const SQLITE_SCHEMA_MIGRATIONS: readonly string[] = [
  // 1. The log. `position` is the rowid: the global order, assigned at insert, and since SQLite has
  //    one writer at a time, the order of commit. Rows are never deleted, so a rowid is never reused.
  //    `batch_expected_revision` is set on the first event of each append only: it marks where an
  //    append starts and what it expected, which is what an idempotent re-append is compared with.
  `CREATE TABLE events (
     position INTEGER PRIMARY KEY,
     stream_name TEXT NOT NULL,
     revision INTEGER NOT NULL CHECK (revision >= 0),
     event_id TEXT NOT NULL,
     type TEXT NOT NULL,
     data TEXT NOT NULL,
     metadata TEXT NOT NULL,
     recorded_at_ms INTEGER NOT NULL,
     batch_expected_revision TEXT,
     CONSTRAINT events_stream_revision_unique UNIQUE (stream_name, revision),
     CONSTRAINT events_event_id_unique UNIQUE (event_id)
   ) STRICT;`,
];

/** The schema version this build writes. */
export const SQLITE_SCHEMA_VERSION = SQLITE_SCHEMA_MIGRATIONS.length;

/** Thrown when a database was written by a newer build: reading it with older code could misread it. */
export class SqliteSchemaTooNewError extends Error {
  override readonly name = 'SqliteSchemaTooNewError';

  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(`The event store database has schema version ${found}; this build supports up to ${supported}. Upgrade llm-ledger.`);
  }
}

function readUserVersion(db: Database.Database): number {
  return db.pragma('user_version', { simple: true }) as number;
}

/**
 * Brings the database to SQLITE_SCHEMA_VERSION. Runs under BEGIN IMMEDIATE and re-reads the version
 * inside it, so two processes opening one file at once migrate it once.
 */
export function migrateSqliteSchema(db: Database.Database): number {
  const migrate = db.transaction(() => {
    const found = readUserVersion(db);
    if (found > SQLITE_SCHEMA_VERSION) throw new SqliteSchemaTooNewError(found, SQLITE_SCHEMA_VERSION);
    for (let version = found; version < SQLITE_SCHEMA_VERSION; version++) {
      db.exec(SQLITE_SCHEMA_MIGRATIONS[version]!);
    }
    if (found !== SQLITE_SCHEMA_VERSION) db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`);
    return found;
  });
  return migrate.immediate();
}
