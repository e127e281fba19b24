import type { RecordedEvent } from '../../../src/event-store/event-store.port';
import {
  compareReadModels,
  openReadModelStore,
  rebuildProjections,
  type Projection,
  type SqliteReadModelStore,
} from '../../../src/projection-runner';
import { trackOf, type CatchUpPage } from '../../../src/projection-runner/projection-replay';
import { replayProjectionGroup, type ReplayPageReader, type WriteTurn } from '../../../src/projection-runner/rebuild/projection-group-replay';
import { InMemoryEventLog, newEvent } from '../fixtures/in-memory-event-log.fake';
import { appendSample, type SampleLogShape } from '../fixtures/log-builder';
import { sampleProjections } from '../fixtures/sample.projections';
import { tripwireProjection, type TripwireData } from '../fixtures/worker.projections';

const SHAPE: SampleLogShape = { eventsPerAppend: 3, carts: 17, organizations: 3 };
const PROJECTIONS = [...sampleProjections, tripwireProjection] as readonly Projection[];
const NAMES = PROJECTIONS.map((projection) => projection.name);

/** Reads the log as the rebuild workers' SQLite reader does: every event counts, the handled ones come back. */
function readerOf(log: InMemoryEventLog, projections: readonly Projection[], pages: number[] = []): ReplayPageReader {
  const handled = new Set(projections.flatMap((projection) => projection.handles));
  return {
    async readPage(after, maxCount) {
      const events = await log.readAll(after === undefined ? { maxCount } : { after, maxCount });
      pages.push(events.length);
      return {
        events: events.filter((event: RecordedEvent) => handled.has(event.type)),
        count: events.length,
        lastPosition: events.at(-1)?.position,
      };
    },
  };
}

describe('replayProjectionGroup: a group of projections rebuilt with the page applied outside the transaction', () => {
  let log: InMemoryEventLog;
  let store: SqliteReadModelStore;
  let expected: SqliteReadModelStore;

  const replay = async (options: {
    pageEvents: number;
    maxCachedDocuments?: number;
    writeTurn?: WriteTurn;
    shouldStop?: () => boolean;
    onPage?: (page: CatchUpPage) => void;
  }) => {
    for (const projection of PROJECTIONS) store.resetProjection(projection.name, projection.version);
    const tracks = PROJECTIONS.map((projection) => trackOf(projection, undefined));
    const events = await replayProjectionGroup({ reader: readerOf(log, PROJECTIONS), store, tracks, ...options });
    return { events, tracks };
  };

  /** The sequential rebuild of the log's first `events` events. */
  const rebuiltTo = async (events: number): Promise<SqliteReadModelStore> => {
    const upTo = new InMemoryEventLog();
    for (const event of log.events.slice(0, events)) upTo.appendNow(event.streamName, [newEvent(event.type, event.data)]);
    await rebuildProjections({ eventStore: upTo, store: expected, projections: PROJECTIONS });
    return expected;
  };

  beforeEach(async () => {
    log = new InMemoryEventLog();
    store = openReadModelStore({ path: ':memory:' });
    expected = openReadModelStore({ path: ':memory:' });
    await appendSample(log, 0, 120, SHAPE);
  });

  afterEach(() => {
    store.close();
    expected.close();
  });

  it.each([
    ['one-event pages', 1, undefined],
    ['pages of 7 events', 7, undefined],
    ['pages of 50 events', 50, undefined],
    ['a cache of 2 documents, so commits come early', 50, 2],
    ['one page for the whole log', 10_000, undefined],
  ])('builds what the sequential rebuild builds, with %s', async (_shape, pageEvents, maxCachedDocuments) => {
    const { events, tracks } = await replay({ pageEvents, maxCachedDocuments });
    const sequential = await rebuildProjections({ eventStore: log, store: expected, projections: PROJECTIONS, pageEvents, maxCachedDocuments });
    expect(events).toBe(sequential.events);
    expect(tracks.map((track) => track.checkpoint)).toEqual(sequential.projections.map((projection) => projection.checkpoint));
    expect(compareReadModels({ actual: store, expected, projections: NAMES }).equal).toBe(true);
  });

  it('commits one page per transaction, in turn, each moving every checkpoint to the page’s last event', async () => {
    const turns: string[] = [];
    const pages: CatchUpPage[] = [];
    const writeTurn: WriteTurn = { acquire: () => turns.push('acquire'), release: () => turns.push('release') };
    await replay({ pageEvents: 100, writeTurn, onPage: (page) => pages.push(page) });
    expect(pages.map((page) => page.lastPosition)).toEqual([100n, 200n, 300n, 360n]);
    expect(turns).toEqual(pages.flatMap(() => ['acquire', 'release']));
  });

  it('stops a projection whose apply throws at its last committed checkpoint, with its fault, while the others go on', async () => {
    log.appendNow('trip-1', [newEvent('Tripwire', { action: 'throw' } satisfies TripwireData)]);
    await appendSample(log, 120, 60, SHAPE);
    const { tracks } = await replay({ pageEvents: 100 });
    const sequential = await rebuildProjections({ eventStore: log, store: expected, projections: PROJECTIONS, pageEvents: 100 });

    const tripwire = tracks.find((track) => track.projection.name === 'tripwire')!;
    expect(tripwire.checkpoint).toBe(300n);
    expect(tripwire.fault).toMatchObject({ position: 361n, eventType: 'Tripwire' });
    expect(tripwire.fault!.error.message).toBe(sequential.projections.find((projection) => projection.name === 'tripwire')!.fault!.error.message);
    expect(tracks.map((track) => track.checkpoint)).toEqual(sequential.projections.map((projection) => projection.checkpoint));
    expect(compareReadModels({ actual: store, expected, projections: NAMES }).equal).toBe(true);
  });

  it('moves no checkpoint and keeps no document of a transaction that fails, and says why', async () => {
    const write = store.write.bind(store);
    let commits = 0;
    jest.spyOn(store, 'write').mockImplementation((body) => {
      commits += 1;
      if (commits === 2) throw new Error('disk full');
      return write(body);
    });
    await expect(replay({ pageEvents: 100 })).rejects.toThrow('disk full');
    expect(store.checkpoints().map((checkpoint) => checkpoint.position)).toEqual([100n, 100n, 100n]);
    expect(compareReadModels({ actual: store, expected: await rebuiltTo(100) }).equal).toBe(true);
  });

  it('ends early, at a committed page, when asked to stop', async () => {
    let pages = 0;
    const { events, tracks } = await replay({ pageEvents: 100, shouldStop: () => pages === 2, onPage: () => (pages += 1) });
    expect(events).toBe(200);
    expect(tracks.map((track) => track.checkpoint)).toEqual([200n, 200n, 200n]);
  });

  it('refuses a track with a rebuild target, which only catchUp follows', async () => {
    const track = trackOf(PROJECTIONS[0]!, undefined);
    track.upTo = 10n;
    await expect(replayProjectionGroup({ reader: readerOf(log, PROJECTIONS), store, tracks: [track], pageEvents: 10 })).rejects.toThrow(RangeError);
  });
});
