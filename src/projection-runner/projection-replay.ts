import type { EventStore, RecordedEvent } from '../event-store/event-store.port';
import { DocumentWriteError, ProjectionApplyError } from './projection-runner.errors';
import type { Projection } from './projection.types';
import type { SqliteReadModelStore } from './read-model.store';

/** Events read from the log per page, and applied per SQLite transaction, while catching up. */
export const DEFAULT_CATCH_UP_PAGE_EVENTS = 10_000;
/** Most events a catch-up page may hold (memory of one page and event-loop stall of one transaction). */
export const MAX_CATCH_UP_PAGE_EVENTS = 100_000;

/** Why a projection stopped: the error, and the event it failed on when it was its `apply`. */
export interface ProjectionFault {
  readonly error: Error;
  readonly position?: bigint;
  readonly eventType?: string;
}

/** One projection as a replay drives it. Mutable: the checkpoint moves only after a commit. */
export interface ProjectionTrack {
  readonly projection: Projection;
  readonly handles: ReadonlySet<string>;
  /** Mirror of the stored checkpoint: the last position committed for this projection. */
  checkpoint: bigint | undefined;
  /** Apply nothing after this position (a rebuild to a target); undefined: no bound. */
  upTo: bigint | undefined;
  fault: ProjectionFault | undefined;
}

/** Creates the replay state of a projection from its stored checkpoint. */
export function trackOf(projection: Projection, checkpoint: bigint | undefined): ProjectionTrack {
  return { projection, handles: new Set(projection.handles), checkpoint, upTo: undefined, fault: undefined };
}

export interface BatchOptions {
  readonly maxCachedDocuments?: number;
}

/**
 * Applies `events` (ascending positions) to every healthy track in ONE SQLite transaction that also
 * moves each track's checkpoint, so the documents on disk always match their checkpoint. Events at or
 * below a track's checkpoint are skipped, which is what makes redelivery harmless.
 *
 * A projection whose `apply` throws (or writes a document that cannot be stored) is faulted and the
 * batch is committed again without it, so one broken projection does not hold back the others; its
 * own writes and checkpoint are rolled back. Any other error (I/O, a second writer) propagates.
 * Returns the tracks that faulted in this batch.
 */
export function applyBatch(
  store: SqliteReadModelStore,
  events: readonly RecordedEvent[],
  tracks: readonly ProjectionTrack[],
  options: BatchOptions = {},
): ProjectionTrack[] {
  const faulted: ProjectionTrack[] = [];
  if (events.length === 0) return faulted;
  assertAscending(events);
  let active = tracks.filter((track) => track.fault === undefined && wantsAny(track, events));
  // Each retry drops one projection, so this runs at most tracks.length + 1 times.
  while (active.length > 0) {
    try {
      commitBatch(store, events, active, options);
      return faulted;
    } catch (error) {
      const culprit = culpritOf(error, active);
      if (culprit === undefined) throw error;
      culprit.fault = faultOf(error);
      faulted.push(culprit);
      active = active.filter((track) => track !== culprit);
    }
  }
  return faulted;
}

function commitBatch(
  store: SqliteReadModelStore,
  events: readonly RecordedEvent[],
  tracks: readonly ProjectionTrack[],
  options: BatchOptions,
): void {
  const count = tracks.length;
  const lastPosition = events[events.length - 1]!.position;
  // Each track's slice of the batch as index bounds, so the hot loop compares integers, not bigints.
  const first = new Int32Array(count);
  const last = new Int32Array(count);
  const nextCheckpoint: (bigint | undefined)[] = new Array<bigint | undefined>(count).fill(undefined);
  for (let index = 0; index < count; index += 1) {
    const track = tracks[index]!;
    first[index] = track.checkpoint === undefined ? 0 : firstAfter(events, track.checkpoint);
    last[index] = track.upTo === undefined ? events.length - 1 : firstAfter(events, track.upTo) - 1;
    if (last[index]! >= first[index]!) nextCheckpoint[index] = events[last[index]!]!.position;
    // A batch that runs past a rebuild target proves nothing lies between the last event and the
    // target, so the target itself becomes the checkpoint and the rebuild ends exactly on it.
    if (track.upTo !== undefined && lastPosition > track.upTo && isBefore(track.checkpoint, track.upTo)) {
      nextCheckpoint[index] = track.upTo;
    }
  }
  store.write((session) => {
    const views = tracks.map((track) => {
      session.expectCheckpoint(track.projection.name, track.checkpoint);
      return session.documents(track.projection.name);
    });
    for (let eventIndex = 0; eventIndex < events.length; eventIndex += 1) {
      const event = events[eventIndex]!;
      for (let index = 0; index < count; index += 1) {
        if (eventIndex < first[index]! || eventIndex > last[index]!) continue;
        const track = tracks[index]!;
        if (!track.handles.has(event.type)) continue;
        try {
          track.projection.apply(event, views[index]!);
        } catch (error) {
          throw new ProjectionApplyError(track.projection.name, event.position, event.type, error);
        }
      }
    }
    for (let index = 0; index < count; index += 1) {
      const next = nextCheckpoint[index];
      const track = tracks[index]!;
      if (next !== undefined) session.setCheckpoint(track.projection.name, track.projection.version, next);
    }
  }, options);
  for (let index = 0; index < count; index += 1) {
    const next = nextCheckpoint[index];
    if (next !== undefined) tracks[index]!.checkpoint = next;
  }
}

