import { LEDGER_UPCASTERS } from '../../src/upcasters/ledger.upcasters';
import type { RecordedEvent } from '../../src/event-store/event-store.port';
import { startLedgerApp, seed } from '../support/ledger-app';

const stored = (type: string, data: unknown, schemaVersion = 1): RecordedEvent => ({
  id: 'e-1',
  type,
  data,
  metadata: { schemaVersion },
  streamName: 'x-1',
  revision: 0n,
  position: 1n,
  recordedAt: '2025-01-01T00:00:00.000Z',
});

const OLD_PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 };
const OLD_USAGE = { inputTokens: 10, outputTokens: 2, cacheWriteTokens: 5, cacheReadTokens: 1 };

describe('README.md "Prices" publications and attempts already in a log read with the new fields’ defaults (upcasters)', () => {
  it('reads an old publication with 1-hour writes at the 5-minute rate and web searches at 0', () => {
    const event = LEDGER_UPCASTERS.upcast(stored('OperationPublished', { operationId: 'op', version: 1, prices: OLD_PRICES }));
    expect(event.metadata.schemaVersion).toBe(2);
    expect((event.data as { prices: unknown }).prices).toEqual({ ...OLD_PRICES, cacheWrite1hPerMTok: 3_750, webSearchPerThousand: 0 });
  });

  it('reads the publication an old invocation copied the same way, and leaves an unknown operation’s null alone', () => {
    const copied = LEDGER_UPCASTERS.upcast(stored('InvocationEstimated', { invocationId: 'i', publication: { version: 1, prices: OLD_PRICES } }));
    expect((copied.data as { publication: { prices: unknown } }).publication.prices).toEqual({ ...OLD_PRICES, cacheWrite1hPerMTok: 3_750, webSearchPerThousand: 0 });
    expect(LEDGER_UPCASTERS.upcast(stored('InvocationEstimated', { invocationId: 'i', publication: null })).data).toEqual({ invocationId: 'i', publication: null });
  });

  it('reads old usage with no 1-hour writes and no web searches, on attempts and on the conversation totals', () => {
    expect((LEDGER_UPCASTERS.upcast(stored('AttemptRecorded', { turn: 1, usage: OLD_USAGE })).data as { usage: unknown }).usage).toEqual({
      ...OLD_USAGE,
      cacheWrite1hTokens: 0,
      webSearchRequests: 0,
    });
    expect(LEDGER_UPCASTERS.upcast(stored('AttemptRecorded', { turn: 1 })).data).toEqual({ turn: 1 });
    for (const type of ['InvocationCompleted', 'InvocationFailed']) {
      expect((LEDGER_UPCASTERS.upcast(stored(type, { usageTotals: OLD_USAGE })).data as { usageTotals: unknown }).usageTotals).toEqual({
        ...OLD_USAGE,
        cacheWrite1hTokens: 0,
        webSearchRequests: 0,
      });
    }
  });

  it('leaves a current event untouched', () => {
    const current = stored('AttemptRecorded', { turn: 1, usage: { ...OLD_USAGE, cacheWrite1hTokens: 7, webSearchRequests: 3 } }, 2);
    expect(LEDGER_UPCASTERS.upcast(current)).toBe(current);
  });

  it('has the application write the changed event types at version 2 and the others at 1', async () => {
    const ledger = await startLedgerApp();
    try {
      await seed(ledger, { operationId: 'op.versions', organizationId: 'acme' });
      const versions = Object.fromEntries((await ledger.store.readAll({})).map((event) => [event.type, event.metadata.schemaVersion]));
      // The instance's lease (taken on start) is written at version 1 like every unchanged type.
      expect(versions).toEqual({ OperationPublished: 2, CreditsGranted: 1, InstanceLeaseTaken: 1 });
    } finally {
      await ledger.close();
    }
  });
});
