import { newEventId } from '../event-store/event-id.generator';
import type { EventStore, NewEvent } from '../event-store/event-store.port';

/**
 * Snapshots bound what a cold load folds: the first load of a stream in a process (after a restart,
 * or after the cache dropped it) starts from the latest snapshot instead of revision 0, so it reads at
 * most `everyEvents` events whatever the stream's history. Warm commands never read them: the cached
 * state is already current (see AggregateRepository).
 *
 * A snapshot is an event in a side stream of the log, `snapshot-<stream name>`, written after the
 * append that crossed a multiple of `everyEvents`. It is derived data: the stream's own events stay the
 * truth (audits and projections never read snapshots), a snapshot that is missing, unreadable or of
 * another codec version is ignored and the stream folded from the start, and losing one costs time only.
 */
export interface SnapshotCodec<State> {
  /** Bump it whenever the encoding or the state changes meaning: snapshots of other versions are ignored. */
  readonly version: number;
  /** A snapshot is written each time the stream's event count crosses a multiple of this. */
  readonly everyEvents: number;
  /** The state as plain JSON. */
  encode(state: State): unknown;
  /** The state back from `encode`'s JSON; throws on anything else. */
  decode(data: unknown): State;
}

export const SNAPSHOT_EVENT_TYPE = 'AggregateSnapshotted';

/** `snapshot-<stream>`: its own category, so no reader of the stream's category ever sees snapshots. */
export function snapshotStreamName(streamName: string): string {
  return `snapshot-${streamName}`;
}

interface SnapshotData {
  readonly codecVersion: number;
  /** Decimal text of the revision of the last event folded into the state. */
  readonly revision: string;
  readonly state: unknown;
}

/** The latest usable snapshot of the stream, or undefined (none, unreadable, other codec version). */
export async function readLatestSnapshot<State>(
  store: EventStore,
  streamName: string,
  codec: SnapshotCodec<State>,
): Promise<{ readonly state: State; readonly revision: bigint } | undefined> {
  const name = snapshotStreamName(streamName);
  const last = await store.streamRevision(name);
  if (last === undefined) return undefined;
  const [event] = await store.readStream(name, { fromRevision: last, maxCount: 1 });
  if (event?.type !== SNAPSHOT_EVENT_TYPE) return undefined;
  const data = event.data as Partial<SnapshotData>;
  if (data.codecVersion !== codec.version || typeof data.revision !== 'string') return undefined;
  try {
    return { state: codec.decode(data.state), revision: BigInt(data.revision) };
  } catch {
    return undefined;
  }
}

/** True when the stream's event count went past a multiple of `everyEvents` between the two revisions. */
export function crossesSnapshotPoint(before: bigint | undefined, after: bigint, everyEvents: number): boolean {
  const every = BigInt(everyEvents);
  const countBefore = before === undefined ? 0n : before + 1n;
  return countBefore / every < (after + 1n) / every;
}

/**
 * Appends a snapshot of `state` at `revision`. Not awaited by commands and never failing them: a
 * snapshot that could not be written (store closing, state too large for one append) only means the
 * next cold load folds more.
 */
export function writeSnapshot<State>(store: EventStore, streamName: string, codec: SnapshotCodec<State>, state: State, revision: bigint): void {
  let event: NewEvent;
  try {
    event = snapshotEvent(codec, state, revision);
  } catch {
    return;
  }
  store.append(snapshotStreamName(streamName), [event], { expectedRevision: 'any' }).catch(() => undefined);
}

/** The snapshot event of `state` as it stands after the event at `revision`. */
export function snapshotEvent<State>(codec: SnapshotCodec<State>, state: State, revision: bigint): NewEvent {
  const data: SnapshotData = { codecVersion: codec.version, revision: revision.toString(), state: codec.encode(state) };
  return { id: newEventId(), type: SNAPSHOT_EVENT_TYPE, data, metadata: { schemaVersion: 1 } };
}
