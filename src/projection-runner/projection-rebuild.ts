import type { EventStore } from '../event-store/event-store.port';
import type { RebuildProgress } from './projection-runner';
import { DEFAULT_CATCH_UP_PAGE_EVENTS, catchUp, trackOf, type ProjectionFault, type ProjectionTrack } from './projection-replay';
import type { Projection } from './projection.types';
import { compareReadModels, type ReadModelComparison } from './read-model.compare';
import type { SqliteReadModelStore } from './read-model.store';

/** Times `verifyReadModel` lets the scratch store chase a live read model that keeps moving. */
export const MAX_VERIFY_ROUNDS = 5;

export interface RebuildIntoOptions {
  readonly eventStore: EventStore;
  /** The store to rebuild into (often a scratch store); the projections' documents there are wiped first. */
  readonly store: SqliteReadModelStore;
  readonly projections: readonly Projection[];
  /** Events per page and per transaction; default DEFAULT_CATCH_UP_PAGE_EVENTS. */
  readonly pageEvents?: number;
  readonly maxCachedDocuments?: number;
  readonly onProgress?: (progress: RebuildProgress) => void;
}

export interface RebuiltProjection {
  readonly name: string;
  readonly checkpoint: bigint | undefined;
  /** Set when the projection's `apply` threw: it stopped at `checkpoint`. */
  readonly fault: ProjectionFault | undefined;
}

export interface RebuildIntoResult {
  /** Events read from the log. */
  readonly events: number;
  readonly projections: readonly RebuiltProjection[];
}

/**
 * Rebuilds projections from position 0 into a store, with no runner and no live following: the CLI's
 * `projections rebuild` against a stopped service, and the bench. Reads the log once for all of them.
 */
export async function rebuildProjections(options: RebuildIntoOptions): Promise<RebuildIntoResult> {
  const tracks = options.projections.map((projection) => {
    options.store.resetProjection(projection.name, projection.version);
    return trackOf(projection, undefined);
  });
  const targetPosition = await options.eventStore.headPosition();
  let eventsDone = 0;
  const events = await withIndexesDeferred(options.store, () =>
    catchUp({
      eventStore: options.eventStore,
      store: options.store,
      tracks,
      pageEvents: options.pageEvents ?? DEFAULT_CATCH_UP_PAGE_EVENTS,
      maxCachedDocuments: options.maxCachedDocuments,
      onPage: (page) => {
        eventsDone += page.events;
        options.onProgress?.({ eventsDone, position: page.lastPosition, targetPosition });
      },
    }),
  );
  return { events, projections: tracks.map(rebuiltOf) };
}

/**
 * Runs a bulk load with the store's secondary indexes dropped when they index nothing (the
 * projections just wiped held every indexed document), and builds them once at the end.
 */
export async function withIndexesDeferred<T>(store: SqliteReadModelStore, load: () => Promise<T>): Promise<T> {
  const deferred = store.deferIndexes();
  try {
    return await load();
  } finally {
    if (deferred) store.restoreIndexes();
  }
}

export interface VerifyReadModelOptions {
  readonly eventStore: EventStore;
  /** The read model under audit; only read. */
  readonly live: SqliteReadModelStore;
  /** Where to rebuild (e.g. `openReadModelStore({ path: ':memory:' })` or a temporary file). */
  readonly scratch: SqliteReadModelStore;
  readonly projections: readonly Projection[];
  readonly pageEvents?: number;
  readonly maxCachedDocuments?: number;
  readonly maxDifferencesPerProjection?: number;
  readonly onProgress?: (progress: RebuildProgress) => void;
}

/**
 * `audit verify` for read models: rebuilds each projection from position 0 into `scratch`, up to
 * exactly the position the live read model has reached, and compares the two. If the live model moved
 * on meanwhile (a running service), the scratch store follows it to its new checkpoints, up to
 * MAX_VERIFY_ROUNDS times; a comparison whose checkpoints still differ is reported as such.
 */
export async function verifyReadModel(options: VerifyReadModelOptions): Promise<ReadModelComparison> {
  const names = options.projections.map((projection) => projection.name);
  const tracks = options.projections.map((projection) => {
    options.scratch.resetProjection(projection.name, projection.version);
    return trackOf(projection, undefined);
  });
  const targetPosition = await options.eventStore.headPosition();
  let eventsDone = 0;
  for (let round = 1; ; round += 1) {
    const targets = liveTargets(options.live, options.projections);
    for (const track of tracks) {
      const target = targets.get(track.projection.name);
      if (track.checkpoint !== undefined && (target === undefined || target < track.checkpoint)) {
        // The live model went backwards (it was rebuilt meanwhile): start this one over.
        options.scratch.resetProjection(track.projection.name, track.projection.version);
        track.checkpoint = undefined;
      }
      track.upTo = target;
    }
    await catchUp({
      eventStore: options.eventStore,
      store: options.scratch,
      // A projection the live model has not started has nothing to rebuild.
      tracks: tracks.filter((track) => track.upTo !== undefined),
      pageEvents: options.pageEvents ?? DEFAULT_CATCH_UP_PAGE_EVENTS,
      maxCachedDocuments: options.maxCachedDocuments,
      onPage: (page) => {
        eventsDone += page.events;
        options.onProgress?.({ eventsDone, position: page.lastPosition, targetPosition });
      },
    });
    const moved = liveTargets(options.live, options.projections);
    const stillMoving = tracks.some((track) => moved.get(track.projection.name) !== track.upTo);
    if (stillMoving && round < MAX_VERIFY_ROUNDS) continue;
    return compareReadModels({
      actual: options.live,
      expected: options.scratch,
      projections: names,
      maxDifferencesPerProjection: options.maxDifferencesPerProjection,
    });
  }
}

/** Live checkpoints of the projections at their current version (another version counts as none). */
function liveTargets(live: SqliteReadModelStore, projections: readonly Projection[]): Map<string, bigint | undefined> {
  const targets = new Map<string, bigint | undefined>();
  for (const projection of projections) {
    const checkpoint = live.checkpoint(projection.name);
    targets.set(projection.name, checkpoint?.version === projection.version ? checkpoint.position : undefined);
  }
  return targets;
}

function rebuiltOf(track: ProjectionTrack): RebuiltProjection {
  return { name: track.projection.name, checkpoint: track.checkpoint, fault: track.fault };
}
