import type { RecordedEvent } from '../../event-store/event-store.port';
import { DocumentWriteError, ProjectionApplyError } from '../projection-runner.errors';
import { assertPageEvents, firstAfter, lowestCheckpoint, type CatchUpPage, type ProjectionTrack } from '../projection-replay';
import { DEFAULT_MAX_CACHED_DOCUMENTS, type SqliteReadModelStore } from '../read-model.store';
import { RebuildDocumentCache } from './rebuild-document-cache';

/** Events read from the log at a time within a page, in events. */
export const REPLAY_CHUNK_EVENTS = 1_000;

/** A page of the log as a group replay reads it. */
export interface ReplayPage {
  /** The page's events that some projection of the group handles, in position order. */
  readonly events: readonly RecordedEvent[];
  /** Events of the log in the page, handled or not. */
  readonly count: number;
  /** Position of the page's last event; undefined for an empty page. */
  readonly lastPosition: bigint | undefined;
}

/** Where a group replay reads the log. */
export interface ReplayPageReader {
  /** The next `maxCount` events of the log after `after` (from the start when undefined). */
  readPage(after: bigint | undefined, maxCount: number): ReplayPage | Promise<ReplayPage>;
}

/** Serialises the commits of replays that write the same read-model file from several threads. */
export interface WriteTurn {
  acquire(): void;
  release(): void;
}

export interface GroupReplayOptions {
  readonly reader: ReplayPageReader;
  /** This replay's own connection to the read-model file. */
  readonly store: SqliteReadModelStore;
  /** Tracks of projections wiped when the rebuild began (their checkpoints undefined); nothing else writes them. */
  readonly tracks: readonly ProjectionTrack[];
  readonly pageEvents: number;
  /** Bound of each projection's changed documents between two commits; default DEFAULT_MAX_CACHED_DOCUMENTS. */
  readonly maxCachedDocuments?: number;
  /** Taken around each commit; default none (a single replay on the file). */
  readonly writeTurn?: WriteTurn;
  /** Checked between pages: true ends the replay early (the checkpoints stay consistent). */
  readonly shouldStop?: () => boolean;
  /** Called after each committed page. */
  readonly onPage?: (page: CatchUpPage) => void;
}

/**
 * Rebuilds a group of projections from position 0, page by page, for a parallel rebuild where each
 * thread replays its own group on its own connection. Unlike `catchUp`, a page is applied with no
 * transaction open, into each projection's RebuildDocumentCache, and serialised; only the writes of
 * the changed documents and the checkpoints happen inside BEGIN IMMEDIATE … COMMIT (and `writeTurn`),
 * so another thread's replay applies its page while this one commits.
 *
 * The guarantees are catchUp's: each commit holds a page's documents and the checkpoint of its last
 * event, for every projection of the group, so a crash leaves each one at a committed checkpoint
 * that describes its documents; a projection whose `apply` throws, or that writes a document that
 * cannot be stored, stops at its last committed checkpoint with its fault while the others go on.
 * One difference: when a projection changes `maxCachedDocuments` documents within a page, the events
 * applied so far are committed at once (a checkpoint inside the page) instead of being flushed into
 * an open transaction. Returns the number of events read from the log.
 */
