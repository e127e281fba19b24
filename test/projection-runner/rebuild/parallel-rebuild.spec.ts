import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteEventStore, type SqliteEventStore } from '../../../src/event-store/sqlite/sqlite-event-store';
import {
  compareReadModels,
  openReadModelStore,
  rebuildProjections,
  verifyReadModel,
  type Projection,
  type RebuildIntoResult,
  type RebuildProgress,
  type SqliteReadModelStore,
} from '../../../src/projection-runner';
import { startModuleWorker } from '../../../src/worker/start-module-worker';
import {
  groupProjections,
  rebuildGroups,
  rebuildProjectionsInParallel,
  type ParallelRebuildOptions,
} from '../../../src/projection-runner/rebuild/parallel-rebuild';
import { newEvent } from '../fixtures/in-memory-event-log.fake';
import { appendSample, type SampleLogShape } from '../fixtures/log-builder';
import type { TripwireData } from '../fixtures/worker.projections';
import { REBUILD_PROJECTIONS } from './fixtures/rebuild.projections';

jest.mock('../../../src/worker/start-module-worker', () => {
  const actual = jest.requireActual<typeof import('../../../src/worker/start-module-worker')>('../../../src/worker/start-module-worker');
  return { ...actual, startModuleWorker: jest.fn(actual.startModuleWorker) };
});
const started = jest.mocked(startModuleWorker);

const SHAPE: SampleLogShape = { eventsPerAppend: 3, carts: 29, organizations: 4 };
const APPENDS = 400;
/** Small pages, so the log takes a dozen commits per worker. */
const PAGE_EVENTS = 100;
const FIXTURE_MODULE = { path: join(__dirname, 'fixtures', 'rebuild.projections'), exportName: 'REBUILD_PROJECTIONS' };
const GROUPS = [
  ['cart-summary', 'tripwire'],
  ['organization-totals', 'unstorable'],
];
const NAMES = REBUILD_PROJECTIONS.map((projection) => projection.name);

