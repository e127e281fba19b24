import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { countSqliteEventTypes } from '../../event-store/sqlite/sqlite-event-store';
import { startModuleWorker } from '../../worker/start-module-worker';
import type { RebuildProgress } from '../projection-runner';
import { ProjectionApplyError } from '../projection-runner.errors';
import { rebuildProjections, type RebuildIntoOptions, type RebuildIntoResult, type RebuiltProjection } from '../projection-rebuild';
import { DEFAULT_CATCH_UP_PAGE_EVENTS, assertPageEvents, type ProjectionFault } from '../projection-replay';
import type { Projection } from '../projection.types';
import type { ProjectionsModule } from '../projections-module';
import {
  deserialiseError,
  type RebuildWorkerData,
  type RebuildWorkerMessage,
  type WorkerProjectionResult,
} from './parallel-rebuild.protocol';
import { SharedRebuildState } from './shared-write-turn';

/** Most worker threads one rebuild starts. */
export const MAX_REBUILD_WORKERS = 8;
/**
 * Young generation of a rebuild worker's heap, in MiB. The documents a page changes live until its
 * commit; with V8's default (16 MiB semi-spaces at most) scavenges come often and copy them again
 * and again: garbage collection was a fifth of a rebuild's CPU profile. Measured from 16 to 512 MiB
 * on the read-side bench's log, 96 to 192 MiB were fastest; 16 MiB was 40 % slower, 512 MiB too.
 */
export const REBUILD_WORKER_YOUNG_GENERATION_MIB = 192;
/**
 * Events at the log's end counted by type to weigh each projection's share of a rebuild (rebuildGroups):
 * enough to see the traffic's mix, few enough to count in tens of milliseconds (counting reads every
 * row: on the read-side bench's log, with two shared cores under heavy load, the last 100,000 took half
 * a second and the whole 1,000,000 seven).
 */
export const REBUILD_WEIGHT_SAMPLE_EVENTS = 10_000;

export interface ParallelRebuildOptions extends RebuildIntoOptions {
  /** The embedded log's file. Without it (an EventStoreDB log) the rebuild runs on this thread. */
  readonly logPath: string | undefined;
  /** Where the worker threads load `projections` from, since functions cannot be posted to them. */
  readonly projectionsModule: ProjectionsModule;
  /**
   * Worker threads; default the machine's available parallelism, at most one per projection and
   * MAX_REBUILD_WORKERS. Fewer than two runs the sequential `rebuildProjections` on this thread.
   */
  readonly workers?: number;
  /**
   * Projection names per worker, each projection in exactly one group (one group: on this thread);
   * default derived from the log (`rebuildGroups`).
   */
  readonly groups?: readonly (readonly string[])[];
}

/**
 * `rebuildProjections` on several cores: the projections are split into groups, and each group is
 * rebuilt from position 0 by a worker thread that reads the log through its own connection (parsing
 * only the event types its projections handle) and writes its projections into the same read-model
 * file. Each worker applies a page with no transaction open and holds the file's write lock only to
 * store the page's changed documents and its checkpoints (see replayProjectionGroup), so the workers
 * take turns at committing while the others apply.
 *
 * The result is `rebuildProjections`'s, document for document and checkpoint for checkpoint (a
 * projection that faults inside a page where its cache filled up is the exception: see
 * replayProjectionGroup), and so are the guarantees: every commit holds a page's documents with its
 * checkpoints, a crash leaves each projection at a committed checkpoint, a fault stops its projection
 * alone, and any other failure (a worker's thread dying, I/O) stops every worker after its current
 * page and rejects. The store's secondary indexes are dropped for the load when they index nothing
 * and built as soon as the first group is done (`SqliteReadModelStore.deferIndexes`). Progress
 * reports the position every group has committed. Runs on this thread instead when it cannot share
 * the work: no log file (EventStoreDB), a `:memory:` read-model store, one projection, or one core.
 */