export async function replayProjectionGroup(options: GroupReplayOptions): Promise<number> {
  assertPageEvents(options.pageEvents);
  const maxCachedDocuments = options.maxCachedDocuments ?? DEFAULT_MAX_CACHED_DOCUMENTS;
  if (!Number.isInteger(maxCachedDocuments) || maxCachedDocuments < 1) {
    throw new RangeError(`maxCachedDocuments must be a positive integer, got ${maxCachedDocuments}`);
  }
  const tracks = options.tracks;
  for (const track of tracks) {
    if (track.upTo !== undefined) throw new RangeError(`A group replay rebuilds to the log's end; ${track.projection.name} has a target`);
  }
  const caches = tracks.map((track) => new RebuildDocumentCache(track.projection.name, options.store, maxCachedDocuments));
  const commit = (position: bigint): void => commitChanges(options, tracks, caches, position);
  let eventsRead = 0;
  for (;;) {
    if (options.shouldStop?.() === true) return eventsRead;
    const pending = tracks.filter((track) => track.fault === undefined);
    if (pending.length === 0) return eventsRead;
    // The page is read in chunks, each applied before the next is read: parsed events then die young,
    // which spares the garbage collector copying a whole page of them from scavenge to scavenge.
    let pageCount = 0;
    let lastPosition = lowestCheckpoint(pending);
    while (pageCount < options.pageEvents) {
      const wanted = Math.min(REPLAY_CHUNK_EVENTS, options.pageEvents - pageCount);
      const chunk = await options.reader.readPage(lastPosition, wanted);
      if (chunk.count === 0 || chunk.lastPosition === undefined) break;
      applyEvents(chunk.events, tracks, caches, commit);
      pageCount += chunk.count;
      lastPosition = chunk.lastPosition;
      if (chunk.count < wanted) break;
    }
    if (pageCount === 0 || lastPosition === undefined) return eventsRead;
    commit(lastPosition);
    eventsRead += pageCount;
    options.onPage?.({ events: pageCount, lastPosition });
    if (pageCount < options.pageEvents) return eventsRead;
  }
}

/** Applies events of a page to each healthy track's cache, committing early when a cache is full. */
function applyEvents(
  events: readonly RecordedEvent[],
  tracks: readonly ProjectionTrack[],
  caches: readonly RebuildDocumentCache[],
  commit: (position: bigint) => void,
): void {
  const count = tracks.length;
  // Each track's first event after its checkpoint, as an index, so the loop compares integers, not
  // bigints. An early commit inside the loop moves checkpoints only up to the event just applied.
  const first = new Int32Array(count);
  for (let index = 0; index < count; index += 1) {
    const checkpoint = tracks[index]!.checkpoint;
    first[index] = checkpoint === undefined ? 0 : firstAfter(events, checkpoint);
  }
  for (let eventIndex = 0; eventIndex < events.length; eventIndex += 1) {
    const event = events[eventIndex]!;
    let full = false;
    for (let index = 0; index < count; index += 1) {
      const track = tracks[index]!;
      if (eventIndex < first[index]! || track.fault !== undefined || !track.handles.has(event.type)) continue;
      const cache = caches[index]!;
      try {
        track.projection.apply(event, cache);
      } catch (error) {
        track.fault = { error: new ProjectionApplyError(track.projection.name, event.position, event.type, error), position: event.position, eventType: event.type };
        cache.discard();
        continue;
      }
      if (cache.full) full = true;
    }
    if (full) commit(event.position);
  }
}

/**
 * Serialises each healthy track's changes, then writes them and moves every healthy checkpoint to
 * `position` in one transaction. A document that cannot be stored faults its projection alone.
 */
function commitChanges(
  options: GroupReplayOptions,
  tracks: readonly ProjectionTrack[],
  caches: readonly RebuildDocumentCache[],
  position: bigint,
): void {
  const committing: number[] = [];
  for (let index = 0; index < tracks.length; index += 1) {
    const track = tracks[index]!;
    if (track.fault !== undefined) continue;
    try {
      caches[index]!.serialise();
    } catch (error) {
      if (!(error instanceof DocumentWriteError)) throw error;
      track.fault = { error };
      caches[index]!.discard();
      continue;
    }
    committing.push(index);
  }
  if (committing.length === 0) return;
  options.writeTurn?.acquire();
  try {
    options.store.write((session) => {
      for (const index of committing) {
        const track = tracks[index]!;
        session.expectCheckpoint(track.projection.name, track.checkpoint);
        caches[index]!.write(session);
        session.setCheckpoint(track.projection.name, track.projection.version, position);
      }
    });
  } catch (error) {
    for (const index of committing) caches[index]!.discard();
    throw error;
  } finally {
    options.writeTurn?.release();
  }
  for (const index of committing) {
    caches[index]!.committed();
    tracks[index]!.checkpoint = position;
  }
}
