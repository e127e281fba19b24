import type { Pool } from 'pg';

/**
 * The PostgreSQL store's schema, as an ordered list of migrations. Migration `n` (1-based) takes a
 * database from schema version `n - 1` to `n`; each runs in the same transaction as the row that
 * records it in `ledger_schema_migrations`, under a transaction-level advisory lock, so several
 * instances starting at once migrate the database once (postgres-migrate.ts). Append new migrations;
 * never edit one that has shipped.
 */
export const POSTGRES_SCHEMA_MIGRATIONS: readonly string[] = [
  // 1. The log and its append function.
  //
  //    `position` orders `$all`: the writing transaction's id (`pg_current_xact_id()`, a 64-bit
  //    xid8) times 2^16 plus the event's index within that transaction. A transaction's id is taken
  //    at its first write, so a transaction that starts after another committed always sorts after
  //    it; two that overlap may commit in either order, which is why `$all` readers stop below the
  //    oldest transaction still running (POSTGRES_READ_BOUND_SQL in postgres-event-store.ts): a
  //    transaction with a lower id that commits later is never skipped.
  //
  //    `batch_expected_revision` is set on the first event of each append only: where an append
  //    starts and what it expected, which an idempotent re-append is compared with (as in SQLite).
  //    `data` and `metadata` are `json`, which keeps the text as written (key order included).
  `CREATE TABLE ledger_events (
     position bigint PRIMARY KEY,
     stream_name text NOT NULL,
     revision bigint NOT NULL CHECK (revision >= 0),
     event_id uuid NOT NULL,
     type text NOT NULL,
     data json NOT NULL,
     metadata json NOT NULL,
     recorded_at timestamptz NOT NULL DEFAULT transaction_timestamp(),
     batch_expected_revision text,
     CONSTRAINT ledger_events_stream_revision_unique UNIQUE (stream_name, revision),
     CONSTRAINT ledger_events_event_id_unique UNIQUE (event_id)
   );

   -- One append, in the caller's transaction: checks the expected revision against the stream's
   -- committed head and writes the batch. Returns ('ok', last revision, last position) or
   -- ('conflict', current revision or NULL, NULL). A writer racing for the same revision waits on the
   -- unique index and then fails with unique_violation; a reused event id fails the same way.
   CREATE FUNCTION ledger_append(
     p_stream text, p_expected text, p_ids uuid[], p_types text[], p_data text[], p_metadata text[]
   ) RETURNS TABLE (outcome text, last_revision bigint, last_position bigint)
   LANGUAGE plpgsql AS $fn$
   DECLARE
     v_current bigint;
     v_base bigint;
     v_first bigint;
     v_count integer := cardinality(p_ids);
   BEGIN
     SELECT max(e.revision) INTO v_current FROM ledger_events e WHERE e.stream_name = p_stream;
     IF NOT (p_expected = 'any'
             OR (p_expected = 'no_stream' AND v_current IS NULL)
             OR (p_expected = 'stream_exists' AND v_current IS NOT NULL)
             OR (p_expected ~ '^[0-9]+$' AND coalesce(v_current = p_expected::bigint, false))) THEN
       RETURN QUERY SELECT 'conflict'::text, v_current, NULL::bigint;
       RETURN;
     END IF;
     v_base := pg_current_xact_id()::text::bigint * 65536;
     -- Several appends may share one transaction: number on after the ones it already wrote.
     SELECT coalesce(max(e.position) + 1, v_base) INTO v_first
       FROM ledger_events e WHERE e.position >= v_base AND e.position < v_base + 65536;
     IF v_first + v_count > v_base + 65536 THEN
       RAISE EXCEPTION 'one transaction may write at most 65536 events' USING ERRCODE = 'program_limit_exceeded';
     END IF;
     INSERT INTO ledger_events (position, stream_name, revision, event_id, type, data, metadata, batch_expected_revision)
       SELECT v_first + u.i - 1, p_stream, coalesce(v_current, -1) + u.i, u.id, u.type, u.data::json, u.metadata::json,
              CASE WHEN u.i = 1 THEN p_expected END
         FROM unnest(p_ids, p_types, p_data, p_metadata) WITH ORDINALITY AS u(id, type, data, metadata, i);
     RETURN QUERY SELECT 'ok'::text, coalesce(v_current, -1) + v_count, v_first + v_count - 1;
   END
   $fn$;`,

  // 2. Appends across streams in one statement.
  //
  //    `ledger_append_together` appends the parts of one appendTogether in order, each through
  //    `ledger_append`, so one call of it on its own is the whole commit: one round trip, where a
  //    transaction on one connection (BEGIN, one call per part, COMMIT) took two more than the parts.
  //    Each part is checked against the stream as the parts before it left it, and the parts' events
  //    take the transaction's positions in the order given, as they did.
  //
  //    All or nothing: the parts run inside a block with an EXCEPTION clause, which is a
  //    subtransaction. A refused part raises inside it (a conflict raises LLC01, a racing writer or a
  //    stored event id raise unique_violation on their own), the handler rolls the block back, so
  //    nothing of the parts before stays written, and answers one row naming the refusal and the part
  //    (0-based, as the caller's list). Anything else propagates and fails the statement. On success
  //    it answers one row per part, in order. The arrays of events are flat, `p_counts` each part's
  //    share. A refusal after a part wrote still commits the (empty) transaction, which the server
  //    flushes as any commit that took a transaction id; a refusal is the rare path.
  `CREATE FUNCTION ledger_append_together(
     p_streams text[], p_expected text[], p_counts integer[],
     p_ids uuid[], p_types text[], p_data text[], p_metadata text[]
   ) RETURNS TABLE (outcome text, part integer, last_revision bigint, last_position bigint)
   LANGUAGE plpgsql AS $fn$
   DECLARE
     v_part integer := 0;
     v_first integer := 1;
     v_last integer;
     v_append record;
     v_revisions bigint[] := '{}';
     v_positions bigint[] := '{}';
     v_constraint text;
   BEGIN
     BEGIN
       WHILE v_part < cardinality(p_streams) LOOP
         v_last := v_first + p_counts[v_part + 1] - 1;
         SELECT * INTO v_append FROM ledger_append(p_streams[v_part + 1], p_expected[v_part + 1], p_ids[v_first:v_last],
                                                   p_types[v_first:v_last], p_data[v_first:v_last], p_metadata[v_first:v_last]);
         IF v_append.outcome <> 'ok' THEN
           RAISE EXCEPTION 'part % of an append across streams conflicts', v_part USING ERRCODE = 'LLC01';
         END IF;
         v_revisions := v_revisions || v_append.last_revision;
         v_positions := v_positions || v_append.last_position;
         v_first := v_last + 1;
         v_part := v_part + 1;
       END LOOP;
     EXCEPTION
       WHEN SQLSTATE 'LLC01' THEN
         -- v_append still holds the refused part's answer: the stream's current revision.
         RETURN QUERY SELECT 'conflict'::text, v_part, v_append.last_revision, NULL::bigint;
         RETURN;
       WHEN unique_violation THEN
         GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
         IF v_constraint = 'ledger_events_stream_revision_unique' THEN
           RETURN QUERY SELECT 'raced'::text, v_part, NULL::bigint, NULL::bigint;
           RETURN;
         ELSIF v_constraint = 'ledger_events_event_id_unique' THEN
           RETURN QUERY SELECT 'duplicate_id'::text, v_part, NULL::bigint, NULL::bigint;
           RETURN;
         END IF;
         RAISE;
     END;
     RETURN QUERY SELECT 'ok'::text, (u.i - 1)::integer, u.revision, u.position
       FROM unnest(v_revisions, v_positions) WITH ORDINALITY AS u(revision, position, i) ORDER BY u.i;
   END
   $fn$;`,
];

