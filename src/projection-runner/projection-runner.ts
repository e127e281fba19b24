import type { EventStore, RecordedEvent, Subscription } from '../event-store/event-store.port';
import {
  ProjectionFaultedError,
  ProjectionRunnerStoppedError,
  ReadModelConflictError,
  messageOf,
} from './projection-runner.errors';
import {
  DEFAULT_CATCH_UP_PAGE_EVENTS,
  applyBatch,
  assertPageEvents,
  catchUp,
  lowestCheckpoint,
  trackOf,
  type ProjectionTrack,
} from './projection-replay';
import type { LiveProjections, ProjectionLag, ProjectionRunnerState, ProjectionRunnerStatus, ProjectionStatus, WaitOptions } from './live-projections';
import { PositionWaiters } from './position-waiters';
import type { Projection } from './projection.types';
import { assertProjectionName, type SqliteReadModelStore } from './read-model.store';

/**
 * Most events applied in one transaction while following live; beyond it the batch commits at once.
 * As large as a catch-up page: a live commit costs a roughly fixed set of pages whatever its size
 * (every organization's index pages in every collection indexed by organization, about 8 MiB of WAL
 * in the full-path bench), so when the worker falls behind, a backlog cut into 1,000-event
 * transactions cost it more than the documents did and it fell further behind.
 */
export const DEFAULT_LIVE_BATCH_MAX_EVENTS = DEFAULT_CATCH_UP_PAGE_EVENTS;
/**
 * Least time between two live transactions while nobody waits on the read model, in milliseconds.
 * Under load the events of that window share one transaction, so a document that several of them
 * change (an invocation's ten events) is read, serialised and written once instead of once per
 * event: live commits were half of the full-path profile. Idle, the first event still commits at
 * once; a caller in `waitFor`/`caughtUp` is never kept waiting for the window.
 *
 * 250 rather than 50: each commit also rewrites a set of pages whatever its size (about 87 pages of
 * 8 KiB for 10 gateway calls at 16 connections), so a longer window spreads them over more calls.
 * Measured through the gateway (bench/README.md "The read models' window: 250 ms"): the projection
 * worker's CPU 0.69–0.76 × and the service's 0.91–0.93 ×, latency unchanged; 1,000 ms saved no more.
 * A reader that does not wait may find the read models a window behind the log (at saturation, where
 * the worker yields its core to the calls, about half a second at p90); one that waits has the
 * window's events applied at once, a few milliseconds more under load (p90 10 against 7 ms).
 */
export const DEFAULT_LIVE_BATCH_INTERVAL_MS = 250;

/** A transaction the runner committed. */
export interface CommittedBatch {
  readonly phase: 'catch-up' | 'live' | 'rebuild';
  /** Events in the batch (read from the log, handled or not). */
  readonly events: number;
  /** Position of the batch's last event. */
  readonly lastPosition: bigint;
}

/** Rebuild progress, reported after each committed page. */
export interface RebuildProgress {
  /** Events read from the log since the rebuild began. */
  readonly eventsDone: number;
  /** Position of the last event applied. */
  readonly position: bigint;
  /**
   * The log's head when the rebuild began. With the embedded store positions count events, so this is
   * the total and `eventsDone / targetPosition` the fraction done; with EventStoreDB use
   * `position / targetPosition`.
   */
  readonly targetPosition: bigint | undefined;
}

export interface RebuildOptions {
  /** Projections to rebuild; default every one. */
  readonly projections?: readonly string[];
  readonly onProgress?: (progress: RebuildProgress) => void;
}

export interface RebuildResult {
  /** Events read from the log. */
  readonly events: number;
  readonly projections: readonly ProjectionStatus[];
}

/** The subset of a logger the runner uses (Nest's Logger fits). */
export interface ProjectionRunnerLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface ProjectionRunnerOptions {
  readonly eventStore: EventStore;
  readonly store: SqliteReadModelStore;
  readonly projections: readonly Projection[];
  /** Events per page and per transaction while catching up or rebuilding; default DEFAULT_CATCH_UP_PAGE_EVENTS. */
  readonly catchUpPageEvents?: number;
  /** Most events per transaction while live; default DEFAULT_LIVE_BATCH_MAX_EVENTS. */
  readonly liveBatchMaxEvents?: number;
  /** Least time between live transactions while nobody waits, in ms; default DEFAULT_LIVE_BATCH_INTERVAL_MS (0: every turn). */
  readonly liveBatchIntervalMs?: number;
  /** Bound of each projection's write-through cache within a transaction, in documents. */
  readonly maxCachedDocuments?: number;
  readonly logger?: ProjectionRunnerLogger;
  /** Called after each committed transaction (progress output, metrics). Must not throw. */
  readonly onCommit?: (batch: CommittedBatch) => void;
}