export async function rebuildProjectionsInParallel(options: ParallelRebuildOptions): Promise<RebuildIntoResult> {
  const pageEvents = options.pageEvents ?? DEFAULT_CATCH_UP_PAGE_EVENTS;
  assertPageEvents(pageEvents);
  const explicit = options.groups === undefined ? undefined : explicitGroups(options.projections, options.groups);
  if (!canRunInParallel(options, explicit)) return rebuildProjections(options);
  for (const projection of options.projections) options.store.resetProjection(projection.name, projection.version);
  const groups = explicit ?? groupProjections(options.projections, workerCount(options), countSqliteEventTypes(options.logPath!, REBUILD_WEIGHT_SAMPLE_EVENTS));
  const targetPosition = await options.eventStore.headPosition();
  const shared = new SharedRebuildState();
  let indexesDeferred = options.store.deferIndexes();
  const restoreIndexes = (): void => {
    if (!indexesDeferred) return;
    indexesDeferred = false;
    // Building them takes the write lock for a while: in turn, like a commit.
    shared.acquire();
    try {
      options.store.restoreIndexes();
    } finally {
      shared.release();
    }
  };
  let results: DoneMessage[];
  try {
    // Built as soon as one group is done, they cost only the other groups' remaining commits.
    results = await runWorkers(options, groups, pageEvents, targetPosition, shared, restoreIndexes);
  } finally {
    restoreIndexes();
  }
  const byName = new Map<string, WorkerProjectionResult>();
  let events = 0;
  for (const result of results) {
    events = Math.max(events, result.events);
    for (const projection of result.projections) byName.set(projection.name, projection);
  }
  return { events, projections: options.projections.map((projection) => rebuiltOf(byName.get(projection.name)!)) };
}

/**
 * Runs a worker per group to its end; when one fails, stops the others after their current page.
 * Resolves once every worker has reported and its thread has exited.
 */
async function runWorkers(
  options: ParallelRebuildOptions,
  groups: readonly Projection[][],
  pageEvents: number,
  targetPosition: bigint | undefined,
  shared: SharedRebuildState,
  onGroupDone: () => void,
): Promise<DoneMessage[]> {
  const progress = new CombinedProgress(groups.length, targetPosition, options.onProgress);
  const workers = groups.map((group, index) =>
    startWorker(
      {
        logPath: options.logPath!,
        readModelPath: options.store.path,
        synchronous: options.store.synchronous,
        projectionsModule: options.projectionsModule.path,
        projectionsExport: options.projectionsModule.exportName,
        projections: group.map(({ name, version }) => ({ name, version })),
        pageEvents,
        maxCachedDocuments: options.maxCachedDocuments,
        shared: shared.buffer,
      },
      (message) => progress.page(index, message.events, message.lastPosition),
    ),
  );
  const results = workers.map((worker, index) =>
    worker.done.then(
      (result) => {
        progress.finished(index);
        onGroupDone();
        return result;
      },
      (error: unknown) => {
        // The others stop after their current page, each at a committed checkpoint.
        shared.stop();
        throw error;
      },
    ),
  );
  const settled = await Promise.allSettled(results);
  await Promise.all(workers.map((worker) => worker.exited));
  const failed = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return (settled as PromiseFulfilledResult<DoneMessage>[]).map((outcome) => outcome.value);
}

/**
 * Splits projections into at most `workers` groups of about equal work, a projection's work being the
 * events of the log it applies: for each type it handles, the events of that type in `eventsByType`
 * (without counts, one per type it handles). Reading the log costs every group the same, since each
 * worker reads all of it; what differs is the applying. Heaviest first, each into the lightest group
 * so far (on a tie, the one with fewer members, then the first). Projections keep their relative
 * order within a group; no group is empty.
 *
 * This is how the rebuild groups are derived rather than measured by hand: over the read-side bench's
 * log it puts invocations with attempts, and balances with explanations and routing budgets, as the
 * CPU time of each measured alone did (test/projection-runner/rebuild/rebuild-groups.spec.ts).
 */
