import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from '../runtime';
import type { AnswerStore } from './answer-store.port';

/** How long a write waits for another connection's lock on the answer file, in ms. */
const ANSWER_STORE_BUSY_TIMEOUT_MS = 5_000;

/**
 * The answer store in its own SQLite file (beside the log for the embedded store, one per instance
 * with EventStoreDB). Expiry is read on the injected clock: every `keep` deletes whatever has expired,
 * and `find` deletes the expired entry it meets, so no answer outlives its period by more than the
 * next write or read.
 */
export class SqliteAnswerStore implements AnswerStore {
  private readonly insert: Statement<[string, string, number]>;
  private readonly select: Statement<[string], { answer: string; expires_at_ms: number }>;
  private readonly deleteOne: Statement<[string]>;
  private readonly deleteExpired: Statement<[number]>;

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly clock: Clock,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS answers (
      invocation_id TEXT PRIMARY KEY,
      answer TEXT NOT NULL,
      expires_at_ms INTEGER NOT NULL
    )`);
    db.exec('CREATE INDEX IF NOT EXISTS answers_by_expiry ON answers (expires_at_ms)');
    this.insert = db.prepare('INSERT OR REPLACE INTO answers (invocation_id, answer, expires_at_ms) VALUES (?, ?, ?)');
    this.select = db.prepare('SELECT answer, expires_at_ms FROM answers WHERE invocation_id = ?');
    this.deleteOne = db.prepare('DELETE FROM answers WHERE invocation_id = ?');
    this.deleteExpired = db.prepare('DELETE FROM answers WHERE expires_at_ms <= ?');
  }

  /** Opens (creating if needed) the answer file at `path`; `:memory:` keeps answers for the process's life. */
  static open(path: string, clock: Clock): SqliteAnswerStore {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    try {
      db.pragma(`busy_timeout = ${ANSWER_STORE_BUSY_TIMEOUT_MS}`);
      db.pragma('journal_mode = WAL');
      const store = new SqliteAnswerStore(db, clock);
      store.deleteExpired.run(clock.now());
      return store;
    } catch (error) {
      db.close();
      throw error;
    }
  }

  keep(invocationId: string, answer: unknown, retentionMs: number): void {
    const now = this.clock.now();
    this.deleteExpired.run(now);
    this.insert.run(invocationId, JSON.stringify(answer), now + retentionMs);
  }

  find(invocationId: string): { readonly answer: unknown } | undefined {
    const row = this.select.get(invocationId);
    if (row === undefined) return undefined;
    if (row.expires_at_ms <= this.clock.now()) {
      this.deleteOne.run(invocationId);
      return undefined;
    }
    return { answer: JSON.parse(row.answer) as unknown };
  }

  /** How many entries the file holds, expired or not (for tests and operators). */
  size(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM answers').get() as { n: number }).n;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