const SILENT_LOGGER: ProjectionRunnerLogger = { log() {}, warn() {}, error() {} };

/**
 * Runs projections over the log into a SQLite read-model store.
 *
 * `start()` rebuilds projections whose version changed, catches every projection up from its own
 * checkpoint by paging `readAll` (many events per transaction), then follows live through
 * `subscribeToAll` from the lowest checkpoint (one transaction per live batch). Each transaction holds
 * a batch's document writes AND the checkpoints they lead to, so a crash at any instant leaves every
 * projection exactly at a committed checkpoint: on restart no event is applied twice and none is lost.
 *
 * The runner knows no domain and no transport: it moves events from the port to pure projections.
 */
export class ProjectionRunner implements LiveProjections {
  private readonly tracks: ProjectionTrack[];
  private readonly byName = new Map<string, ProjectionTrack>();
  private readonly catchUpPageEvents: number;
  private readonly liveBatchMaxEvents: number;
  private readonly liveBatchIntervalMs: number;
  private readonly logger: ProjectionRunnerLogger;
  private state: ProjectionRunnerState = 'idle';
  private failure: Error | undefined;
  private subscription: Subscription | undefined;
  private liveQueue: RecordedEvent[] = [];
  /** The pending live flush (an immediate, or a timer holding the batch window open); undefined when none. */
  private scheduledFlush: { readonly cancel: () => void; readonly delayed: boolean } | undefined;
  /** When the last live transaction ended (performance.now() milliseconds). */
  private lastLiveFlushAtMs = Number.NEGATIVE_INFINITY;
  private stopRequested = false;
  /** The start or rebuild in progress; start/rebuild/stop run one at a time. */
  private activity: Promise<unknown> = Promise.resolve();
  private readonly waiters = new PositionWaiters<readonly ProjectionTrack[]>();
  /** Faulted projections already logged, so each fault is logged once. */
  private readonly reportedFaults = new WeakSet<ProjectionTrack>();

  constructor(private readonly options: ProjectionRunnerOptions) {
    this.catchUpPageEvents = options.catchUpPageEvents ?? DEFAULT_CATCH_UP_PAGE_EVENTS;
    assertPageEvents(this.catchUpPageEvents);
    this.liveBatchMaxEvents = options.liveBatchMaxEvents ?? DEFAULT_LIVE_BATCH_MAX_EVENTS;
    if (!Number.isInteger(this.liveBatchMaxEvents) || this.liveBatchMaxEvents < 1) {
      throw new RangeError(`liveBatchMaxEvents must be a positive integer, got ${this.liveBatchMaxEvents}`);
    }
    this.liveBatchIntervalMs = options.liveBatchIntervalMs ?? DEFAULT_LIVE_BATCH_INTERVAL_MS;
    if (!Number.isFinite(this.liveBatchIntervalMs) || this.liveBatchIntervalMs < 0) {
      throw new RangeError(`liveBatchIntervalMs must be a non-negative number, got ${this.liveBatchIntervalMs}`);
    }
    this.logger = options.logger ?? SILENT_LOGGER;
    this.tracks = options.projections.map((projection) => {
      assertProjection(projection);
      if (this.byName.has(projection.name)) {
        throw new Error(`Two projections are named "${projection.name}"`);
      }
      const stored = options.store.checkpoint(projection.name);
      const track = trackOf(projection, stored?.version === projection.version ? stored.position : undefined);
      this.byName.set(projection.name, track);
      return track;
    });
  }

  /**
   * Rebuilds projections whose stored version differs, catches up, then follows live. Resolves once
   * caught up with the log as it was and following; callers that must not wait can skip the await and
   * use `caughtUp()` or `waitFor()` later.
   */
  start(): Promise<void> {
    return this.exclusive(async () => {
      if (this.state !== 'idle' && this.state !== 'stopped' && this.state !== 'failed') {
        throw new Error(`Cannot start a projection runner that is ${this.state}`);
      }
      this.stopRequested = false;
      this.failure = undefined;
      this.state = 'catching-up';
      try {
        this.reconcileVersions();
        await this.catchUpTracks(this.tracks.filter(isHealthy), 'catch-up');
        if (this.stopRequested) return;
        this.follow();
      } catch (error) {
        this.fail(error);
        throw error;
      }
    });
  }

