import { AppendResult, InvalidEventStoreInputError } from './event-store.port';

/**
 * How a store that keeps each append's expected revision on its first event (the embedded SQLite
 * store and the PostgreSQL store) tells a retried append from a different one: the ids, their order
 * and the expected revision must match a stored append exactly. Only the reads differ per store.
 */

/** An append being written: its stream, its events' ids in order, and its expected revision as stored. */
export interface AppendToReplay {
  readonly streamName: string;
  readonly events: ReadonlyArray<{ readonly id: string }>;
  readonly expectedText: string;
}

/** Where an event id is stored: its stream, its revision, and the expected revision if it starts an append. */
export interface StoredEventPlace {
  readonly streamName: string;
  readonly revision: bigint;
  readonly batchExpected: string | null;
}

/** A stored event from a revision on, in revision order. */
export interface StoredBatchRow {
  readonly id: string;
  readonly batchExpected: string | null;
  readonly position: bigint;
}

/**
 * When the batch's first id is stored at `stored`: undefined if that is where the same append starts
 * with the same expected revision (the stored rows must then be compared, replayFromStoredRows),
 * otherwise the error saying what differs.
 */
export function storedAppendMismatch(pending: AppendToReplay, stored: StoredEventPlace): Error | undefined {
  const firstId = pending.events[0]!.id;
  const { streamName, revision, batchExpected } = stored;
  if (streamName !== pending.streamName) {
    return new InvalidEventStoreInputError(
      'events[0].id',
      `${firstId} is already stored in stream "${streamName}" at revision ${revision}; an event id is unique across the store`,
    );
  }
  if (batchExpected === null) {
    return new InvalidEventStoreInputError(
      'events[0].id',
      `${firstId} is already stored inside an earlier append to "${streamName}" (revision ${revision}), not at its start: the ids only partly match a stored append`,
    );
  }
  if (batchExpected !== pending.expectedText) {
    return new InvalidEventStoreInputError(
      'options.expectedRevision',
      `this batch was first appended to "${streamName}" with expected revision ${batchExpected}; re-appending it with ${pending.expectedText} is a different append, not a retry`,
    );
  }
  return undefined;
}

/**
 * The original result of the stored append starting at `revision`, given the stream's rows from
 * there (at least the batch's length plus one, when there are that many): the same ids in order, and
 * the append ending where the batch ends. Otherwise the error saying the ids only partly match.
 */
export function replayFromStoredRows(pending: AppendToReplay, revision: bigint, rows: readonly StoredBatchRow[]): AppendResult | Error {
  const events = pending.events;
  const partial = new InvalidEventStoreInputError(
    'events',
    `the ids only partly match the append stored at "${pending.streamName}" revision ${revision}: re-append exactly the original batch, or use new ids`,
  );
  for (let index = 0; index < events.length; index++) {
    const row = rows[index];
    if (row === undefined || row.id !== events[index]!.id || (index > 0 && row.batchExpected !== null)) return partial;
  }
  const following = rows[events.length];
  if (following !== undefined && following.batchExpected === null) return partial;
  return { nextExpectedRevision: revision + BigInt(events.length - 1), position: rows[events.length - 1]!.position };
}

/** The refusal of a batch whose event at `index` is already stored (and is not a retry of that append). */
export function duplicateEventIdError(id: string, index: number, stored: StoredEventPlace | undefined): Error {
  const where = stored ? ` in stream "${stored.streamName}" at revision ${stored.revision}` : '';
  return new InvalidEventStoreInputError(
    `events[${index}].id`,
    `${id} is already stored${where}: a batch whose ids partly exist is neither a new append nor a retry of one`,
  );
}
