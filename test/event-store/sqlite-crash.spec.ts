import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { RecordedEvent } from '../../src/event-store/event-store.port';
import { openSqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import type { CrashAck } from './fixtures/crash-appender.child';

/** Events the child would append if it were not killed. */
const CHILD_TOTAL_EVENTS = 10_000;
/** Acknowledged appends (about 3 events each) after which the test kills the child. */
const KILL_AFTER_ACKED_APPENDS = 600;

const fixtures = join(__dirname, 'fixtures');

interface ChildRun {
  readonly acks: CrashAck[];
  readonly signal: NodeJS.Signals | null;
  readonly finished: boolean;
  readonly stderr: string;
}

/** Runs the appender and SIGKILLs it once enough acknowledgements have been read; no timers involved. */
async function runAndKill(path: string, synchronous: 'NORMAL' | 'FULL'): Promise<ChildRun> {
  const child = spawn(
    process.execPath,
    ['-r', join(__dirname, '..', '..', 'tools', 'ts-require-hook.js'), join(fixtures, 'crash-appender.child.ts'), path, synchronous, String(CHILD_TOTAL_EVENTS)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const acks: CrashAck[] = [];
  let finished = false;
  const closed = once(child, 'close');
  for await (const line of createInterface({ input: child.stdout })) {
    if (line === 'done') {
      finished = true;
      continue;
    }
    acks.push(JSON.parse(line) as CrashAck);
    if (acks.length === KILL_AFTER_ACKED_APPENDS) child.kill('SIGKILL');
  }
  const [, signal] = (await closed) as [number | null, NodeJS.Signals | null];
  return { acks, signal, finished, stderr };
}

describe('SQLite store under SIGKILL: every acknowledged append survives and no append is half-written', () => {
  let directory: string;

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'ledger-sqlite-crash-'));
  });

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  // NORMAL is included on purpose: in WAL mode a commit is in the operating system's hands once
  // COMMIT returns, so a killed process loses nothing it acknowledged; only an OS crash could.
  it.each(['NORMAL', 'FULL'] as const)('with synchronous=%s', async (synchronous) => {
    const path = join(directory, `crash-${synchronous}.sqlite`);

    const run = await runAndKill(path, synchronous);

    expect(run.stderr).toBe('');
    expect(run.signal).toBe('SIGKILL');
    expect(run.finished).toBe(false);
    const ackedEvents = run.acks.reduce((sum, ack) => sum + ack.ids.length, 0);
    expect(ackedEvents).toBeLessThan(CHILD_TOTAL_EVENTS);

    const store = openSqliteEventStore({ path });
    let all: RecordedEvent[];
    try {
      all = await store.readAll();
      // Every acknowledged append is there, whole, where its acknowledgement said.
      for (const ack of run.acks) {
        const stored = await store.readStream(ack.streamName, { fromRevision: BigInt(ack.firstRevision), maxCount: ack.ids.length });
        expect(stored.map((event) => event.id)).toEqual(ack.ids);
        expect(stored[stored.length - 1]!.position).toBe(BigInt(ack.position));
      }
    } finally {
      await store.close();
    }

    expect(all.length).toBeGreaterThanOrEqual(ackedEvents);
    for (let index = 1; index < all.length; index++) expect(all[index]!.position > all[index - 1]!.position).toBe(true);
    // Every stored batch is complete and contiguous; every stream runs 0..n-1 without a gap.
    const batches = new Map<string, RecordedEvent[]>();
    const streams = new Map<string, bigint[]>();
    for (const event of all) {
      const batchId = event.metadata['batchId'] as string;
      batches.set(batchId, [...(batches.get(batchId) ?? []), event]);
      streams.set(event.streamName, [...(streams.get(event.streamName) ?? []), event.revision]);
    }
    for (const events of batches.values()) {
      expect(events).toHaveLength(events[0]!.metadata['batchSize'] as number);
      events.forEach((event, index) => expect(event.revision).toBe(events[0]!.revision + BigInt(index)));
    }
    for (const revisions of streams.values()) {
      expect(revisions).toEqual(revisions.map((_, index) => BigInt(index)));
    }
    const inspector = new Database(path, { readonly: true });
    try {
      expect(inspector.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      inspector.close();
    }
  });
});