/** The schema version this build writes. */
export const POSTGRES_SCHEMA_VERSION = POSTGRES_SCHEMA_MIGRATIONS.length;

/**
 * Key of the transaction-level advisory lock every migration runs under (any fixed 64-bit number;
 * this one spells "llmledg" in ASCII), so instances starting at once migrate one after the other.
 */
export const POSTGRES_MIGRATION_LOCK_KEY = '0x6c6c6d6c656467';

/** Thrown when the database was migrated by a newer build: older code could misread it. */
export class PostgresSchemaTooNewError extends Error {
  override readonly name = 'PostgresSchemaTooNewError';

  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(`The PostgreSQL event store has schema version ${found}; this build supports up to ${supported}. Upgrade llm-ledger.`);
  }
}

/**
 * Brings the database to POSTGRES_SCHEMA_VERSION in one transaction, under an advisory lock, reading
 * the version inside it: of several instances starting at once, the first migrates and the others
 * then find the work done. Returns the version found.
 */
export async function migratePostgresSchema(pool: Pool): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(${BigInt(POSTGRES_MIGRATION_LOCK_KEY)})`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS ledger_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ found: number }>('SELECT coalesce(max(version), 0)::integer AS found FROM ledger_schema_migrations');
    const found = rows[0]!.found;
    if (found > POSTGRES_SCHEMA_VERSION) throw new PostgresSchemaTooNewError(found, POSTGRES_SCHEMA_VERSION);
    for (let version = found; version < POSTGRES_SCHEMA_VERSION; version++) {
      await client.query(POSTGRES_SCHEMA_MIGRATIONS[version]!);
      await client.query('INSERT INTO ledger_schema_migrations (version) VALUES ($1)', [version + 1]);
    }
    await client.query('COMMIT');
    return found;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