export function groupProjections(
  projections: readonly Projection[],
  workers: number,
  eventsByType?: ReadonlyMap<string, number>,
): Projection[][] {
  const weightOf = (projection: Projection): number =>
    eventsByType === undefined
      ? projection.handles.length
      : projection.handles.reduce((events, type) => events + (eventsByType.get(type) ?? 0), 0);
  const weights = new Map(projections.map((projection) => [projection, weightOf(projection)]));
  const bins = Array.from({ length: Math.max(1, Math.min(workers, projections.length)) }, () => ({
    load: 0,
    members: [] as Projection[],
  }));
  const heaviestFirst = [...projections].sort((left, right) => weights.get(right)! - weights.get(left)!);
  for (const projection of heaviestFirst) {
    const lightest = bins.reduce((best, bin) =>
      bin.load < best.load || (bin.load === best.load && bin.members.length < best.members.length) ? bin : best,
    );
    lightest.load += weights.get(projection)!;
    lightest.members.push(projection);
  }
  const order = new Map(projections.map((projection, index) => [projection, index]));
  return bins
    .map((bin) => bin.members.sort((left, right) => order.get(left)! - order.get(right)!))
    .filter((members) => members.length > 0);
}

/**
 * The groups rebuildProjectionsInParallel splits `projections` into when given none, by name: one per
 * worker (see ParallelRebuildOptions.workers), weighed by the events of each type among the last
 * REBUILD_WEIGHT_SAMPLE_EVENTS of the log at `logPath` (groupProjections).
 */
export function rebuildGroups(options: Pick<ParallelRebuildOptions, 'projections' | 'workers'> & { readonly logPath: string }): string[][] {
  const eventsByType = countSqliteEventTypes(options.logPath, REBUILD_WEIGHT_SAMPLE_EVENTS);
  return groupProjections(options.projections, workerCount(options), eventsByType).map((group) => group.map(({ name }) => name));
}

/** False when the rebuild must run on this thread. */
function canRunInParallel(options: ParallelRebuildOptions, explicit: readonly Projection[][] | undefined): boolean {
  if (options.logPath === undefined || options.store.path === ':memory:' || options.projections.length < 2) return false;
  return (explicit?.length ?? workerCount(options)) >= 2;
}

function workerCount(options: Pick<ParallelRebuildOptions, 'workers'>): number {
  const workers = options.workers ?? availableParallelism();
  if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`workers must be a positive integer, got ${workers}`);
  return Math.min(workers, MAX_REBUILD_WORKERS);
}

function explicitGroups(projections: readonly Projection[], groups: readonly (readonly string[])[]): Projection[][] {
  const byName = new Map(projections.map((projection) => [projection.name, projection]));
  const seen = new Set<string>();
  const resolved = groups.map((group) =>
    group.map((name) => {
      const projection = byName.get(name);
      if (projection === undefined) throw new RangeError(`groups names "${name}", which is not among the projections rebuilt`);
      if (seen.has(name)) throw new RangeError(`groups name "${name}" twice`);
      seen.add(name);
      return projection;
    }),
  );
  const missing = projections.filter((projection) => !seen.has(projection.name)).map((projection) => projection.name);
  if (missing.length > 0) throw new RangeError(`groups leave out ${missing.join(', ')}`);
  if (groups.length > MAX_REBUILD_WORKERS) throw new RangeError(`At most ${MAX_REBUILD_WORKERS} groups, got ${groups.length}`);
  return resolved.filter((group) => group.length > 0);
}

type DoneMessage = Extract<RebuildWorkerMessage, { kind: 'done' }>;
type PageMessage = Extract<RebuildWorkerMessage, { kind: 'page' }>;

interface StartedWorker {
  /** Its result, as soon as it reports it; rejects with its failure, or its thread's. */
  readonly done: Promise<DoneMessage>;
  /** Settles (never rejects) when its thread has exited. */
  readonly exited: Promise<void>;
}

