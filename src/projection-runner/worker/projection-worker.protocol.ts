import type { ProjectionRunnerStatus } from '../live-projections';
import type { ProjectionsModule } from '../projections-module';

/**
 * The messages between ProjectionWorkerHost (on the service's event loop) and the projection worker
 * thread. Positions travel as bigint and errors as Error: both survive the structured clone.
 */

/** What the worker is started with (its `workerData`). */
export interface ProjectionWorkerData {
  /** The embedded log's SQLite file; the worker reads it through its own connection. */
  readonly logPath: string;
  /** The service's SqliteEventStore.unsyncedMarker: the worker reads no commit still waiting for its fsync. */
  readonly logUnsyncedMarker: SharedArrayBuffer;
  /** The read-model SQLite file the worker writes. */
  readonly readModelPath: string;
  /** Where the worker loads the projections to run from. */
  readonly projections: ProjectionsModule;
  readonly liveBatchIntervalMs?: number;
  /** How often the worker copies the log's write-ahead log into its database file, in milliseconds. */
  readonly logCheckpointIntervalMs: number;
  /** The worker thread's nice value, set on Linux only (DEFAULT_PROJECTION_WORKER_NICE). */
  readonly nice: number;
}

export type HostMessage =
  /** The service committed to the log up to `position`: read it now. */
  | { readonly kind: 'head'; readonly position: bigint }
  /** Someone waits for `position`: commit what is queued without holding the live batch window open. */
  | { readonly kind: 'hurry'; readonly position: bigint; readonly projections?: readonly string[] }
  | { readonly kind: 'stop' };

export type WorkerMessage =
  /** Caught up and following; sent once. */
  | { readonly kind: 'started'; readonly status: ProjectionRunnerStatus }
  /** After each committed transaction, and whenever the state changes. */
  | { readonly kind: 'status'; readonly status: ProjectionRunnerStatus }
  /** Start failed; the worker is ending. */
  | { readonly kind: 'start-failed'; readonly error: Error; readonly status: ProjectionRunnerStatus }
  | { readonly kind: 'log'; readonly level: 'log' | 'warn' | 'error'; readonly message: string }
  /** Stopped and closed its files; the worker is ending. */
  | { readonly kind: 'stopped'; readonly status: ProjectionRunnerStatus };
