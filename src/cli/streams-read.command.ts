import { InvalidEventStoreInputError, type EventStore, type RecordedEvent } from '../event-store/event-store.port';
import { EXIT_OK, EXIT_USAGE, writeLine, type CliIo } from './cli-io';

/** Events read from the store per page while printing a stream. */
export const STREAM_READ_PAGE_EVENTS = 1_000;

export interface StreamsReadOptions {
  readonly eventStore: EventStore;
  readonly io: CliIo;
  readonly streamName: string;
  /** First revision to print (inclusive); default 0. */
  readonly fromRevision?: bigint;
}

/** An event as one JSON line: revision and position as decimal text, since they are 64-bit. */
export interface EventLine {
  readonly streamName: string;
  readonly revision: string;
  readonly position: string;
  readonly id: string;
  readonly type: string;
  readonly recordedAt: string;
  readonly data: unknown;
  readonly metadata: unknown;
}

/**
 * `llm-ledger streams read <name>`: prints the stream's events in revision order, one JSON object per
 * line, up to the revision the stream had when the command started. An unknown stream is EXIT_USAGE
 * with a message on stderr, never an empty success.
 */
export async function streamsRead(options: StreamsReadOptions): Promise<number> {
  const { eventStore, io, streamName } = options;
  let last: bigint | undefined;
  try {
    last = await eventStore.streamRevision(streamName);
  } catch (error) {
    if (!(error instanceof InvalidEventStoreInputError)) throw error;
    await writeLine(io.stderr, `llm-ledger streams read: ${error.message}`);
    return EXIT_USAGE;
  }
  if (last === undefined) {
    await writeLine(io.stderr, `llm-ledger streams read: no stream named ${JSON.stringify(streamName)}`);
    return EXIT_USAGE;
  }
  let next = options.fromRevision ?? 0n;
  while (next <= last) {
    const page = await eventStore.readStream(streamName, { fromRevision: next, maxCount: STREAM_READ_PAGE_EVENTS });
    for (const event of page) {
      if (event.revision > last) return EXIT_OK;
      await writeLine(io.stdout, JSON.stringify(eventLine(event)));
    }
    if (page.length < STREAM_READ_PAGE_EVENTS) break;
    next = page[page.length - 1]!.revision + 1n;
  }
  return EXIT_OK;
}

export function eventLine(event: RecordedEvent): EventLine {
  return {
    streamName: event.streamName,
    revision: event.revision.toString(),
    position: event.position.toString(),
    id: event.id,
    type: event.type,
    recordedAt: event.recordedAt,
    data: event.data,
    metadata: event.metadata,
  };
}
