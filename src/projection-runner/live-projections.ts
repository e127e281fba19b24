import type { ProjectionLag, ProjectionRunnerStatus, WaitOptions } from './projection-runner';

/**
 * What the service asks of whatever keeps its read models current, whether the projections run on
 * the event loop (ProjectionRunner) or on a worker thread (ProjectionWorkerHost). Also the Nest
 * injection token of that service.
 */
export abstract class LiveProjections {
  /** Catches up with the log, then follows it; resolves once caught up with the log as it was. */
  abstract start(): Promise<void>;
  /** Stops following (what was received is committed) and rejects pending waits. Idempotent. */
  abstract stop(): Promise<void>;
  /**
   * Resolves when the selected projections have applied the log up to `position`; rejects with
   * ProjectionFaultedError, ProjectionRunnerStoppedError or the signal's reason.
   */
  abstract waitFor(position: bigint, options?: WaitOptions): Promise<void>;
  /** Resolves when the selected projections have applied the log up to its head as of this call. */
  abstract caughtUp(options?: WaitOptions): Promise<void>;
  /** Each projection's distance from the log's head. */
  abstract lag(): Promise<ProjectionLag[]>;
  /** A synchronous snapshot of the state and of each projection (health checks, logs). */
  abstract status(): ProjectionRunnerStatus;
}