  /** Stops following, commits the events already received, and rejects pending waits. Idempotent. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    await this.activity.catch(() => undefined);
    await this.exclusive(async () => {
      await this.unfollow();
      if (this.state !== 'failed') this.state = 'stopped';
      this.waiters.rejectAll(new ProjectionRunnerStoppedError('stop() was called'));
    });
  }

  /**
   * Resolves when every selected projection has applied the log up to `position` (e.g. the position
   * an append returned, for read-your-writes). Rejects with ProjectionFaultedError if one of them is
   * stopped by an error, ProjectionRunnerStoppedError if the runner stops, or the signal's reason.
   */
  waitFor(position: bigint, options: WaitOptions = {}): Promise<void> {
    let tracks: ProjectionTrack[];
    try {
      tracks = this.select(options.projections);
      if (reached(tracks, position)) return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.state === 'failed') {
      return Promise.reject(new ProjectionRunnerStoppedError(messageOf(this.failure)));
    }
    const waiting = this.waiters.add(position, tracks, options.signal);
    // Someone now reads: commit what is queued without holding the batch window open.
    if (this.scheduledFlush?.delayed === true) this.scheduleLiveFlush();
    return waiting;
  }

  /** Resolves when the selected projections have applied the log up to its head as of this call. */
  async caughtUp(options: WaitOptions = {}): Promise<void> {
    const head = await this.options.eventStore.headPosition();
    if (head === undefined) {
      this.select(options.projections).forEach(assertNotFaulted);
      return;
    }
    await this.waitFor(head, options);
  }

  /** Each projection's distance from the log's head. */
  async lag(): Promise<ProjectionLag[]> {
    const headPosition = await this.options.eventStore.headPosition();
    return this.tracks.map((track) => ({
      projection: track.projection.name,
      checkpoint: track.checkpoint,
      headPosition,
      lag: lagOf(this.options.eventStore, headPosition, track.checkpoint),
      faulted: track.fault !== undefined,
    }));
  }

  /** A synchronous snapshot of the runner and its projections (for health checks and logs). */
  status(): ProjectionRunnerStatus {
    return { state: this.state, error: this.failure, projections: this.tracks.map(statusOf) };
  }

  /**
   * Rebuilds projections from position 0: wipes their documents and checkpoint, replays the log up to
   * its end, and reports progress after each page. While the runner is live, live following pauses
   * during the rebuild and resumes after it (readers see the rebuilt projections fill up); otherwise
   * the runner is left as it was. A rebuild also clears a projection's fault and tries it again.
   */
  rebuild(options: RebuildOptions = {}): Promise<RebuildResult> {
    return this.exclusive(async () => {
      const selected = this.select(options.projections);
      const previous = this.state;
      if (previous === 'catching-up' || previous === 'rebuilding') {
        throw new Error(`Cannot rebuild while the runner is ${previous}`);
      }
      const wasLive = previous === 'live';
      this.stopRequested = false;
      if (wasLive) await this.unfollow();
      this.state = 'rebuilding';
      try {
        for (const track of selected) {
          this.options.store.resetProjection(track.projection.name, track.projection.version);
          track.checkpoint = undefined;
          track.fault = undefined;
        }
        this.logger.log(`Rebuilding projections ${selected.map((track) => track.projection.name).join(', ')}`);
        const targetPosition = await this.options.eventStore.headPosition();
        let eventsDone = 0;
        // While live, the others ride along so they keep up with the log during the rebuild.
        const tracks = wasLive ? this.tracks.filter(isHealthy) : selected;
        const events = await this.catchUpTracks(tracks, 'rebuild', (page) => {
          eventsDone += page.events;
          options.onProgress?.({ eventsDone, position: page.lastPosition, targetPosition });
        });
        if (this.stopRequested) {
          // Every committed page is consistent; the rest is done by the next start (or rebuild).
          this.state = 'stopped';
          throw new ProjectionRunnerStoppedError('stop() was called during the rebuild');
        }
        if (wasLive) this.follow();
        else this.state = previous === 'failed' ? 'stopped' : previous;
        return { events, projections: selected.map(statusOf) };
      } catch (error) {
        if (!(error instanceof ProjectionRunnerStoppedError)) this.fail(error);
        throw error;
      }
    });
  }

