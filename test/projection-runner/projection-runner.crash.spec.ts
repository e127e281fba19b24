import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { openReadModelStore, readModelPathFor, verifyReadModel } from '../../src/projection-runner';
import { CHILD_PAGE_EVENTS } from './fixtures/crash-child.fixture';
import { sampleAppend } from './fixtures/sample.projections';
import { newEvent } from './fixtures/in-memory-event-log.fake';
import { sampleProjections } from './fixtures/sample.projections';

const HOOK = join(__dirname, '..', '..', 'tools', 'ts-require-hook.js');
const CHILD = join(__dirname, 'fixtures', 'crash-child.fixture.ts');
/** Events in the crash test's log: 80 catch-up transactions of CHILD_PAGE_EVENTS. */
const LOG_EVENTS = 40_000;
/** Many carts, so one catch-up page touches more documents than the child's write-through cache holds. */
const SHAPE = { eventsPerAppend: 2, carts: 400, organizations: 7 };
/** The `committed` line after which the parent kills the child that runs freely. */
const KILL_AFTER_COMMITS = 10;

interface ChildRun {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves with the first stdout line that matches, or rejects when the child exits without one. */
  next(pattern: RegExp): Promise<RegExpMatchArray>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

function runChild(logPath: string, mode: 'run' | 'hold-open-transaction'): ChildRun {
  const child = spawn(process.execPath, ['-r', HOOK, CHILD, logPath, readModelPathFor(logPath), mode], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stderr })),
  );
  const lines = createInterface({ input: child.stdout });
  const iterator = lines[Symbol.asyncIterator]();
  return {
    child,
    exited,
    async next(pattern) {
      for (;;) {
        const line = await iterator.next();
        if (line.done === true) {
          const { code, signal, stderr: errors } = await exited;
          throw new Error(`child ended (code ${code}, signal ${signal}) before printing ${pattern}: ${errors}`);
        }
        const match = pattern.exec(line.value);
        if (match !== null) return match;
      }
    },
  };
}

async function buildLog(store: SqliteEventStore): Promise<bigint> {
  const appends = LOG_EVENTS / SHAPE.eventsPerAppend;
  // Concurrent appends share the store's group commits, so building the log takes a moment, not seconds.
  const inFlight = 500;
  for (let first = 0; first < appends; first += inFlight) {
    await Promise.all(
      Array.from({ length: Math.min(inFlight, appends - first) }, (_, offset) => {
        const append = sampleAppend(first + offset, SHAPE.eventsPerAppend, SHAPE.carts, SHAPE.organizations);
        return store.append(
          append.streamName,
          append.events.map((event) => newEvent(event.type, event.data)),
          { expectedRevision: 'any' },
        );
      }),
    );
  }
  return (await store.headPosition())!;
}

describe('ProjectionRunner crash safety — killed with SIGKILL mid-catch-up, restarted, equal to a rebuild (issue 2)', () => {
  let dir: string;
  let logPath: string;
  let head: bigint;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'projection-crash-'));
    logPath = join(dir, 'ledger.sqlite');
    const store = openSqliteEventStore({ path: logPath });
    head = await buildLog(store);
    await store.close();
    expect(head).toBe(BigInt(LOG_EVENTS));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  beforeEach(() => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(readModelPathFor(logPath) + suffix, { force: true });
  });

  /** Restarts the runner to the end, then rebuilds into a scratch store and compares. */
  async function restartAndVerify(): Promise<void> {
    const restarted = runChild(logPath, 'run');
    const [, faults] = await restarted.next(/^caught-up (.*)$/);
    expect(JSON.parse(faults!)).toEqual([]);
    expect((await restarted.exited).code).toBe(0);

    const eventStore = openSqliteEventStore({ path: logPath });
    const live = openReadModelStore({ path: readModelPathFor(logPath) });
    const scratch = openReadModelStore({ path: ':memory:' });
    try {
      const comparison = await verifyReadModel({ eventStore, live, scratch, projections: sampleProjections });
      expect(comparison.projections.map((projection) => [projection.projection, projection.differenceCount])).toEqual([
        ['cart-summary', 0],
        ['organization-totals', 0],
      ]);
      expect(comparison.equal).toBe(true);
      expect(live.checkpoints().map((checkpoint) => checkpoint.position)).toEqual([head, head]);
    } finally {
      scratch.close();
      live.close();
      await eventStore.close();
    }
  }

  it('loses nothing committed and applies nothing twice when killed at whatever point it has reached', async () => {
    const first = runChild(logPath, 'run');
    let lastSeen = 0n;
    for (let commit = 0; commit < KILL_AFTER_COMMITS; commit += 1) {
      lastSeen = BigInt((await first.next(/^committed (\d+)$/))[1]!);
    }
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    const afterKill = openReadModelStore({ path: readModelPathFor(logPath) });
    const checkpoints = afterKill.checkpoints().map((checkpoint) => checkpoint.position!);
    afterKill.close();
    for (const checkpoint of checkpoints) {
      expect(checkpoint).toBeGreaterThanOrEqual(lastSeen); // a commit it reported survived the kill
      expect(checkpoint).toBeLessThan(head); // and it really was killed part-way
      expect(checkpoint % BigInt(CHILD_PAGE_EVENTS)).toBe(0n); // on a transaction boundary
    }
    await restartAndVerify();
  });

  it('keeps nothing of the transaction it was killed in, though documents had reached SQLite', async () => {
    const first = runChild(logPath, 'hold-open-transaction');
    await first.next(/^committed (\d+)$/);
    const lastCommitted = BigInt((await first.next(/^committed (\d+)$/))[1]!);
    await first.next(/^in-transaction \d+$/);
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    const afterKill = openReadModelStore({ path: readModelPathFor(logPath) });
    expect(afterKill.checkpoints().map((checkpoint) => checkpoint.position)).toEqual([lastCommitted, lastCommitted]);
    afterKill.close();
    await restartAndVerify();
  });
});
