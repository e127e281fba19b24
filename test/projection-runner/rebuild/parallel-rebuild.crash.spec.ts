import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { openSqliteEventStore, type SqliteEventStore } from '../../../src/event-store/sqlite/sqlite-event-store';
import { openReadModelStore, readModelPathFor, verifyReadModel } from '../../../src/projection-runner';
import { newEvent } from '../fixtures/in-memory-event-log.fake';
import { sampleAppend } from '../fixtures/sample.projections';
import { CHILD_PAGE_EVENTS } from './fixtures/rebuild-child.fixture';
import { CRASH_PROJECTIONS } from './fixtures/rebuild.projections';

const HOOK = join(__dirname, '..', '..', '..', 'tools', 'ts-require-hook.js');
const CHILD = join(__dirname, 'fixtures', 'rebuild-child.fixture.ts');
/** Events in the log: 40 pages of CHILD_PAGE_EVENTS. */
const LOG_EVENTS = 20_000;
const SHAPE = { eventsPerAppend: 2, carts: 400, organizations: 7 };
/** Where both gates block: inside page 25, so 24 pages (12,000 events) are committed. */
const GATE_POSITION = 12_345;

async function buildLog(store: SqliteEventStore): Promise<bigint> {
  const appends = LOG_EVENTS / SHAPE.eventsPerAppend;
  // Concurrent appends share the store's group commits.
  const inFlight = 500;
  for (let first = 0; first < appends; first += inFlight) {
    await Promise.all(
      Array.from({ length: Math.min(inFlight, appends - first) }, (_, offset) => {
        const append = sampleAppend(first + offset, SHAPE.eventsPerAppend, SHAPE.carts, SHAPE.organizations);
        return store.append(append.streamName, append.events.map((event) => newEvent(event.type, event.data)), { expectedRevision: 'any' });
      }),
    );
  }
  return (await store.headPosition())!;
}

describe('rebuildProjectionsInParallel crash safety — killed with SIGKILL mid-rebuild (issue 7)', () => {
  let dir: string;
  let logPath: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'parallel-rebuild-crash-'));
    logPath = join(dir, 'ledger.sqlite');
    const store = openSqliteEventStore({ path: logPath });
    await buildLog(store);
    await store.close();
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('leaves every projection at its last committed page, its documents as they were then, and its index back on reopening', async () => {
    const child = spawn(process.execPath, ['-r', HOOK, CHILD, logPath, readModelPathFor(logPath)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, REBUILD_GATE_POSITION: String(GATE_POSITION) },
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    const gates = new Set<string>();
    for await (const line of createInterface({ input: child.stdout })) {
      const gate = /^gate (.+)$/.exec(line);
      if (gate !== null) gates.add(gate[1]!);
      // Both groups are blocked inside the gate's page: neither can commit it, nor finish.
      if (gates.size === 2) break;
    }
    child.kill('SIGKILL');
    expect({ signal: await exited, stderr, gates: [...gates].sort() }).toEqual({ signal: 'SIGKILL', stderr: '', gates: ['gate-a', 'gate-b'] });

    const eventStore = openSqliteEventStore({ path: logPath });
    const live = openReadModelStore({ path: readModelPathFor(logPath) });
    const scratch = openReadModelStore({ path: ':memory:' });
    try {
      const committed = BigInt(Math.floor(GATE_POSITION / CHILD_PAGE_EVENTS) * CHILD_PAGE_EVENTS);
      expect(live.checkpoints().map((checkpoint) => [checkpoint.projection, checkpoint.position])).toEqual(
        CRASH_PROJECTIONS.map((projection) => [projection.name, committed]).sort(),
      );
      const comparison = await verifyReadModel({ eventStore, live, scratch, projections: CRASH_PROJECTIONS });
      expect(comparison.projections.filter((projection) => !projection.equal)).toEqual([]);
      // Opening the file built the index the killed rebuild had dropped.
      const raw = new Database(readModelPathFor(logPath), { readonly: true });
      try {
        expect(raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'documents'").pluck().all()).toEqual([
          'documents_by_index_key',
        ]);
      } finally {
        raw.close();
      }
    } finally {
      scratch.close();
      live.close();
      await eventStore.close();
    }
  });
});