  /** Reloads every checkpoint from the store and clears faults, so a (re)start tries every projection again. */
  private reconcileVersions(): void {
    for (const track of this.tracks) {
      const { name, version } = track.projection;
      track.fault = undefined;
      const stored = this.options.store.checkpoint(name);
      if (stored !== undefined && stored.version === version) {
        track.checkpoint = stored.position;
        continue;
      }
      if (stored !== undefined) {
        this.logger.warn(`Projection "${name}" changed from version ${stored.version} to ${version}: rebuilding it`);
      }
      this.options.store.resetProjection(name, version);
      track.checkpoint = undefined;
    }
  }

  private async catchUpTracks(
    tracks: readonly ProjectionTrack[],
    phase: CommittedBatch['phase'],
    onPage?: (page: { events: number; lastPosition: bigint }) => void,
  ): Promise<number> {
    return catchUp({
      eventStore: this.options.eventStore,
      store: this.options.store,
      tracks,
      pageEvents: this.catchUpPageEvents,
      maxCachedDocuments: this.options.maxCachedDocuments,
      shouldStop: () => this.stopRequested,
      onPage: (page) => {
        this.afterCommit();
        onPage?.(page);
        this.notifyCommit({ phase, ...page });
      },
    });
  }

  private follow(): void {
    const healthy = this.tracks.filter(isHealthy);
    this.state = 'live';
    if (healthy.length === 0) return;
    const after = lowestCheckpoint(healthy);
    this.subscription = this.options.eventStore.subscribeToAll((event) => this.receiveLive(event), {
      ...(after === undefined ? {} : { after }),
      onError: (error, willRetry) => this.subscriptionError(error, willRetry),
    });
  }

  /**
   * The store's own report on the live subscription: a transient loss is logged (the store
   * resubscribes from the last event it delivered); a permanent one fails the runner, so readiness
   * reports it instead of the projections silently standing still.
   */
  private subscriptionError(error: Error, willRetry: boolean): void {
    if (willRetry) {
      this.logger.warn(`Live subscription lost (${error.message}); resubscribing after the last event received`);
      return;
    }
    this.flushLive();
    this.subscription = undefined;
    if (this.state !== 'failed') this.fail(new Error(`The live subscription to the event store ended: ${error.message}`));
  }

  private async unfollow(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = undefined;
    try {
      await subscription?.stop();
    } catch (error) {
      this.logger.warn(`Live subscription ended with an error: ${messageOf(error)}`);
    }
    this.flushLive();
  }

  private receiveLive(event: RecordedEvent): void {
    if (this.state !== 'live') return;
    this.liveQueue.push(event);
    if (this.liveQueue.length >= this.liveBatchMaxEvents) {
      this.flushLive();
      return;
    }
    if (this.scheduledFlush === undefined) this.scheduleLiveFlush();
  }

  /**
   * Events delivered in the same turn of the event loop always share one transaction; under load
   * (the previous live transaction less than liveBatchIntervalMs ago) the batch stays open until the
   * window ends, unless someone waits on the read model.
   */
  private scheduleLiveFlush(): void {
    this.scheduledFlush?.cancel();
    const waitMs = this.lastLiveFlushAtMs + this.liveBatchIntervalMs - performance.now();
    if (waitMs <= 0 || this.waiters.size > 0) {
      const immediate = setImmediate(() => this.flushLive());
      this.scheduledFlush = { cancel: () => clearImmediate(immediate), delayed: false };
    } else {
      const timer = setTimeout(() => this.flushLive(), waitMs);
      this.scheduledFlush = { cancel: () => clearTimeout(timer), delayed: true };
    }
  }

  private flushLive(): void {
    this.scheduledFlush?.cancel();
    this.scheduledFlush = undefined;
    if (this.liveQueue.length === 0) return;
    const events = this.liveQueue;
    this.liveQueue = [];
    // Not checkpointed, so a failed runner re-reads them on its next start.
    if (this.state === 'failed') return;
    try {
      applyBatch(this.options.store, events, this.tracks, { maxCachedDocuments: this.options.maxCachedDocuments });
    } catch (error) {
      if (error instanceof ReadModelConflictError && !this.stopRequested) {
        this.resumeFromStoredCheckpoints(error);
        return;
      }
      this.fail(error);
      // Not awaited: this may run inside the subscription's handler, which stop() waits for.
      this.subscription?.stop().catch(() => undefined);
      this.subscription = undefined;
      return;
    }
    this.lastLiveFlushAtMs = performance.now();
    this.afterCommit();
    this.notifyCommit({ phase: 'live', events: events.length, lastPosition: events[events.length - 1]!.position });
  }