function startWorker(data: RebuildWorkerData, onPage: (message: PageMessage) => void): StartedWorker {
  const worker = startModuleWorker(join(__dirname, 'projection-rebuild.worker'), {
    workerData: data,
    resourceLimits: { maxYoungGenerationSizeMb: REBUILD_WORKER_YOUNG_GENERATION_MIB },
  });
  let settle: { resolve: (result: DoneMessage) => void; reject: (error: Error) => void };
  const done = new Promise<DoneMessage>((resolve, reject) => (settle = { resolve, reject }));
  let failure: Error | undefined;
  worker.on('message', (message: RebuildWorkerMessage) => {
    switch (message.kind) {
      case 'page':
        onPage(message);
        return;
      case 'done':
        settle.resolve(message);
        return;
      case 'failed':
        failure ??= deserialiseError(message.error);
        return;
    }
  });
  worker.on('error', (error) => {
    failure ??= error;
  });
  const exited = new Promise<void>((resolve) =>
    worker.on('exit', (code) => {
      // After `done` this changes nothing: a settled promise stays settled.
      settle.reject(failure ?? new Error(`A rebuild worker exited with code ${code} before reporting its result`));
      resolve();
    }),
  );
  return { done, exited };
}

/** Progress over the groups: the events and the position that every group still running has committed. */
class CombinedProgress {
  private readonly events: number[];
  private readonly positions: (bigint | undefined)[];
  private readonly running: boolean[];
  private reported: bigint | undefined;

  constructor(
    groups: number,
    private readonly targetPosition: bigint | undefined,
    private readonly onProgress: ((progress: RebuildProgress) => void) | undefined,
  ) {
    this.events = new Array<number>(groups).fill(0);
    this.positions = new Array<bigint | undefined>(groups).fill(undefined);
    this.running = new Array<boolean>(groups).fill(true);
  }

  page(group: number, events: number, lastPosition: bigint): void {
    this.events[group] = this.events[group]! + events;
    this.positions[group] = lastPosition;
    this.report();
  }

  finished(group: number): void {
    this.running[group] = false;
    this.report();
  }

  private report(): void {
    let events: number | undefined;
    let position: bigint | undefined;
    for (let group = 0; group < this.running.length; group += 1) {
      if (!this.running[group]) continue;
      const at = this.positions[group];
      // A group that has committed nothing yet holds the combined progress at nothing.
      if (at === undefined) return;
      if (position === undefined || at < position) position = at;
      events = events === undefined ? this.events[group]! : Math.min(events, this.events[group]!);
    }
    if (position === undefined) {
      // Every group has finished: the furthest any reached is where the rebuild ended.
      for (let group = 0; group < this.positions.length; group += 1) {
        const at = this.positions[group];
        if (at !== undefined && (position === undefined || at > position)) position = at;
        events = Math.max(events ?? 0, this.events[group]!);
      }
    }
    if (position === undefined || (this.reported !== undefined && position <= this.reported)) return;
    this.reported = position;
    this.onProgress?.({ eventsDone: events ?? 0, position, targetPosition: this.targetPosition });
  }
}

function rebuiltOf(result: WorkerProjectionResult): RebuiltProjection {
  return { name: result.name, checkpoint: result.checkpoint, fault: result.fault === undefined ? undefined : faultOf(result.name, result.fault) };
}

function faultOf(projection: string, fault: NonNullable<WorkerProjectionResult['fault']>): ProjectionFault {
  if (fault.position === undefined || fault.eventType === undefined) return { error: deserialiseError(fault.error) };
  const cause = fault.error.cause === undefined ? deserialiseError(fault.error) : deserialiseError(fault.error.cause);
  const error = new ProjectionApplyError(projection, fault.position, fault.eventType, cause);
  if (fault.error.stack !== undefined) error.stack = fault.error.stack;
  return { error, position: fault.position, eventType: fault.eventType };
}
