import type { RecordedEvent } from '../event-store/event-store.port';

/**
 * Options of a document write. The index key is part of each write: a `put` without it clears the
 * document's index key, so a document's key is always the one its latest version was written with.
 */
export interface PutOptions {
  /**
   * A secondary string key (e.g. an organization id) by which readers can list a collection's
   * documents: `SqliteReadModelStore.list(projection, collection, { indexKey })`.
   */
  readonly indexKey?: string;
}

/**
 * The read-model writes a projection can make while the runner applies one event. Every call is
 * synchronous and joins the runner's open SQLite transaction: the writes, and the checkpoint of the
 * last applied position, commit together or not at all.
 *
 * Documents are JSON values scoped to the projection, addressed by (collection, id). Treat a document
 * returned by `get` as immutable and `put` a new value to change it: the transaction keeps the latest
 * value in a write-through cache and serialises it once, when the transaction commits.
 */
export interface ReadModelTx {
  /** The document's current value within this transaction (own earlier writes included), or undefined. */
  get<T = unknown>(collection: string, id: string): T | undefined;
  /** Creates or replaces a document. The value must be JSON-serialisable (no bigint, no cycle). */
  put(collection: string, id: string, document: unknown, options?: PutOptions): void;
  /** Removes a document; removing one that does not exist is a no-op. */
  delete(collection: string, id: string): void;
}

/**
 * A projection: a pure handler that folds events of the log into read-model documents.
 *
 * It must be deterministic and do no I/O of its own (no clock, no network, no other store): the
 * runner replays it from position 0 on a rebuild and `audit verify` compares that replay with the live
 * read model, so the same events must always yield the same documents, whatever the batch boundaries.
 * An `apply` that throws stops that projection at its last committed checkpoint (see ProjectionRunner).
 *
 * `Event` lets a projection narrow the events it receives to its own union of recorded events.
 */
export interface Projection<Event extends RecordedEvent = RecordedEvent> {
  /** Unique among the runner's projections; the namespace of its documents and its checkpoint. */
  readonly name: string;
  /**
   * Bump it whenever `apply` or the document shape changes: on start, a stored checkpoint with another
   * version wipes the projection's documents and rebuilds them from position 0.
   */
  readonly version: number;
  /** Event types `apply` receives; the runner skips the others (but still advances the checkpoint). */
  readonly handles: readonly Event['type'][];
  /** Folds one event into the read model, through `tx` only. */
  apply(event: Event, tx: ReadModelTx): void;
}
