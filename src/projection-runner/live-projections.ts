import type { ProjectionFault } from './projection-replay';

/** What the runner is doing. */
export type ProjectionRunnerState = 'idle' | 'catching-up' | 'live' | 'rebuilding' | 'stopped' | 'failed';

/** Where a projection stands, as the runner sees it. */
export interface ProjectionStatus {
  readonly name: string;
  readonly version: number;
  /** Last position committed for it; undefined when none yet. */
  readonly checkpoint: bigint | undefined;
  /** Set when its `apply` failed: it stays at `checkpoint` until the runner restarts or rebuilds it. */
  readonly fault: ProjectionFault | undefined;
}

export interface ProjectionRunnerStatus {
  readonly state: ProjectionRunnerState;
  /** The error that stopped the whole runner (state `failed`), e.g. the read-model file failing. */
  readonly error: Error | undefined;
  readonly projections: readonly ProjectionStatus[];
}

/** How far a projection is behind the log. */
export interface ProjectionLag {
  readonly projection: string;
  readonly checkpoint: bigint | undefined;
  readonly headPosition: bigint | undefined;
  /**
   * `headPosition − checkpoint` in log positions (0 for an empty log; an unset checkpoint counts
   * as 0). The embedded store numbers events 1, 2, 3…, so there it is a number of events; EventStoreDB
   * positions are byte offsets, so there it is only "0 when caught up, growing when behind".
   */
  readonly lag: bigint;
  readonly faulted: boolean;
}

export interface WaitOptions {
  /** Wait for these projections only; default every one. */
  readonly projections?: readonly string[];
  /** Rejects the wait with the signal's reason, e.g. `AbortSignal.timeout(ms)` for an HTTP read. */
  readonly signal?: AbortSignal;
}

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
