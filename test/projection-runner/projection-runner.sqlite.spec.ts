import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import {
  ProjectionRunner,
  compareReadModels,
  openReadModelStore,
  readModelPathFor,
  rebuildProjections,
  type SqliteReadModelStore,
} from '../../src/projection-runner';
import { appendSample, type SampleLogShape } from './fixtures/log-builder';
import { sampleProjections, type CartSummary } from './fixtures/sample.projections';

const SHAPE: SampleLogShape = { eventsPerAppend: 4, carts: 37, organizations: 5 };

describe('ProjectionRunner on the embedded SQLite log, read models in the file beside it', () => {
  let dir: string;
  let eventStore: SqliteEventStore;
  let store: SqliteReadModelStore;
  let runner: ProjectionRunner;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'projection-sqlite-'));
    const logPath = join(dir, 'ledger.sqlite');
    eventStore = openSqliteEventStore({ path: logPath });
    store = openReadModelStore({ path: readModelPathFor(logPath) });
    runner = new ProjectionRunner({ eventStore, store, projections: sampleProjections, catchUpPageEvents: 50, liveBatchMaxEvents: 16 });
  });

  afterEach(async () => {
    await runner.stop();
    await eventStore.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('catches up, follows concurrent appends live, and equals a rebuild from position 0', async () => {
    await appendSample(eventStore, 0, 100, SHAPE);
    await runner.start();
    expect((await runner.lag()).map(({ lag }) => lag)).toEqual([0n, 0n]);

    // Concurrent appends (one group commit) while live; each caller then reads its own write.
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, index) => appendSample(eventStore, 100 + index, 1, SHAPE)),
    );
    const latest = results.reduce((max, result) => (result.position > max ? result.position : max), 0n);
    await runner.waitFor(latest);
    expect(runner.status().state).toBe('live');

    const handled = (await eventStore.readAll()).filter((event) => event.type !== 'CartViewed').length;
    const carts = store.list<CartSummary>('cart-summary', 'carts');
    expect(carts.reduce((sum, cart) => sum + cart.document.nextRevision, 0)).toBe(handled);
    expect(store.list('cart-summary', 'carts', { indexKey: 'org-2' }).length).toBeGreaterThan(0);

    const scratch = openReadModelStore({ path: ':memory:' });
    await rebuildProjections({ eventStore, store: scratch, projections: sampleProjections });
    expect(compareReadModels({ actual: store, expected: scratch }).equal).toBe(true);
    scratch.close();
  });

  it('rebuilds every projection in place, then follows what was appended during the rebuild', async () => {
    await appendSample(eventStore, 0, 60, SHAPE);
    await runner.start();
    const before = store.list('organization-totals', 'organizations');

    const rebuilding = runner.rebuild();
    const appended = await appendSample(eventStore, 60, 5, SHAPE);
    const result = await rebuilding;
    expect(result.projections.map((projection) => projection.fault)).toEqual([undefined, undefined]);
    await runner.waitFor(appended.position);

    expect((await runner.lag()).map(({ lag }) => lag)).toEqual([0n, 0n]);
    expect(store.list('organization-totals', 'organizations')).not.toEqual(before);
    const scratch = openReadModelStore({ path: ':memory:' });
    await rebuildProjections({ eventStore, store: scratch, projections: sampleProjections });
    expect(compareReadModels({ actual: store, expected: scratch }).equal).toBe(true);
    scratch.close();
  });
});
