import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { openSqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { streamInvocationEvents } from '../../src/http/invocation-events.stream';
import type { HttpResponse } from '../../src/http-kit/http.types';
import { closeReleasingFsyncs, HeldFsync, nextTurn } from '../support/held-fsync';

const directory = mkdtempSync(join(tmpdir(), 'ledger-sse-durable-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const event = (type: string, data: Record<string, unknown>): NewEvent => ({ id: randomUUID(), type, data, metadata: { schemaVersion: 1 } });
const estimated = event('InvocationEstimated', {
  invocationId: 'i1',
  operationId: 'op',
  organizationId: 'acme',
  publication: null,
  idempotencyKey: 'k',
  requestFingerprint: 'f'.repeat(64),
  estimatedAt: '2026-12-04T00:00:00.000Z',
});
const reserved = event('InvocationReserved', { invocationId: 'i1', creditHold: 700, reservedAt: '2026-12-04T00:00:00.001Z' });

/** The part of a Node response the event stream writes to, recording what was written. */
class RecordingResponse {
  statusCode = 0;
  readonly written: string[] = [];
  private onClose: (() => void) | undefined;
  setHeader(): void {}
  flushHeaders(): void {}
  write(chunk: string): boolean {
    this.written.push(chunk);
    return true;
  }
  end(): void {}
  on(name: string, listener: () => void): this {
    if (name === 'close') this.onClose = listener;
    return this;
  }
  close(): void {
    this.onClose?.();
  }
  /** The SSE event names written so far. */
  events(): string[] {
    return this.written.flatMap((chunk) => [...chunk.matchAll(/^event: (.+)$/gm)].map((match) => match[1]!));
  }
}

describe('docs/http.md async invocations: the event stream sends only what the log has on disk', () => {
  it('holds back a commit still waiting for its fsync (acknowledged at COMMIT) and sends it once the fsync returns', async () => {
    const fsync = new HeldFsync();
    const release = (): void => {
      while (fsync.held.length > 0) fsync.release();
    };
    const store = openSqliteEventStore({ path: join(directory, 'log.sqlite'), ...fsync.storeOptions });
    const durable = store.append('invocation-i1', [estimated], { expectedRevision: 'no_stream' });
    await nextTurn();
    release();
    await durable;
    // Committed, acknowledged at COMMIT, its fsync held: a reader of the stream sees it, the head does not.
    await store.append('invocation-i1', [reserved], { expectedRevision: 0n, acknowledge: 'committed' });
    expect(await store.readStream('invocation-i1')).toHaveLength(2);

    const response = new RecordingResponse();
    await streamInvocationEvents({ store, caller: { role: 'auditor' }, invocationId: 'i1', after: undefined, response: response as unknown as HttpResponse });
    expect(response.events()).toEqual(['InvocationEstimated']);

    release();
    // The subscription hands it over once the fsync returned: wait for it (jest's timeout bounds the wait).
    await new Promise<void>((resolve) => {
      const poll = (): void => (response.events().length >= 2 ? resolve() : void setTimeout(poll, 5));
      poll();
    });
    expect(response.events()).toEqual(['InvocationEstimated', 'InvocationReserved']);
    response.close();
    await closeReleasingFsyncs(store, fsync);
  });
});
