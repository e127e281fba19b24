import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ALL_PROJECTIONS } from '../../projections';
import { auditVerify } from '../../src/cli/audit-verify.command';
import { EXIT_DIFFERENCES, EXIT_OK } from '../../src/cli/cli-io';
import { projectionsRebuild } from '../../src/cli/projections-rebuild.command';
import { newEventId } from '../../src/event-store/event-id.generator';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { ProjectionRunner, openReadModelStore, type LiveProjections, type SqliteReadModelStore } from '../../src/projection-runner';
import { ProjectionWorkerHost } from '../../src/projection-runner/worker/projection-worker.host';
import { startModuleWorker } from '../../src/worker/start-module-worker';
import { ledgerWithHistory } from '../cli/ledger-fixture';
import { MemoryIo } from '../cli/support/memory-io';
import { HOLDS_TALLY_COLLECTION, HOLDS_TALLY_PROJECTION, type HoldsTally } from './fixtures/registered/holds-tally.projection';
import { REGISTERED_PROJECTIONS, REGISTERED_PROJECTIONS_MODULE } from './fixtures/registered';

jest.mock('../../src/worker/start-module-worker', () => {
  const actual = jest.requireActual<typeof import('../../src/worker/start-module-worker')>('../../src/worker/start-module-worker');
  return { ...actual, startModuleWorker: jest.fn(actual.startModuleWorker) };
});
// Two cores whatever the machine, so `projections rebuild` always takes its worker threads.
jest.mock('node:os', () => ({ ...jest.requireActual<typeof import('node:os')>('node:os'), availableParallelism: () => 2 }));
const started = jest.mocked(startModuleWorker);

const SQLITE_SUFFIXES = ['', '-wal', '-shm'];
/** acme's two settled runs of the fixture ledger (5 credits each). */
const ACME_TALLY: HoldsTally = { settled: 2, chargedCredits: 10 };