describe('rebuildProjectionsInParallel: the projections rebuilt in groups on worker threads (issue 7)', () => {
  let dir: string;
  let logPath: string;
  let eventStore: SqliteEventStore;
  const stores: SqliteReadModelStore[] = [];

  const openStore = (name: string): SqliteReadModelStore => {
    const store = openReadModelStore({ path: join(dir, name) });
    stores.push(store);
    return store;
  };
  const appendAt = (stream: string, type: string, data: unknown) =>
    eventStore.append(stream, [newEvent(type, data)], { expectedRevision: 'any' });
  const inParallel = (store: SqliteReadModelStore, overrides: Partial<ParallelRebuildOptions> = {}): Promise<RebuildIntoResult> =>
    rebuildProjectionsInParallel({
      eventStore,
      logPath,
      store,
      projections: REBUILD_PROJECTIONS,
      projectionsModule: FIXTURE_MODULE,
      pageEvents: PAGE_EVENTS,
      groups: GROUPS,
      ...overrides,
    });
  const sequentially = (store: SqliteReadModelStore, overrides: { maxCachedDocuments?: number } = {}) =>
    rebuildProjections({ eventStore, store, projections: REBUILD_PROJECTIONS, pageEvents: PAGE_EVENTS, ...overrides });
  /** The rebuild results with errors as name and message, which survive the thread boundary. */
  const outcome = (result: RebuildIntoResult) => ({
    events: result.events,
    projections: result.projections.map(({ name, checkpoint, fault }) => ({
      name,
      checkpoint,
      fault: fault === undefined ? undefined : { name: fault.error.name, message: fault.error.message, position: fault.position, eventType: fault.eventType },
    })),
  });
  const expectSameReadModels = (actual: SqliteReadModelStore, expected: SqliteReadModelStore): void => {
    const comparison = compareReadModels({ actual, expected, projections: NAMES });
    expect(comparison.projections.filter((projection) => !projection.equal)).toEqual([]);
    expect(comparison.equal).toBe(true);
  };
  const indexNames = (store: SqliteReadModelStore): string[] => {
    const raw = new Database(store.path, { readonly: true });
    try {
      return raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'documents'").pluck().all() as string[];
    } finally {
      raw.close();
    }
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parallel-rebuild-'));
    logPath = join(dir, 'ledger.sqlite');
    eventStore = openSqliteEventStore({ path: logPath });
    await appendSample(eventStore, 0, APPENDS / 2, SHAPE);
  });

  afterEach(async () => {
    started.mockClear();
    for (const store of stores.splice(0)) store.close();
    await eventStore.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('builds, one worker per group, exactly the documents and checkpoints of the sequential rebuild', async () => {
    await appendSample(eventStore, APPENDS / 2, APPENDS / 2, SHAPE);
    const parallel = openStore('parallel.sqlite');
    const sequential = openStore('sequential.sqlite');

    const result = await inParallel(parallel);
    expect(started).toHaveBeenCalledTimes(2);
    expect(outcome(result)).toEqual(outcome(await sequentially(sequential)));
    expect(result.events).toBe(Number(await eventStore.headPosition()));
    expectSameReadModels(parallel, sequential);
    // The index the rebuild dropped while it wrote is back, and answers as before.
    expect(indexNames(parallel)).toEqual(indexNames(sequential));
    expect(parallel.list('cart-summary', 'carts', { indexKey: 'org-1' })).toEqual(sequential.list('cart-summary', 'carts', { indexKey: 'org-1' }));
  });

  it('stops a projection whose apply throws where the sequential rebuild stops it, and finishes the others', async () => {
    await appendAt('trip-1', 'Tripwire', { action: 'throw' } satisfies TripwireData);
    await appendSample(eventStore, APPENDS / 2, APPENDS / 2, SHAPE);
    const parallel = openStore('parallel.sqlite');
    const sequential = openStore('sequential.sqlite');

    const result = await inParallel(parallel);
    const expected = await sequentially(sequential);
    expect(outcome(result)).toEqual(outcome(expected));
    const tripwire = result.projections.find((projection) => projection.name === 'tripwire')!;
    expect(tripwire.fault).toMatchObject({ eventType: 'Tripwire', position: BigInt(APPENDS / 2 * SHAPE.eventsPerAppend + 1) });
    expect(tripwire.fault!.error.message).toMatch(/^Projection "tripwire" failed on event Tripwire at position \d+: tripwire at \d+$/);
    expect(result.projections.filter((projection) => projection.fault === undefined)).toHaveLength(3);
    expectSameReadModels(parallel, sequential);
  });

  it('stops a projection whose document cannot be stored, alone, where the sequential rebuild stops it', async () => {
    await appendAt('mark-1', 'Unstorable', { store: true });
    await appendSample(eventStore, APPENDS / 2, APPENDS / 4, SHAPE);
    await appendAt('mark-2', 'Unstorable', { store: false });
    await appendSample(eventStore, (APPENDS * 3) / 4, APPENDS / 4, SHAPE);
    const parallel = openStore('parallel.sqlite');
    const sequential = openStore('sequential.sqlite');

    const result = await inParallel(parallel);
    expect(outcome(result)).toEqual(outcome(await sequentially(sequential)));
    const unstorable = result.projections.find((projection) => projection.name === 'unstorable')!;
    expect(unstorable.fault?.error.name).toBe('DocumentWriteError');
    expect(unstorable.fault?.error.message).toMatch(/cannot write document "marks"\/"mark-2": not JSON-serialisable/);
    expectSameReadModels(parallel, sequential);
  });

  it('commits early when a projection changes more documents than its cache holds, and ends as the sequential rebuild does', async () => {
    await appendSample(eventStore, APPENDS / 2, APPENDS / 2, SHAPE);
    const parallel = openStore('parallel.sqlite');
    const sequential = openStore('sequential.sqlite');

    const result = await inParallel(parallel, { maxCachedDocuments: 3 });
    expect(outcome(result)).toEqual(outcome(await sequentially(sequential, { maxCachedDocuments: 3 })));
    expectSameReadModels(parallel, sequential);
  });

  it('reports progress once per position every group has committed, ascending, up to the head', async () => {
    const progress: RebuildProgress[] = [];
    const head = await eventStore.headPosition();

    await inParallel(openStore('parallel.sqlite'), { onProgress: (page) => progress.push(page) });
    const positions = progress.map((page) => page.position);
    expect(positions).toEqual([...positions].sort((left, right) => (left < right ? -1 : 1)));
    expect(new Set(positions).size).toBe(positions.length);
    expect(progress.at(-1)).toEqual({ eventsDone: Number(head), position: head, targetPosition: head });
    expect(progress.length).toBe(Math.ceil(Number(head) / PAGE_EVENTS));
  });

  it('rejects when a worker dies, and leaves every projection at a committed checkpoint that describes its documents', async () => {
    await appendSample(eventStore, APPENDS / 2, APPENDS / 4, SHAPE);
    await appendAt('trip-1', 'Tripwire', { action: 'exit', code: 7 } satisfies TripwireData);
    await appendSample(eventStore, (APPENDS * 3) / 4, APPENDS / 4, SHAPE);
    const store = openStore('parallel.sqlite');

    await expect(inParallel(store)).rejects.toThrow('A rebuild worker exited with code 7 before reporting its result');
    const verified = await verifyReadModel({ eventStore, live: store, scratch: openStore('scratch.sqlite'), projections: REBUILD_PROJECTIONS });
    expect(verified.projections.filter((projection) => !projection.equal)).toEqual([]);
    // The dying group's projections stopped before the tripwire; nothing went past it.
    const tripAt = (await eventStore.readAll()).find((event) => event.type === 'Tripwire')!.position;
    expect(store.checkpoint('cart-summary')!.position! < tripAt).toBe(true);
    expect(indexNames(store)).toContain('documents_by_index_key');
  });

  it('without groups, splits the projections as rebuildGroups derives them from the log, and builds what the sequential rebuild does', async () => {
    const parallel = openStore('derived.sqlite');
    const derived = rebuildGroups({ logPath, projections: REBUILD_PROJECTIONS, workers: 2 });
    expect(derived).toHaveLength(2);
    const result = await inParallel(parallel, { groups: undefined, workers: 2 });
    const groups = started.mock.calls.map(([, options]) => (options!.workerData as { projections: { name: string }[] }).projections.map(({ name }) => name));
    expect(groups).toEqual(derived);
    expect(outcome(result)).toEqual(outcome(await sequentially(openStore('sequential.sqlite'))));
  });

  it('runs on this thread, as rebuildProjections, when the read model is in memory or there is no log file', async () => {
    const expected = outcome(await sequentially(openStore('sequential.sqlite')));

    const inMemory = openReadModelStore({ path: ':memory:' });
    stores.push(inMemory);
    expect(outcome(await inParallel(inMemory))).toEqual(expected);
    expect(outcome(await inParallel(openStore('no-log.sqlite'), { logPath: undefined }))).toEqual(expected);
    expect(outcome(await inParallel(openStore('one-worker.sqlite'), { groups: undefined, workers: 1 }))).toEqual(expected);
    expect(started).not.toHaveBeenCalled();
  });

  it('refuses groups that leave a projection out, name one twice, or name one it does not rebuild, before wiping anything', async () => {
    const store = openStore('parallel.sqlite');
    await sequentially(store);
    const before = store.checkpoints();

    await expect(inParallel(store, { groups: [['cart-summary'], ['organization-totals']] })).rejects.toThrow('groups leave out tripwire, unstorable');
    await expect(inParallel(store, { groups: [['cart-summary', 'tripwire'], ['cart-summary', 'organization-totals', 'unstorable']] })).rejects.toThrow(
      'groups name "cart-summary" twice',
    );
    await expect(inParallel(store, { groups: [...GROUPS, ['nope']] })).rejects.toThrow('groups names "nope", which is not among the projections rebuilt');
    expect(store.checkpoints()).toEqual(before);
  });
});

describe('groupProjections: the split of a parallel rebuild (issue 25: derived, not measured by hand)', () => {
  const projection = (name: string, types: number): Projection => ({
    name,
    version: 1,
    handles: Array.from({ length: types }, (_, index) => `Type${index}`),
    apply: () => undefined,
  });

  it('balances the number of handled event types, heaviest first, keeping each group in the given order', () => {
    const projections = [projection('a', 1), projection('b', 8), projection('c', 4), projection('d', 8), projection('e', 5)];
    const groups = groupProjections(projections, 2).map((group) => group.map((member) => member.name));
    expect(groups).toEqual([
      ['b', 'e'],
      ['a', 'c', 'd'],
    ]);
  });

  it('weighs each projection by the events of the log it applies when given the counts by type, not by its number of types', () => {
    const named = (name: string, handles: string[]): Projection => ({ name, version: 1, handles, apply: () => undefined });
    // `wide` handles four rare types, `narrow` one frequent type.
    const projections = [named('wide', ['R1', 'R2', 'R3', 'R4']), named('narrow', ['Frequent']), named('other', ['Frequent', 'R1']), named('light', ['R2'])];
    const eventsByType = new Map([['Frequent', 1_000], ['R1', 5], ['R2', 5], ['R3', 5], ['R4', 5]]);
    const names = (groups: Projection[][]) => groups.map((group) => group.map((member) => member.name));
    expect(names(groupProjections(projections, 2, eventsByType))).toEqual([['other', 'light'], ['wide', 'narrow']]);
    // By types alone, the two that apply the frequent type would have shared a group.
    expect(names(groupProjections(projections, 2))).toEqual([['wide'], ['narrow', 'other', 'light']]);
  });

  it('never makes more groups than projections, nor an empty one, even when every projection weighs the same', () => {
    const projections = [projection('a', 0), projection('b', 0), projection('c', 0)];
    expect(groupProjections(projections, 8).map((group) => group.map((member) => member.name))).toEqual([['a'], ['b'], ['c']]);
    expect(groupProjections(projections, 2).map((group) => group.map((member) => member.name))).toEqual([['a', 'c'], ['b']]);
  });
});
