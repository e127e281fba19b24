import type { SqliteSynchronous } from '../../event-store/sqlite/sqlite-synchronous';

/**
 * The messages between rebuildProjectionsInParallel and its rebuild worker threads. Positions travel
 * as bigint (the structured clone keeps them); errors as SerialisedError, because the clone would
 * keep neither their class nor their fields.
 */

/** What a rebuild worker is started with (its `workerData`). */
export interface RebuildWorkerData {
  /** The embedded log's SQLite file, read through the worker's own read-only connection. */
  readonly logPath: string;
  /** The read-model SQLite file the worker writes its projections into. */
  readonly readModelPath: string;
  readonly synchronous: SqliteSynchronous;
  /** Module (absolute path, resolvable by `require`) and export holding the projections. */
  readonly projectionsModule: string;
  readonly projectionsExport: string;
  /** The projections this worker rebuilds, by name, with the versions the parent reset them to. */
  readonly projections: readonly { readonly name: string; readonly version: number }[];
  readonly pageEvents: number;
  readonly maxCachedDocuments: number | undefined;
  /** SharedRebuildState's buffer: the write turn and the stop flag. */
  readonly shared: SharedArrayBuffer;
}

export interface SerialisedError {
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  /** Set for a ProjectionApplyError: what its `apply` threw. */
  readonly cause?: SerialisedError;
}

export interface WorkerProjectionResult {
  readonly name: string;
  readonly checkpoint: bigint | undefined;
  readonly fault?: {
    readonly error: SerialisedError;
    readonly position?: bigint;
    readonly eventType?: string;
  };
}

export type RebuildWorkerMessage =
  /** After each committed page. */
  | { readonly kind: 'page'; readonly events: number; readonly lastPosition: bigint }
  /** The replay ended (the log's end, every projection faulted, or a stop) and its files are closed. */
  | { readonly kind: 'done'; readonly events: number; readonly projections: readonly WorkerProjectionResult[] }
  /** Anything else than a projection's fault (I/O, a second writer); the worker is ending. */
  | { readonly kind: 'failed'; readonly error: SerialisedError };

export function serialiseError(error: unknown): SerialisedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), stack: undefined };
  const cause = (error as { cause?: unknown }).cause;
  return {
    name: error.name,
    message: error.message,
    stack: error.stack,
    ...(cause === undefined ? {} : { cause: serialiseError(cause) }),
  };
}

/** An Error with the serialised one's name, message and stack (its class is not restored). */
export function deserialiseError(serialised: SerialisedError): Error {
  const error = new Error(serialised.message);
  error.name = serialised.name;
  if (serialised.stack !== undefined) error.stack = serialised.stack;
  return error;
}