/** Index of the first event whose position is greater than `position` (events.length if none). */
export function firstAfter(events: readonly RecordedEvent[], position: bigint): number {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (events[middle]!.position <= position) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** True when the track has a checkpoint to move within `events`. */
function wantsAny(track: ProjectionTrack, events: readonly RecordedEvent[]): boolean {
  const last = events[events.length - 1]!.position;
  if (track.checkpoint !== undefined && last <= track.checkpoint) return false;
  return !isFinished(track);
}

/** A track with a rebuild target it has reached. */
export function isFinished(track: ProjectionTrack): boolean {
  return track.upTo !== undefined && track.checkpoint !== undefined && track.checkpoint >= track.upTo;
}

function isBefore(checkpoint: bigint | undefined, position: bigint): boolean {
  return checkpoint === undefined || checkpoint < position;
}

/** The smallest checkpoint of the tracks (undefined, "from the beginning", is the smallest of all). */
export function lowestCheckpoint(tracks: readonly ProjectionTrack[]): bigint | undefined {
  let lowest: bigint | undefined;
  for (let index = 0; index < tracks.length; index += 1) {
    const checkpoint = tracks[index]!.checkpoint;
    if (checkpoint === undefined) return undefined;
    if (lowest === undefined || checkpoint < lowest) lowest = checkpoint;
  }
  return lowest;
}

function culpritOf(error: unknown, tracks: readonly ProjectionTrack[]): ProjectionTrack | undefined {
  const name =
    error instanceof ProjectionApplyError || error instanceof DocumentWriteError ? error.projection : undefined;
  return name === undefined ? undefined : tracks.find((track) => track.projection.name === name);
}

function faultOf(error: unknown): ProjectionFault {
  if (error instanceof ProjectionApplyError) {
    return { error, position: error.position, eventType: error.eventType };
  }
  return { error: error instanceof Error ? error : new Error(String(error)) };
}

function assertAscending(events: readonly RecordedEvent[]): void {
  for (let index = 1; index < events.length; index += 1) {
    if (events[index]!.position <= events[index - 1]!.position) {
      throw new Error(
        `Event positions must increase: ${events[index]!.position} follows ${events[index - 1]!.position}`,
      );
    }
  }
}

/** A committed catch-up page. */
export interface CatchUpPage {
  /** Events read from the log in this page. */
  readonly events: number;
  /** Position of the page's last event. */
  readonly lastPosition: bigint;
}

export interface CatchUpOptions extends BatchOptions {
  readonly eventStore: EventStore;
  readonly store: SqliteReadModelStore;
  readonly tracks: readonly ProjectionTrack[];
  readonly pageEvents: number;
  /** Checked between pages: true ends the catch-up early (the checkpoints stay consistent). */
  readonly shouldStop?: () => boolean;
  /** Called after each committed page. */
  readonly onPage?: (page: CatchUpPage) => void;
}

/**
 * Pages the log from the lowest checkpoint of the healthy tracks to its end (a page shorter than
 * `pageEvents`), applying each page in one transaction. Tracks behind others receive the events they
 * lack; tracks with a target stop at it. Returns the number of events read.
 */
export async function catchUp(options: CatchUpOptions): Promise<number> {
  assertPageEvents(options.pageEvents);
  let eventsRead = 0;
  for (;;) {
    if (options.shouldStop?.() === true) return eventsRead;
    const pending = options.tracks.filter((track) => track.fault === undefined && !isFinished(track));
    if (pending.length === 0) return eventsRead;
    const after = lowestCheckpoint(pending);
    const page = await options.eventStore.readAll(
      after === undefined ? { maxCount: options.pageEvents } : { after, maxCount: options.pageEvents },
    );
    if (page.length === 0) return eventsRead;
    applyBatch(options.store, page, pending, options);
    eventsRead += page.length;
    options.onPage?.({ events: page.length, lastPosition: page[page.length - 1]!.position });
    if (page.length < options.pageEvents) return eventsRead;
    // A store may answer readAll without ever yielding to the event loop: let timers and I/O (HTTP
    // requests during a start-up catch-up) run between transactions.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

export function assertPageEvents(pageEvents: number): void {
  if (!Number.isInteger(pageEvents) || pageEvents < 1 || pageEvents > MAX_CATCH_UP_PAGE_EVENTS) {
    throw new RangeError(`A catch-up page must hold 1 to ${MAX_CATCH_UP_PAGE_EVENTS} events, got ${pageEvents}`);
  }
}
