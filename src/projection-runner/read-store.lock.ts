import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Database as SqliteDatabase } from 'better-sqlite3';

/** Who holds a read store's lock: a running service, or `projections rebuild`. */
export type ReadStoreLockHolder = 'service' | 'rebuild';

/** The read store's lock is held: a service runs on it, or a rebuild is under way. */
export class ReadStoreLockedError extends Error {
  override readonly name = 'ReadStoreLockedError';

  constructor(readonly lockPath: string) {
    super(
      `the read models at ${lockPath.slice(0, -LOCK_SUFFIX.length)} are in use (a running service or another rebuild holds ${lockPath}); ` +
        'stop it first',
    );
  }
}

const LOCK_SUFFIX = '.lock';

/** The lock file beside a read store: `var/ledger.read.sqlite` → `var/ledger.read.sqlite.lock`. */
export function readStoreLockPath(readStorePath: string): string {
  return `${readStorePath}${LOCK_SUFFIX}`;
}

/**
 * An exclusive lock on a read-model store, held for as long as its owner runs: the service holds it
 * on its read store, so `projections rebuild` cannot rewrite the read models under a live runner,
 * and the rebuild holds it, so a service cannot start on half-rebuilt ones.
 *
 * It is SQLite's own file lock (an exclusive transaction on a side file, kept open), so the operating
 * system releases it when its process dies, however it dies: a crash never leaves a stale lock. An
 * in-memory read store has nobody to share it with and takes no lock.
 */
export class ReadStoreLock {
  private constructor(
    private readonly db: SqliteDatabase | undefined,
    readonly holder: ReadStoreLockHolder,
  ) {}

  /** Takes the lock at once or throws ReadStoreLockedError; it never waits for another holder. */
  static acquire(readStorePath: string, holder: ReadStoreLockHolder): ReadStoreLock {
    if (readStorePath === ':memory:') return new ReadStoreLock(undefined, holder);
    const lockPath = readStoreLockPath(readStorePath);
    // Its folder is made here, as each store makes its own: the lock is taken before the read models open.
    mkdirSync(dirname(lockPath), { recursive: true });
    const db = new Database(lockPath, { timeout: 0 });
    try {
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      db.close();
      if ((error as { code?: unknown }).code === 'SQLITE_BUSY') throw new ReadStoreLockedError(lockPath);
      throw error;
    }
    return new ReadStoreLock(db, holder);
  }

  /** Releases the lock. Idempotent. */
  release(): void {
    if (this.db === undefined || !this.db.open) return;
    this.db.exec('ROLLBACK');
    this.db.close();
  }
}
