import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteAnswerStore } from '../../src/answer-store/sqlite-answer-store';
import { VirtualClock } from '../../src/runtime';

const RETENTION_MS = 60_000;

/** Lets the callbacks queued for the end of this turn run (event-loop order, not a wall-clock wait). */
const endOfTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SqliteAnswerStore (answers kept for keyed repeats, outside the log)', () => {
  let directory: string;
  let path: string;
  let clock: VirtualClock;
  let errors: Array<{ error: unknown; answers: number }>;
  let store: SqliteAnswerStore;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-answers-'));
    path = join(directory, 'answers.sqlite');
    clock = new VirtualClock({ startMs: Date.parse('2026-03-01T09:00:00.000Z'), autoAdvance: false });
    errors = [];
    store = SqliteAnswerStore.open(path, clock, (error, answers) => errors.push({ error, answers }));
  });

  afterEach(() => {
    store.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const rowsOnFile = (): string[] => {
    const db = new Database(path, { readonly: true });
    try {
      return (db.prepare('SELECT invocation_id FROM answers ORDER BY invocation_id').pluck().all() as string[]);
    } finally {
      db.close();
    }
  };

  it('writes the answers kept in one turn together, at the end of the turn', async () => {
    for (let index = 0; index < 5; index++) store.keep(`inv-${index}`, { value: index }, RETENTION_MS);
    expect(rowsOnFile()).toEqual([]);
    await endOfTurn();
    expect(rowsOnFile()).toEqual(['inv-0', 'inv-1', 'inv-2', 'inv-3', 'inv-4']);
  });

  it('finds an answer kept this turn before it is written', () => {
    store.keep('inv-1', { value: 42 }, RETENTION_MS);
    expect(store.find('inv-1')).toEqual({ answer: { value: 42 } });
  });

  it('writes what is still queued when it closes', () => {
    store.keep('inv-1', { value: 42 }, RETENTION_MS);
    store.close();
    expect(rowsOnFile()).toEqual(['inv-1']);
  });

  it('deletes expired answers when it next writes, and never hands one back', async () => {
    store.keep('inv-old', { value: 1 }, RETENTION_MS);
    await endOfTurn();
    await clock.advance(RETENTION_MS);
    expect(store.find('inv-old')).toBeUndefined();
    store.keep('inv-new', { value: 2 }, RETENTION_MS);
    await endOfTurn();
    expect(rowsOnFile()).toEqual(['inv-new']);
  });

  it('reports a write that failed, with how many answers it lost, instead of throwing at the end of a turn', async () => {
    // Another connection holds the write lock past the busy timeout: the batch cannot be written.
    const other = new Database(path);
    other.pragma('busy_timeout = 0');
    store.close();
    store = SqliteAnswerStore.open(path, clock, (error, answers) => errors.push({ error, answers }), 0);
    other.exec('BEGIN IMMEDIATE');
    try {
      store.keep('inv-1', { value: 1 }, RETENTION_MS);
      store.keep('inv-2', { value: 2 }, RETENTION_MS);
      await endOfTurn();
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(errors).toHaveLength(1);
    expect(errors[0]!.answers).toBe(2);
    expect(String(errors[0]!.error)).toMatch(/locked|busy/i);
    expect(rowsOnFile()).toEqual([]);
  });
});
