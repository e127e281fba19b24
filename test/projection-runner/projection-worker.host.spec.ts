import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import {
  ProjectionFaultedError,
  ProjectionRunnerStoppedError,
  compareReadModels,
  openReadModelStore,
  readModelPathFor,
  rebuildProjections,
  type SqliteReadModelStore,
} from '../../src/projection-runner';
import { DEFAULT_PROJECTION_WORKER_NICE, ProjectionWorkerHost, type ProjectionWorkerHostOptions } from '../../src/projection-runner/worker/projection-worker.host';
import { newEvent } from './fixtures/in-memory-event-log.fake';
import { appendSample, type SampleLogShape } from './fixtures/log-builder';
import type { CartSummary } from './fixtures/sample.projections';
import { WORKER_PROJECTIONS, type TripwireData } from './fixtures/worker.projections';
import { mainThreadNice, threadNiceValues } from '../support/thread-nice';

const SHAPE: SampleLogShape = { eventsPerAppend: 3, carts: 13, organizations: 4 };
const FIXTURE_MODULE = join(__dirname, 'fixtures', 'worker.projections');
/** A live batch window no test could wait out: only a waiting reader makes the worker commit early. */
const ENDLESS_WINDOW_MS = 600_000;
/** Bound on the polls for a restart, and their interval, in ms (the restart itself waits 0 ms). */
const RESTART_POLLS = 500;
const RESTART_POLL_MS = 20;

