import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { SqliteEventStore } from '../../event-store/sqlite/sqlite-event-store';
import { startModuleWorker } from '../../worker/start-module-worker';
import type { LiveProjections, ProjectionLag, ProjectionRunnerStatus, ProjectionStatus, WaitOptions } from '../live-projections';
import type { ProjectionRunnerLogger } from '../projection-runner';
import { ProjectionFaultedError, ProjectionRunnerStoppedError, messageOf } from '../projection-runner.errors';
import { PositionWaiters } from '../position-waiters';
import type { Projection } from '../projection.types';
import type { ProjectionsModule } from '../projections-module';
import type { SqliteReadModelStore } from '../read-model.store';
import type { HostMessage, ProjectionWorkerData, WorkerMessage } from './projection-worker.protocol';

/** How often the worker checkpoints the log's write-ahead log, in milliseconds. */
export const DEFAULT_LOG_CHECKPOINT_INTERVAL_MS = 1_000;
/** How long `stop()` lets the worker finish its last commit before terminating it, in milliseconds. */
export const WORKER_STOP_TIMEOUT_MS = 10_000;
/** Wait before starting a worker again after it died, in milliseconds; doubled after each failed restart. */
export const DEFAULT_WORKER_RESTART_DELAY_MS = 1_000;
/** Longest wait between two restarts of a worker that keeps dying, in milliseconds. */
export const MAX_WORKER_RESTART_DELAY_MS = 30_000;
/**
 * The projection worker thread's nice value on Linux (0 to 19; higher yields more): where the service's
 * main thread and the worker want the same core, the calls go first and the read models follow. Measured
 * on this project's machine (bench/README.md "The projection worker at a lower priority"): at 64
 * gateway connections 1.06 and 1.10 × the calls/s of nice 0 and 0.77 and 0.61 × the added p99, the read
 * models at most about 800 events behind over 20 s and 1,556 (about 0.4 s) over a ten-minute soak,
 * without falling further; below saturation no difference. Elsewhere a thread's
 * priority cannot be set apart from its process's, and the worker runs at the process's.
 */
export const DEFAULT_PROJECTION_WORKER_NICE = 10;
/** Highest nice value the projection worker may be given (`LEDGER_PROJECTIONS_NICE`): Linux's lowest priority. */
export const MAX_PROJECTION_WORKER_NICE = 19;

export interface ProjectionWorkerHostOptions {
  /** The service's embedded log: its head position, and a signal after each of its commits. */
  readonly eventStore: SqliteEventStore;
  /** Its file, which the worker opens with a connection of its own. */
  readonly logPath: string;
  /** The read-model store the service reads (the worker writes the same file). */
  readonly store: SqliteReadModelStore;
  /** The projections, and where the worker loads the same list from (functions cannot cross to a thread). */
  readonly projections: readonly Projection[];
  readonly projectionsModule: ProjectionsModule;
  /** The runner's live batch window (see DEFAULT_LIVE_BATCH_INTERVAL_MS). */
  readonly liveBatchIntervalMs?: number;
  readonly logCheckpointIntervalMs?: number;
  /** First wait before restarting a worker that died after it had started (default DEFAULT_WORKER_RESTART_DELAY_MS). */
  readonly restartDelayMs?: number;
  /** The worker thread's nice value on Linux (default DEFAULT_PROJECTION_WORKER_NICE; 0: the process's own). */
  readonly workerNice?: number;
  readonly logger?: ProjectionRunnerLogger;
}

const SILENT_LOGGER: ProjectionRunnerLogger = { log() {}, warn() {}, error() {} };

/**
 * Runs the projections on a worker thread, so the service's event loop spends nothing on read models:
 * the worker reads the log back through its own SQLite connection, applies the projections and
 * commits the read-model file, and reports its checkpoints after each commit. The service keeps its own
 * (reading) connection to that file; a checkpoint the worker reported is committed, so a read made
 * after `waitFor` resolves sees the documents it waited for.
 *
 * Only for the embedded store in a file (the worker needs a file both connections can open).
 */
