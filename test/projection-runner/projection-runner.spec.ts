import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RecordedEvent } from '../../src/event-store/event-store.port';
import { DEFAULT_LIVE_BATCH_MAX_EVENTS } from '../../src/projection-runner/projection-runner';
import {
  ProjectionFaultedError,
  ProjectionRunner,
  ProjectionRunnerStoppedError,
  compareReadModels,
  openReadModelStore,
  rebuildProjections,
  verifyReadModel,
  type CommittedBatch,
  type Projection,
  type ProjectionRunnerOptions,
  type RebuildProgress,
  type SqliteReadModelStore,
} from '../../src/projection-runner';
import { InMemoryEventLog, newEvent } from './fixtures/in-memory-event-log.fake';
import { appendSample } from './fixtures/log-builder';
import {
  cartSummaryProjection,
  organizationTotalsProjection,
  sampleProjections,
  type CartSummary,
  type ItemData,
} from './fixtures/sample.projections';

describe('ProjectionRunner — projections of the log, checkpointed with their read model (docs/http.md)', () => {
  let dir: string;
  let log: InMemoryEventLog;
  const stores: SqliteReadModelStore[] = [];
  const runners: ProjectionRunner[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'projection-runner-'));
    log = new InMemoryEventLog();
  });

  afterEach(async () => {
    await Promise.all(runners.splice(0).map((runner) => runner.stop()));
    stores.splice(0).forEach((store) => store.close());
    rmSync(dir, { recursive: true, force: true });
  });

  function openStore(name = 'ledger.read.sqlite'): SqliteReadModelStore {
    const store = openReadModelStore({ path: name === ':memory:' ? name : join(dir, name) });
    stores.push(store);
    return store;
  }

  function runner(options: Partial<ProjectionRunnerOptions> & { store: SqliteReadModelStore }): ProjectionRunner {
    const created = new ProjectionRunner({
      eventStore: log,
      projections: sampleProjections,
      catchUpPageEvents: 7,
      ...options,
    });
    runners.push(created);
    return created;
  }

  /** A rebuild from position 0 into a fresh in-memory store, compared with `store`. */
  async function compareWithRebuild(store: SqliteReadModelStore, projections: readonly Projection[] = sampleProjections) {
    const scratch = openStore(':memory:');
    await rebuildProjections({ eventStore: log, store: scratch, projections });
    return compareReadModels({ actual: store, expected: scratch });
  }

  describe('one transaction for the writes and the checkpoint', () => {
    it('keeps neither the writes nor the checkpoint of a batch whose apply throws mid-way, and stops only that projection', async () => {
      await appendSample(log, 0, 4);
      const store = openStore();
      const first = runner({ store, catchUpPageEvents: 100 });
      await first.start();
      await first.stop();
      const before = store.checkpoint('cart-summary')!;

      const failAt = (await appendSample(log, 4, 3)).position - 4n;
      const fragile: Projection<RecordedEvent<string, ItemData>> = {
        ...cartSummaryProjection,
        apply(event, tx) {
          if (event.position === failAt) throw new Error('projection bug');
          cartSummaryProjection.apply(event, tx);
        },
      };
      const second = runner({ store, catchUpPageEvents: 100, projections: [fragile, organizationTotalsProjection] });
      await second.start();

      // The events before the failing one were applied in the same (rolled-back) transaction: none is kept.
      expect(store.checkpoint('cart-summary')).toEqual(before);
      expect(store.list('cart-summary', 'carts')).toEqual((await compareAt(before.position!)).carts);
      const status = second.status().projections.find((projection) => projection.name === 'cart-summary')!;
      expect(status.fault).toMatchObject({ position: failAt, eventType: expect.any(String) });
      // The healthy projection committed the whole batch on its own.
      expect(store.checkpoint('organization-totals')!.position).toBe(await log.headPosition());
      await expect(second.caughtUp()).rejects.toBeInstanceOf(ProjectionFaultedError);
      await expect(second.caughtUp({ projections: ['organization-totals'] })).resolves.toBeUndefined();
    });

    /** The cart documents a run that stopped at `position` must hold. */
    async function compareAt(position: bigint) {
      const limited = new InMemoryEventLog();
      limited.events.push(...log.events.filter((event) => event.position <= position));
      const scratch = openStore(':memory:');
      await rebuildProjections({ eventStore: limited, store: scratch, projections: [cartSummaryProjection] });
      return { carts: scratch.list('cart-summary', 'carts') };
    }

    it('refuses to apply on top of a checkpoint another runner moved, and resumes from the stored one instead of applying events twice', async () => {
      await appendSample(log, 0, 3);
      const store = openStore();
      const warnings: string[] = [];
      const first = runner({ store, logger: { log: () => undefined, warn: (message) => warnings.push(message), error: () => undefined } });
      const second = runner({ store: openStore(), logger: { log: () => undefined, warn: (message) => warnings.push(message), error: () => undefined } });
      await first.start();
      await second.start();
      const head = (await appendSample(log, 3, 2)).position;

      // Both follow the same live events into one file: whichever commits second finds the checkpoint
      // moved, commits nothing, re-reads the stored checkpoints and answers its waiter from them.
      await Promise.all([first.waitFor(head), second.waitFor(head)]);
      expect(warnings).toEqual([expect.stringMatching(/stored checkpoint is \d+, expected \d+.*Re-reading the stored checkpoints/)]);
      expect([first, second].map((one) => one.status().state)).toEqual(['live', 'live']);
      expect((await compareWithRebuild(store)).equal).toBe(true);

      // And both go on following: the next events are applied once, by whichever commits first.
      const next = (await appendSample(log, 5, 2)).position;
      await Promise.all([first.waitFor(next), second.waitFor(next)]);
      expect((await compareWithRebuild(store)).equal).toBe(true);
    });
  });

  describe('catching up, then following live', () => {
    it('applies every event exactly once across the catch-up pages and the live batches', async () => {
      await appendSample(log, 0, 20);
      const store = openStore();
      const commits: CommittedBatch[] = [];
      // Live batches of at most 4 events: a burst of 12 commits both full batches and a remainder.
      const projections = runner({ store, liveBatchMaxEvents: 4, onCommit: (batch) => commits.push(batch) });
      await projections.start();
      expect(log.readAllCalls).toBeGreaterThan(1); // 60 events in pages of 7

      // Several bursts while live; cart-summary throws if an event is repeated or skipped.
      for (let burst = 0; burst < 5; burst += 1) await appendSample(log, 20 + burst * 4, 4);
      const head = (await appendSample(log, 40, 1)).position;
      await projections.waitFor(head);

      expect(commits.filter((batch) => batch.phase === 'catch-up').map((batch) => batch.events)).toEqual([
        7, 7, 7, 7, 7, 7, 7, 7, 4,
      ]);
      const live = commits.filter((batch) => batch.phase === 'live');
      expect(live.length).toBeGreaterThan(0);
      expect(Math.max(...live.map((batch) => batch.events))).toBeLessThanOrEqual(4);
      expect(projections.status().projections.every((projection) => projection.fault === undefined)).toBe(true);
      expect(projections.status().state).toBe('live');
      const handled = log.events.filter((event) => event.type !== 'CartViewed').length;
      const carts = store.list<CartSummary>('cart-summary', 'carts');
      expect(carts.reduce((sum, cart) => sum + cart.document.nextRevision, 0)).toBe(handled);
      expect((await compareWithRebuild(store)).equal).toBe(true);
    });

    /** A runner live after one event, with a window far longer than the test: only a waiter (or stop) can end it. */
    async function liveWithLongWindow() {
      const store = openStore();
      const commits: CommittedBatch[] = [];
      const projections = runner({ store, liveBatchIntervalMs: 3_600_000, onCommit: (batch) => commits.push(batch) });
      await projections.start();
      await projections.waitFor((await appendSample(log, 0, 1)).position);
      return { store, commits, projections, committedBefore: commits.length };
    }

    it('keeps live events of one batch window in one transaction, and commits them at once when someone waits', async () => {
      const { store, commits, projections, committedBefore } = await liveWithLongWindow();

      await appendSample(log, 1, 1);
      const head = (await appendSample(log, 2, 1)).position;
      for (let turn = 0; turn < 5; turn += 1) await new Promise<void>((resolve) => setImmediate(resolve));
      // Delivered but not committed: the window since the last live transaction is still open.
      expect(commits.length).toBe(committedBefore);
      expect(projections.status().projections[0]!.checkpoint).toBe(3n);

      await projections.waitFor(head);
      expect(commits.slice(committedBefore)).toEqual([{ phase: 'live', events: 6, lastPosition: head }]);
      expect((await compareWithRebuild(store)).equal).toBe(true);
    });

    it('by default holds a live backlog of several thousand events in one transaction (DEFAULT_LIVE_BATCH_MAX_EVENTS)', async () => {
      const { store, commits, projections, committedBefore } = await liveWithLongWindow();

      // 1,500 appends of 3 events: more than the 1,000 events a live transaction used to be cut at.
      const head = (await appendSample(log, 1, 1_500)).position;
      await projections.waitFor(head);
      const live = commits.slice(committedBefore);
      expect(live).toEqual([{ phase: 'live', events: 4_500, lastPosition: head }]);
      expect(DEFAULT_LIVE_BATCH_MAX_EVENTS).toBeGreaterThanOrEqual(4_500);
      expect((await compareWithRebuild(store)).equal).toBe(true);
    });

    it('commits the events held by an open batch window when it stops', async () => {
      const store = openStore();
      const projections = runner({ store, liveBatchIntervalMs: 3_600_000 });
      await projections.start();
      await projections.waitFor((await appendSample(log, 0, 1)).position);
      const head = (await appendSample(log, 1, 2)).position;
      for (let turn = 0; turn < 5; turn += 1) await new Promise<void>((resolve) => setImmediate(resolve));
      await projections.stop();
      expect(projections.status().projections.map((projection) => projection.checkpoint)).toEqual(
        sampleProjections.map(() => head),
      );
    });

    it('resumes from its checkpoint after a stop, without re-reading what it applied', async () => {
      await appendSample(log, 0, 10);
      const store = openStore();
      const first = runner({ store, catchUpPageEvents: 100 });
      await first.start();
      await first.stop();
      await appendSample(log, 10, 5);

      const seen: bigint[] = [];
      const counting = sampleProjections.map((projection) => ({
        ...projection,
        apply(event: RecordedEvent<string, ItemData>, tx: Parameters<typeof projection.apply>[1]) {
          seen.push(event.position);
          projection.apply(event, tx);
        },
      }));
      const second = runner({ store, projections: counting, catchUpPageEvents: 100 });
      await second.start();
      await second.caughtUp();
      expect(Math.min(...seen.map(Number))).toBe(31); // 10 appends of 3 events were applied before
      expect((await compareWithRebuild(store)).equal).toBe(true);
    });

    it('lets a caller wait for a position without sleeping, and releases waiters when it stops', async () => {
      const store = openStore();
      const projections = runner({ store });
      await projections.start();
      const pending = projections.waitFor(3n);
      await appendSample(log, 0, 1);
      await expect(pending).resolves.toBeUndefined();
      expect(store.get<CartSummary>('cart-summary', 'carts', 'cart-0')?.nextRevision).toBe(3);

      const aborted = new AbortController();
      const abortedWait = projections.waitFor(1_000n, { signal: aborted.signal });
      aborted.abort(new Error('request timed out'));
      await expect(abortedWait).rejects.toThrow('request timed out');

      const orphan = projections.waitFor(1_000n);
      await projections.stop();
      await expect(orphan).rejects.toBeInstanceOf(ProjectionRunnerStoppedError);
    });

    it('is caught up at once on an empty log', async () => {
      const projections = runner({ store: openStore() });
      await projections.start();
      await expect(projections.caughtUp()).resolves.toBeUndefined();
      expect(await projections.lag()).toEqual([
        expect.objectContaining({ projection: 'cart-summary', lag: 0n, headPosition: undefined }),
        expect.objectContaining({ projection: 'organization-totals', lag: 0n, headPosition: undefined }),
      ]);
    });
  });

  describe('lag', () => {
    it('reports per projection how far its checkpoint is behind the head of the log', async () => {
      await appendSample(log, 0, 4);
      const store = openStore();
      const first = runner({ store });
      await first.start();
      await first.stop();
      await appendSample(log, 4, 2);

      const second = runner({ store, projections: [...sampleProjections, { ...cartSummaryProjection, name: 'new-one' }] });
      expect((await second.lag()).map(({ projection, lag }) => [projection, lag])).toEqual([
        ['cart-summary', 6n],
        ['organization-totals', 6n],
        ['new-one', 18n],
      ]);
      await second.start();
      expect((await second.lag()).map(({ lag }) => lag)).toEqual([0n, 0n, 0n]);
    });

    it('measures lag in log positions when positions are not consecutive (EventStoreDB commit positions)', async () => {
      log = new InMemoryEventLog(100n);
      await appendSample(log, 0, 2);
      const store = openStore();
      const first = runner({ store, projections: [cartSummaryProjection] });
      await first.start();
      await first.stop();
      await appendSample(log, 2, 1);
      const second = runner({ store, projections: [cartSummaryProjection] });
      expect((await second.lag())[0]).toEqual(
        expect.objectContaining({ checkpoint: 600n, headPosition: 900n, lag: 300n, faulted: false }),
      );
    });
  });

  describe('rebuild from position 0', () => {
    it('rebuilds to the same model the runner built incrementally, reporting progress', async () => {
      await appendSample(log, 0, 15);
      const store = openStore();
      const projections = runner({ store });
      await projections.start();
      for (let burst = 0; burst < 4; burst += 1) await appendSample(log, 15 + burst * 3, 3);
      await projections.caughtUp();

      const scratch = openStore(':memory:');
      const progress: RebuildProgress[] = [];
      const rebuilt = await rebuildProjections({
        eventStore: log,
        store: scratch,
        projections: sampleProjections,
        pageEvents: 10,
        onProgress: (step) => progress.push(step),
      });
      expect(rebuilt.events).toBe(log.events.length);
      expect(progress.at(-1)).toEqual({
        eventsDone: log.events.length,
        position: await log.headPosition(),
        targetPosition: await log.headPosition(),
      });
      expect(progress.map((step) => step.eventsDone)).toEqual([...progress.map((step) => step.eventsDone)].sort((a, b) => a - b));
      expect(compareReadModels({ actual: store, expected: scratch }).equal).toBe(true);
    });

    it('rebuilds a projection in place while live, then goes on following', async () => {
      await appendSample(log, 0, 10);
      const store = openStore();
      const projections = runner({ store });
      await projections.start();
      store.write((session) => session.documents('cart-summary').put('carts', 'stray', { left: 'over' }));

      const steps: number[] = [];
      const result = await projections.rebuild({
        projections: ['cart-summary'],
        onProgress: (step) => steps.push(step.eventsDone),
      });
      expect(result.events).toBe(30);
      expect(steps.at(-1)).toBe(30);
      expect(store.get('cart-summary', 'carts', 'stray')).toBeUndefined();
      expect(projections.status().state).toBe('live');

      const head = (await appendSample(log, 10, 2)).position;
      await projections.waitFor(head);
      expect((await compareWithRebuild(store)).equal).toBe(true);
    });

    it('rebuilds a projection whose version changed, and leaves the others where they were', async () => {
      await appendSample(log, 0, 6);
      const store = openStore();
      const first = runner({ store });
      await first.start();
      await first.stop();

      const applied: string[] = [];
      const totalsV2: Projection<RecordedEvent<string, ItemData>> = {
        ...organizationTotalsProjection,
        version: 2,
        apply(event, tx) {
          applied.push(event.type);
          const current = tx.get<{ items: number }>('organizations', event.data.organizationId);
          tx.put('organizations', event.data.organizationId, { items: (current?.items ?? 0) + 1, shape: 'v2' });
        },
      };
      const cartsSpy: Projection<RecordedEvent<string, ItemData>> = {
        ...cartSummaryProjection,
        apply(event, tx) {
          applied.push(`cart:${event.type}`);
          cartSummaryProjection.apply(event, tx);
        },
      };
      const second = runner({ store, projections: [cartsSpy, totalsV2] });
      await second.start();

      expect(store.checkpoint('organization-totals')).toMatchObject({ version: 2, position: await log.headPosition() });
      expect(store.list('organization-totals', 'organizations').every((doc) => (doc.document as { shape: string }).shape === 'v2')).toBe(true);
      expect(applied.filter((type) => type.startsWith('cart:'))).toEqual([]);
      expect((await compareWithRebuild(store, [cartSummaryProjection, totalsV2])).equal).toBe(true);
    });
  });

  describe('comparing read models (audit verify)', () => {
    it('finds a corrupted row, a missing row and an extra row, and nothing on an untouched store', async () => {
      await appendSample(log, 0, 12);
      const path = join(dir, 'live.read.sqlite');
      const store = openStore('live.read.sqlite');
      const projections = runner({ store });
      await projections.start();
      await projections.stop();

      const untouched = await verifyReadModel({
        eventStore: log,
        live: store,
        scratch: openStore(':memory:'),
        projections: sampleProjections,
      });
      expect(untouched.equal).toBe(true);
      expect(untouched.projections.map((projection) => projection.projection)).toEqual(['cart-summary', 'organization-totals']);

      // Tamper with the file as an operator (or a bug) would: behind the runner's back.
      const raw = new Database(path);
      raw.prepare(`UPDATE documents SET body = json_set(body, '$.total', 999999) WHERE projection = 'cart-summary' AND id = 'cart-3'`).run();
      raw.prepare(`DELETE FROM documents WHERE projection = 'organization-totals' AND id = 'org-1'`).run();
      raw.prepare(`INSERT INTO documents VALUES ('organization-totals', 'organizations', 'org-x', '{}', NULL)`).run();
      raw.close();

      const verdict = await verifyReadModel({
        eventStore: log,
        live: store,
        scratch: openStore(':memory:'),
        projections: sampleProjections,
      });
      expect(verdict.equal).toBe(false);
      const [carts, totals] = verdict.projections;
      expect(carts).toMatchObject({ equal: false, checkpointsEqual: true, differenceCount: 1 });
      expect(carts!.differences[0]).toMatchObject({ collection: 'carts', id: 'cart-3' });
      expect(JSON.parse(carts!.differences[0]!.actual!).total).toBe(999999);
      expect(JSON.parse(carts!.differences[0]!.expected!).total).not.toBe(999999);
      expect(totals!.differences.map(({ id, actual, expected }) => [id, actual === undefined, expected === undefined])).toEqual([
        ['org-1', true, false],
        ['org-x', false, true],
      ]);
    });

    it('treats the same JSON with another key order as equal, and a different index key as a difference', async () => {
      await appendSample(log, 0, 3);
      const path = join(dir, 'live.read.sqlite');
      const store = openStore('live.read.sqlite');
      await rebuildProjections({ eventStore: log, store, projections: sampleProjections });
      const scratch = openStore(':memory:');
      await rebuildProjections({ eventStore: log, store: scratch, projections: sampleProjections });

      const raw = new Database(path);
      raw.prepare(`UPDATE documents SET body = '{"items":' || json_extract(body, '$.items') || ',"added":' || json_extract(body, '$.added') || '}' WHERE projection = 'organization-totals'`).run();
      expect(compareReadModels({ actual: store, expected: scratch }).equal).toBe(true);
      raw.prepare(`UPDATE documents SET index_key = 'org-other' WHERE projection = 'cart-summary' AND id = 'cart-0'`).run();
      raw.close();
      const comparison = compareReadModels({ actual: store, expected: scratch });
      expect(comparison.projections[0]!.differences).toEqual([
        expect.objectContaining({ id: 'cart-0', actualIndexKey: 'org-other', expectedIndexKey: 'org-0' }),
      ]);
    });

    it('walks both stores in SQLite key order, so ids beyond the BMP do not misalign the comparison', () => {
      const actual = openStore();
      const expected = openStore(':memory:');
      const ids = ['a', '\uE000', '\u{1F600}', '\uFFFD', 'z'];
      for (const target of [actual, expected]) {
        target.write((session) => ids.forEach((id) => session.documents('p').put('c', id, { id })));
      }
      expect(compareReadModels({ actual, expected }).equal).toBe(true);
      expected.write((session) => session.documents('p').delete('c', '\uE000'));
      expect(compareReadModels({ actual, expected }).projections[0]!.differences.map((difference) => difference.id)).toEqual([
        '\uE000',
      ]);
    });

    it('reports a checkpoint that differs, even when the documents agree', async () => {
      await appendSample(log, 0, 3);
      const store = openStore();
      await rebuildProjections({ eventStore: log, store, projections: [cartSummaryProjection] });
      const scratch = openStore(':memory:');
      await rebuildProjections({ eventStore: log, store: scratch, projections: [cartSummaryProjection] });
      store.write((session) => session.setCheckpoint('cart-summary', 1, 1n));
      expect(compareReadModels({ actual: store, expected: scratch }).projections[0]).toMatchObject({
        equal: false,
        checkpointsEqual: false,
        differenceCount: 0,
      });
    });
  });

  it('refuses projections it cannot run: a duplicate name, no handled type, a bad version', () => {
    const store = openStore();
    const make = (projections: Projection[]) => () => new ProjectionRunner({ eventStore: log, store, projections });
    expect(make([cartSummaryProjection as Projection, cartSummaryProjection as Projection])).toThrow(/Two projections/);
    expect(make([{ ...(cartSummaryProjection as Projection), handles: [] }])).toThrow(/handles no event type/);
    expect(make([{ ...(cartSummaryProjection as Projection), version: 1.5 }])).toThrow(/version/);
    expect(make([{ ...(cartSummaryProjection as Projection), name: '' }])).toThrow(/name/);
  });

  it('passes only the event types a projection handles, with the event as stored', async () => {
    await log.append('cart-9', [newEvent('ItemAdded', { organizationId: 'org-9', amount: 4 })], { expectedRevision: 'any' });
    await log.append('views-9', [newEvent('CartViewed', { organizationId: 'org-9', amount: 0 })], { expectedRevision: 'any' });
    const received: RecordedEvent[] = [];
    const spy: Projection = { name: 'spy', version: 1, handles: ['ItemAdded'], apply: (event) => void received.push(event) };
    const store = openStore();
    await runner({ store, projections: [spy] }).start();
    expect(received).toEqual([log.events[0]]);
    expect(store.checkpoint('spy')!.position).toBe(2n);
  });
});