describe('ProjectionWorkerHost: the projections on a worker thread with their own connections', () => {
  let dir: string;
  let logPath: string;
  let eventStore: SqliteEventStore;
  let store: SqliteReadModelStore;
  const hosts: ProjectionWorkerHost[] = [];

  const host = (overrides: Partial<ProjectionWorkerHostOptions> = {}): ProjectionWorkerHost => {
    const created = new ProjectionWorkerHost({
      eventStore,
      logPath,
      store,
      projections: WORKER_PROJECTIONS,
      projectionsModule: { path: FIXTURE_MODULE, exportName: 'WORKER_PROJECTIONS' },
      ...overrides,
    });
    hosts.push(created);
    return created;
  };
  const trip = (stream: string, data: TripwireData) =>
    eventStore.append(stream, [newEvent('Tripwire', data)], { expectedRevision: 'any' });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'projection-worker-'));
    logPath = join(dir, 'ledger.sqlite');
    eventStore = openSqliteEventStore({ path: logPath });
    store = openReadModelStore({ path: readModelPathFor(logPath) });
  });

  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((created) => created.stop()));
    await eventStore.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('catches up, follows the service\'s appends, and a read after waitFor sees exactly a rebuild\'s documents', async () => {
    await appendSample(eventStore, 0, 60, SHAPE);
    const projections = host();
    await projections.start();
    expect(projections.status().state).toBe('live');
    expect((await projections.lag()).map(({ lag }) => lag)).toEqual([0n, 0n, 0n]);

    const results = await Promise.all(Array.from({ length: 30 }, (_, index) => appendSample(eventStore, 60 + index, 1, SHAPE)));
    const latest = results.reduce((max, result) => (result.position > max ? result.position : max), 0n);
    await projections.waitFor(latest);

    // This connection is the service's, not the worker's: what the worker reported is committed.
    expect(store.list<CartSummary>('cart-summary', 'carts').length).toBe(SHAPE.carts);
    const scratch = openReadModelStore({ path: ':memory:' });
    await rebuildProjections({ eventStore, store: scratch, projections: WORKER_PROJECTIONS });
    expect(compareReadModels({ actual: store, expected: scratch }).equal).toBe(true);
    scratch.close();
    await projections.caughtUp();
    expect((await projections.lag()).every(({ lag }) => lag === 0n)).toBe(true);
  });

  it('runs the worker thread at DEFAULT_PROJECTION_WORKER_NICE on Linux, so the calls win a core the two both want; the service\'s threads keep their priority', async () => {
    expect(process.platform).toBe('linux');
    const before = threadNiceValues();
    const mainBefore = mainThreadNice();
    const projections = host();
    await projections.start();
    const during = threadNiceValues();
    expect(during.filter((nice) => nice === DEFAULT_PROJECTION_WORKER_NICE)).toHaveLength(before.filter((nice) => nice === DEFAULT_PROJECTION_WORKER_NICE).length + 1);
    expect(mainThreadNice()).toBe(mainBefore);
    await projections.stop();

    const unchanged = host({ workerNice: 0 });
    await unchanged.start();
    expect(threadNiceValues().filter((nice) => nice === DEFAULT_PROJECTION_WORKER_NICE)).toHaveLength(before.filter((nice) => nice === DEFAULT_PROJECTION_WORKER_NICE).length);
  });

  it('commits at once for a waiting reader instead of holding the live batch window open', async () => {
    const projections = host({ liveBatchIntervalMs: ENDLESS_WINDOW_MS });
    await projections.start();
    // The first live event commits at once (idle); the next ones fall inside the endless window.
    await projections.waitFor((await appendSample(eventStore, 0, 1, SHAPE)).position);
    const later = await appendSample(eventStore, 1, 5, SHAPE);
    await projections.waitFor(later.position, { projections: ['cart-summary'] });
    expect(projections.status().projections.find(({ name }) => name === 'cart-summary')?.checkpoint).toBeGreaterThanOrEqual(later.position);
  });

  it('faults a projection whose apply throws, alone: waiting on it rejects, the others keep following', async () => {
    const projections = host();
    await projections.start();
    const tripped = await trip('trip-1', { action: 'throw' });
    await expect(projections.waitFor(tripped.position, { projections: ['tripwire'] })).rejects.toBeInstanceOf(ProjectionFaultedError);

    const after = await appendSample(eventStore, 0, 4, SHAPE);
    await projections.waitFor(after.position, { projections: ['cart-summary', 'organization-totals'] });
    const tripwire = projections.status().projections.find(({ name }) => name === 'tripwire')!;
    expect(tripwire.fault?.error.message).toContain(`tripwire at ${tripped.position}`);
    expect(tripwire.checkpoint).toBeUndefined();
    expect(projections.status().state).toBe('live');
  });

  it('rejects pending waits on stop, and a restart resumes from the committed checkpoints without applying an event twice', async () => {
    const first = host();
    await first.start();
    const written = await appendSample(eventStore, 0, 20, SHAPE);
    await first.waitFor(written.position);
    const pending = first.waitFor(written.position + 1_000n);
    await first.stop();
    await expect(pending).rejects.toBeInstanceOf(ProjectionRunnerStoppedError);
    expect(first.status().state).toBe('stopped');

    const more = await appendSample(eventStore, 20, 20, SHAPE);
    // cart-summary throws on an event applied twice or skipped (it checks each stream's revision).
    const second = host();
    await second.start();
    await second.waitFor(more.position);
    expect(second.status().projections.every(({ fault }) => fault === undefined)).toBe(true);
    const scratch = openReadModelStore({ path: ':memory:' });
    await rebuildProjections({ eventStore, store: scratch, projections: WORKER_PROJECTIONS });
    expect(compareReadModels({ actual: store, expected: scratch }).equal).toBe(true);
    scratch.close();
  });

  it('fails when the worker thread dies: waits reject with the reason and the status says failed', async () => {
    const projections = host();
    await projections.start();
    const fatal = await trip('trip-2', { action: 'exit', code: 7 });
    const waiting = projections.waitFor(fatal.position);
    await expect(waiting).rejects.toThrow(/exited \(code 7\)/);
    expect(projections.status().state).toBe('failed');
    await expect(projections.waitFor(fatal.position)).rejects.toBeInstanceOf(ProjectionRunnerStoppedError);
    await projections.stop();
  });

  it('starts a worker that died again, and the read models follow the log from their committed checkpoints', async () => {
    const projections = host({ restartDelayMs: 0 });
    await projections.start();
    const before = await appendSample(eventStore, 0, 10, SHAPE);
    await projections.waitFor(before.position);
    const fatal = await trip('trip-3', { action: 'exit-once', code: 9, marker: join(dir, 'tripped') });
    await expect(projections.waitFor(fatal.position)).rejects.toThrow(/exited \(code 9\)/);

    // The restart is on a timer; poll its outcome with a bound instead of sleeping a guessed time.
    for (let polls = 0; projections.status().state !== 'live'; polls++) {
      if (polls >= RESTART_POLLS) throw new Error(`no restart after ${RESTART_POLLS} polls: ${projections.status().state}`);
      await new Promise((resolve) => setTimeout(resolve, RESTART_POLL_MS));
    }
    const after = await appendSample(eventStore, 10, 10, SHAPE);
    await projections.waitFor(after.position);
    expect(store.get('tripwire', 'trips', 'trip-3')).toEqual({ position: String(fatal.position) });
    // cart-summary refuses an event applied twice: the restart resumed exactly at the checkpoints.
    expect(projections.status().projections.every(({ fault }) => fault === undefined)).toBe(true);
  });

  it('refuses to start when the module has no projection list under that name', async () => {
    const projections = host({ projectionsModule: { path: FIXTURE_MODULE, exportName: 'NOT_A_LIST' } });
    await expect(projections.start()).rejects.toThrow(/exports no projection list named NOT_A_LIST/);
    expect(projections.status().state).toBe('failed');
  });
});