  /**
   * The read-model file was written by someone else (a rebuild run beside this service despite its
   * lock, a restored copy): its stored checkpoints are the truth now. Rather than answer 503 until a
   * restart, stop following, re-read every checkpoint, catch up from there and follow again; the
   * batch that met the conflict was not committed, and the catch-up reads its events again. Waiters
   * stay pending and are answered when the read models reach their position.
   */
  private resumeFromStoredCheckpoints(conflict: ReadModelConflictError): void {
    this.logger.warn(`${conflict.message} Re-reading the stored checkpoints and catching up from them.`);
    this.state = 'catching-up';
    const subscription = this.subscription;
    this.subscription = undefined;
    this.liveQueue = [];
    // Not awaited here: this may run inside the subscription's handler, which stop() waits for.
    void this.exclusive(async () => {
      await subscription?.stop().catch(() => undefined);
      this.liveQueue = [];
      if (this.stopRequested) return;
      try {
        this.reconcileVersions();
        await this.catchUpTracks(this.tracks.filter(isHealthy), 'catch-up');
        // The stored checkpoints may already be where a waiter waits, with nothing left to apply.
        this.afterCommit();
        if (this.stopRequested) return;
        this.follow();
      } catch (error) {
        this.fail(error);
      }
    });
  }

  private afterCommit(): void {
    for (const track of this.tracks) {
      if (track.fault !== undefined && !this.reportedFaults.has(track)) {
        this.reportedFaults.add(track);
        this.logger.error(`Projection "${track.projection.name}" stopped: ${track.fault.error.message}`);
      }
    }
    this.waiters.settle((position, tracks) => reached(tracks, position));
  }

  private notifyCommit(batch: CommittedBatch): void {
    try {
      this.options.onCommit?.(batch);
    } catch (error) {
      this.logger.warn(`onCommit threw: ${messageOf(error)}`);
    }
  }

  private fail(error: unknown): void {
    this.failure = error instanceof Error ? error : new Error(String(error));
    this.state = 'failed';
    this.logger.error(`Projection runner failed: ${this.failure.message}`);
    this.waiters.rejectAll(new ProjectionRunnerStoppedError(this.failure.message));
  }

  private select(names: readonly string[] | undefined): ProjectionTrack[] {
    if (names === undefined) return this.tracks;
    return names.map((name) => {
      const track = this.byName.get(name);
      if (track === undefined) throw new Error(`Unknown projection "${name}"`);
      return track;
    });
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = this.activity.catch(() => undefined).then(work);
    this.activity = next;
    return next;
  }
}

function assertProjection(projection: Projection): void {
  assertProjectionName(projection.name);
  if (!Number.isInteger(projection.version) || projection.version < 0) {
    throw new RangeError(`Projection "${projection.name}": version must be a non-negative integer`);
  }
  if (!Array.isArray(projection.handles) || projection.handles.length === 0) {
    throw new RangeError(`Projection "${projection.name}" handles no event type`);
  }
  if (typeof projection.apply !== 'function') {
    throw new TypeError(`Projection "${projection.name}" has no apply function`);
  }
}

function isHealthy(track: ProjectionTrack): boolean {
  return track.fault === undefined;
}

function assertNotFaulted(track: ProjectionTrack): void {
  if (track.fault !== undefined) throw new ProjectionFaultedError(track.projection.name, track.fault.error);
}

/** True when every track has reached `position`; throws for a faulted track, which never will. */
function reached(tracks: readonly ProjectionTrack[], position: bigint): boolean {
  for (const track of tracks) {
    assertNotFaulted(track);
    if (track.checkpoint === undefined || track.checkpoint < position) return false;
  }
  return true;
}

function lagOf(store: EventStore, head: bigint | undefined, checkpoint: bigint | undefined): bigint {
  if (head === undefined) return 0n;
  if (store.positionDistance !== undefined) return store.positionDistance(checkpoint, head);
  const lag = head - (checkpoint ?? 0n);
  return lag > 0n ? lag : 0n;
}

function statusOf(track: ProjectionTrack): ProjectionStatus {
  return {
    name: track.projection.name,
    version: track.projection.version,
    checkpoint: track.checkpoint,
    fault: track.fault,
  };
}