export class ProjectionWorkerHost implements LiveProjections {
  private worker: Worker | undefined;
  private snapshot: ProjectionRunnerStatus;
  private readonly waiters = new PositionWaiters<readonly string[]>();
  private unregisterCommits: (() => void) | undefined;
  /** The newest head committed this turn and not yet told to the worker (see noteHead). */
  private pendingHead: bigint | undefined;
  private stopping: Promise<void> | undefined;
  private readonly logger: ProjectionRunnerLogger;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly firstRestartDelayMs: number;
  private nextRestartDelayMs: number;

  constructor(private readonly options: ProjectionWorkerHostOptions) {
    this.logger = options.logger ?? SILENT_LOGGER;
    this.firstRestartDelayMs = options.restartDelayMs ?? DEFAULT_WORKER_RESTART_DELAY_MS;
    this.nextRestartDelayMs = this.firstRestartDelayMs;
    this.snapshot = {
      state: 'idle',
      error: undefined,
      projections: options.projections.map((projection) => {
        const stored = options.store.checkpoint(projection.name);
        return {
          name: projection.name,
          version: projection.version,
          checkpoint: stored?.version === projection.version ? stored.position : undefined,
          fault: undefined,
        };
      }),
    };
  }

  /**
   * Starts the worker; resolves once it has caught up with the log and follows it. A worker that dies
   * after that is started again (after restartDelayMs, doubling up to MAX_WORKER_RESTART_DELAY_MS while
   * restarts fail); meanwhile the state is `failed` and waits are refused.
   */
  start(): Promise<void> {
    if (this.worker !== undefined) return Promise.reject(new Error(`Cannot start a projection worker that is ${this.snapshot.state}`));
    this.stopping = undefined;
    const data: ProjectionWorkerData = {
      logPath: this.options.logPath,
      logUnsyncedMarker: this.options.eventStore.unsyncedMarker,
      readModelPath: this.options.store.path,
      projections: this.options.projectionsModule,
      liveBatchIntervalMs: this.options.liveBatchIntervalMs,
      logCheckpointIntervalMs: this.options.logCheckpointIntervalMs ?? DEFAULT_LOG_CHECKPOINT_INTERVAL_MS,
      nice: this.options.workerNice ?? DEFAULT_PROJECTION_WORKER_NICE,
    };
    const worker = startModuleWorker(join(__dirname, 'projection.worker'), { workerData: data });
    this.worker = worker;
    this.snapshot = { ...this.snapshot, state: 'catching-up', error: undefined };
    this.unregisterCommits = this.options.eventStore.onCommitted((position) => this.noteHead(position));
    return new Promise<void>((resolve, reject) => {
      let started = false;
      worker.on('message', (message: WorkerMessage) => {
        switch (message.kind) {
          case 'log':
            this.logger[message.level](message.message);
            return;
          case 'status':
            this.update(message.status);
            return;
          case 'started':
            started = true;
            this.update(message.status);
            resolve();
            return;
          case 'start-failed':
            this.update(message.status);
            this.fail(message.error);
            reject(message.error);
            return;
          case 'stopped':
            this.update(message.status);
            return;
        }
      });
      worker.on('error', (error) => {
        this.fail(error);
        if (!started) reject(error);
      });
      worker.on('exit', (code) => {
        this.detachWorker();
        if (this.stopping !== undefined) return;
        const error = new Error(`The projection worker exited (code ${code})`);
        if (this.snapshot.state !== 'failed') this.fail(error);
        if (!started) reject(error);
        // A worker that never started fails its start() instead: the caller decides.
        else this.scheduleRestart();
      });
    });
  }

  stop(): Promise<void> {
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    this.stopping ??= this.shutDown();
    return this.stopping;
  }

  waitFor(position: bigint, options: WaitOptions = {}): Promise<void> {
    let names: readonly string[];
    try {
      names = this.select(options.projections);
      if (this.reached(names, position)) return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.snapshot.state === 'failed' || this.worker === undefined) {
      return Promise.reject(new ProjectionRunnerStoppedError(messageOf(this.snapshot.error ?? 'the projection worker is not running')));
    }
    const waiting = this.waiters.add(position, names, options.signal);
    this.post({ kind: 'hurry', position, projections: options.projections });
    return waiting;
  }

