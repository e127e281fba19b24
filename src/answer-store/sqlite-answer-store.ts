import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Clock } from '../runtime';
import type { AnswerStore } from './answer-store.port';

/** How long a write waits for another connection's lock on the answer file, in ms. */
const ANSWER_STORE_BUSY_TIMEOUT_MS = 5_000;

/** Told when queued answers could not be written (and so are lost), with how many. */
export type AnswerWriteErrorHandler = (error: unknown, answers: number) => void;

/** One answer `keep` queued for the next write. */
interface QueuedAnswer {
  readonly answerJson: string;
  readonly expiresAtMs: number;
}

/**
 * The answer store in its own SQLite file (beside the log for the embedded store, one per instance
 * with EventStoreDB). Expiry is read on the injected clock: every write deletes whatever has expired,
 * and `find` deletes the expired entry it meets, so no answer outlives its period by more than the
 * next write or read.
 *
 * **Batched writes.** `keep` queues the answer and the queue is written in one transaction at the end
 * of the event-loop turn (or before a `find`, `size` or `close` that needs it). Each SQLite
 * transaction costs a fixed number of file-lock system calls, which dominated an invocation's share
 * of this store when every answer was its own two transactions. An answer still queued when the
 * process dies is lost; that costs only a later keyed repeat its answer (it then says the answer is
 * no longer available), never anything the log accounts for.
 */
export class SqliteAnswerStore implements AnswerStore {
  private readonly queued = new Map<string, QueuedAnswer>();
  private writeScheduled = false;
  private readonly insert: Statement<[string, string, number]>;
  private readonly select: Statement<[string], { answer: string; expires_at_ms: number }>;
  private readonly deleteOne: Statement<[string]>;
  private readonly deleteExpired: Statement<[number]>;

  private readonly writeAll: (queued: readonly (readonly [string, QueuedAnswer])[], now: number) => void;

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly clock: Clock,
    private readonly onWriteError: AnswerWriteErrorHandler,
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
    this.writeAll = db.transaction((queued: readonly (readonly [string, QueuedAnswer])[], now: number) => {
      this.deleteExpired.run(now);
      for (const [invocationId, { answerJson, expiresAtMs }] of queued) this.insert.run(invocationId, answerJson, expiresAtMs);
    });
  }

  /**
   * Opens (creating if needed) the answer file at `path`; `:memory:` keeps answers for the process's
   * life. `busyTimeoutMs`: how long a write waits for another connection's lock before it fails.
   */
  static open(path: string, clock: Clock, onWriteError: AnswerWriteErrorHandler, busyTimeoutMs = ANSWER_STORE_BUSY_TIMEOUT_MS): SqliteAnswerStore {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    try {
      db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      db.pragma('journal_mode = WAL');
      const store = new SqliteAnswerStore(db, clock, onWriteError);
      store.deleteExpired.run(clock.now());
      return store;
    } catch (error) {
      db.close();
      throw error;
    }
  }

  keep(invocationId: string, answer: unknown, retentionMs: number): void {
    this.queued.set(invocationId, { answerJson: JSON.stringify(answer), expiresAtMs: this.clock.now() + retentionMs });
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    setImmediate(this.writeQueued);
  }

  /**
   * Writes the queued answers now (and deletes what has expired), in one transaction. A failed write
   * (disk full, the file locked past its timeout) loses those answers and is reported, never thrown:
   * it runs at the end of a turn, where nobody could catch it.
   */
  readonly writeQueued = (): void => {
    this.writeScheduled = false;
    if (this.queued.size === 0 || !this.db.open) return;
    const queued = [...this.queued];
    this.queued.clear();
    try {
      this.writeAll(queued, this.clock.now());
    } catch (error) {
      this.onWriteError(error, queued.length);
    }
  };

  find(invocationId: string): { readonly answer: unknown } | undefined {
    this.writeQueued();
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
    this.writeQueued();
    return (this.db.prepare('SELECT COUNT(*) AS n FROM answers').get() as { n: number }).n;
  }

  close(): void {
    this.writeQueued();
    if (this.db.open) this.db.close();
  }
}