describe('A projection registers itself by being a *.projection.ts file (issue 25; docs/architecture.md "Where does my change go")', () => {
  let original: string;
  let directory: string;
  let eventStore: SqliteEventStore;
  const stores: SqliteReadModelStore[] = [];
  const openStore = (name: string): SqliteReadModelStore => {
    const store = openReadModelStore({ path: join(directory, name) });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    const audited = await ledgerWithHistory({ keepDirectory: true });
    original = audited.ledger.directory;
    await audited.ledger.close();
  });

  afterAll(() => rmSync(original, { recursive: true, force: true }));

  beforeEach(() => {
    // Each test on its own copy of the stopped ledger's log.
    directory = mkdtempSync(join(tmpdir(), 'llm-ledger-registry-'));
    for (const suffix of SQLITE_SUFFIXES) {
      if (existsSync(join(original, `ledger.sqlite${suffix}`))) copyFileSync(join(original, `ledger.sqlite${suffix}`), join(directory, `ledger.sqlite${suffix}`));
    }
    eventStore = openSqliteEventStore({ path: join(directory, 'ledger.sqlite') });
    started.mockClear();
  });

  afterEach(async () => {
    for (const store of stores.splice(0)) store.close();
    await eventStore.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('ALL_PROJECTIONS is every projection of every *.projection.ts file of projections/, in file-name order', () => {
    const files = readdirSync(join(__dirname, '..', '..', 'projections')).filter((file) => file.endsWith('.projection.ts')).sort();
    expect(files).toHaveLength(8);
    expect(ALL_PROJECTIONS.map(({ name }) => `${name}.projection.ts`)).toEqual(files);
    // The fixture folder adds its one file's projection to them, named in no list.
    expect(REGISTERED_PROJECTIONS.map(({ name }) => name)).toEqual([...ALL_PROJECTIONS.map(({ name }) => name), HOLDS_TALLY_PROJECTION]);
  });

  it('is rebuilt by `projections rebuild` on worker threads, in a group derived from the log', async () => {
    const store = openStore('rebuild.read.sqlite');
    const io = new MemoryIo();
    const exitCode = await projectionsRebuild({
      eventStore,
      readStore: store,
      io,
      projections: REGISTERED_PROJECTIONS,
      projectionsModule: REGISTERED_PROJECTIONS_MODULE,
      logPath: join(directory, 'ledger.sqlite'),
    });
    expect(exitCode).toBe(EXIT_OK);
    expect(io.lines).toContainEqual(expect.stringMatching(new RegExp(`^rebuilt ${HOLDS_TALLY_PROJECTION} up to position \\d+$`)));
    const groups = started.mock.calls.map(([, options]) => (options!.workerData as { projections: { name: string }[] }).projections.map(({ name }) => name));
    expect(groups).toHaveLength(2);
    expect(groups.flat().sort()).toEqual(REGISTERED_PROJECTIONS.map(({ name }) => name).sort());
    expect(store.get<HoldsTally>(HOLDS_TALLY_PROJECTION, HOLDS_TALLY_COLLECTION, 'account-acme')).toEqual(ACME_TALLY);
  });

  it.each([
    ['on the worker thread', (store: SqliteReadModelStore): LiveProjections =>
      new ProjectionWorkerHost({ eventStore, logPath: join(directory, 'ledger.sqlite'), store, projections: REGISTERED_PROJECTIONS, projectionsModule: REGISTERED_PROJECTIONS_MODULE })],
    ['on the event loop', (store: SqliteReadModelStore): LiveProjections => new ProjectionRunner({ eventStore, store, projections: REGISTERED_PROJECTIONS })],
  ])('runs live %s: catches up, then follows the log', async (_where, live) => {
    const projections = live(openStore('live.read.sqlite'));
    await projections.start();
    try {
      expect(stores[0]!.get<HoldsTally>(HOLDS_TALLY_PROJECTION, HOLDS_TALLY_COLLECTION, 'account-acme')).toEqual(ACME_TALLY);
      const { position } = await eventStore.append(
        'account-acme',
        [{ id: newEventId(), type: 'HoldSettled', data: { invocationId: 'late', heldCredits: 100, chargedCredits: 7, settledAt: '2026-12-01T00:00:00.000Z' }, metadata: { schemaVersion: 1 } }],
        { expectedRevision: 'any' },
      );
      await projections.waitFor(position, { projections: [HOLDS_TALLY_PROJECTION] });
      expect(stores[0]!.get<HoldsTally>(HOLDS_TALLY_PROJECTION, HOLDS_TALLY_COLLECTION, 'account-acme')).toEqual({ settled: 3, chargedCredits: 17 });
    } finally {
      await projections.stop();
    }
  });

  it('is replayed by `audit verify`, which finds its live document changed', async () => {
    const store = openStore('audited.read.sqlite');
    const runner = new ProjectionRunner({ eventStore, store, projections: REGISTERED_PROJECTIONS });
    await runner.start();
    await runner.stop();
    const verify = async (): Promise<{ exitCode: number; io: MemoryIo }> => {
      const io = new MemoryIo();
      const { exitCode } = await auditVerify({ eventStore, readStore: store, io, json: true, projections: REGISTERED_PROJECTIONS });
      return { exitCode, io };
    };
    expect((await verify()).exitCode).toBe(EXIT_OK);

    store.write((session) => session.documents(HOLDS_TALLY_PROJECTION).put(HOLDS_TALLY_COLLECTION, 'account-acme', { ...ACME_TALLY, settled: 5 }));
    const { exitCode, io } = await verify();
    expect(exitCode).toBe(EXIT_DIFFERENCES);
    expect(io.json()).toContainEqual(
      expect.objectContaining({ kind: 'projection_document', projection: HOLDS_TALLY_PROJECTION, collection: HOLDS_TALLY_COLLECTION, id: 'account-acme' }),
    );
  });
});