  async caughtUp(options: WaitOptions = {}): Promise<void> {
    const head = await this.options.eventStore.headPosition();
    if (head === undefined) {
      this.reached(this.select(options.projections), 0n);
      return;
    }
    await this.waitFor(head, options);
  }

  async lag(): Promise<ProjectionLag[]> {
    const headPosition = await this.options.eventStore.headPosition();
    return this.snapshot.projections.map((projection) => {
      const lag = headPosition === undefined ? 0n : headPosition - (projection.checkpoint ?? 0n);
      return {
        projection: projection.name,
        checkpoint: projection.checkpoint,
        headPosition,
        lag: lag > 0n ? lag : 0n,
        faulted: projection.fault !== undefined,
      };
    });
  }

  status(): ProjectionRunnerStatus {
    return this.snapshot;
  }

  private async shutDown(): Promise<void> {
    const worker = this.worker;
    if (worker !== undefined) {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      this.post({ kind: 'stop' });
      const timer = setTimeout(() => {
        this.logger.warn(`The projection worker did not stop within ${WORKER_STOP_TIMEOUT_MS} ms: terminating it`);
        void worker.terminate();
      }, WORKER_STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    this.detachWorker();
    if (this.snapshot.state !== 'failed') this.snapshot = { ...this.snapshot, state: 'stopped' };
    this.waiters.rejectAll(new ProjectionRunnerStoppedError('stop() was called'));
  }

  private scheduleRestart(): void {
    const delayMs = this.nextRestartDelayMs;
    this.nextRestartDelayMs = Math.min(Math.max(1, delayMs) * 2, MAX_WORKER_RESTART_DELAY_MS);
    this.logger.warn(`Restarting the projection worker in ${delayMs} ms`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping !== undefined) return;
      this.start().then(
        () => {
          this.nextRestartDelayMs = this.firstRestartDelayMs;
          this.logger.log('The projection worker restarted and caught up');
        },
        (error: unknown) => {
          this.logger.error(`The projection worker did not restart: ${messageOf(error)}`);
          if (this.stopping === undefined) this.scheduleRestart();
        },
      );
    }, delayMs);
  }

  private post(message: HostMessage): void {
    this.worker?.postMessage(message);
  }

  /**
   * Tells the worker of the log's new head once per event-loop turn, however many group commits the
   * turn made: a message to another thread costs more than the commit notice is worth, and the
   * worker reads everything up to the last head anyway.
   */
  private noteHead(position: bigint): void {
    const scheduled = this.pendingHead !== undefined;
    this.pendingHead = position;
    if (scheduled) return;
    setImmediate(() => {
      const head = this.pendingHead;
      this.pendingHead = undefined;
      if (head !== undefined) this.post({ kind: 'head', position: head });
    });
  }

  private detachWorker(): void {
    this.unregisterCommits?.();
    this.unregisterCommits = undefined;
    this.worker = undefined;
  }

  private update(status: ProjectionRunnerStatus): void {
    this.snapshot = status;
    if (status.state === 'failed') {
      this.waiters.rejectAll(new ProjectionRunnerStoppedError(messageOf(status.error)));
      return;
    }
    this.waiters.settle((position, names) => this.reached(names, position));
  }

  private fail(error: Error): void {
    if (this.snapshot.state !== 'failed') this.logger.error(`Projection worker failed: ${error.message}`);
    this.snapshot = { ...this.snapshot, state: 'failed', error };
    this.waiters.rejectAll(new ProjectionRunnerStoppedError(error.message));
  }

  private select(names: readonly string[] | undefined): readonly string[] {
    if (names === undefined) return this.snapshot.projections.map((projection) => projection.name);
    for (const name of names) {
      if (!this.snapshot.projections.some((projection) => projection.name === name)) throw new Error(`Unknown projection "${name}"`);
    }
    return names;
  }

  /** True when every named projection reached `position`; throws for a faulted one, which never will. */
  private reached(names: readonly string[], position: bigint): boolean {
    let all = true;
    for (const name of names) {
      const projection = this.snapshot.projections.find((candidate) => candidate.name === name) as ProjectionStatus;
      if (projection.fault !== undefined) throw new ProjectionFaultedError(name, projection.fault.error);
      if (projection.checkpoint === undefined || projection.checkpoint < position) all = false;
    }
    return all;
  }
}
