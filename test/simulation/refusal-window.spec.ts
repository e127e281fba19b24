/**
 * On PostgreSQL a position is the writing transaction's id, taken at its first write, so an account
 * append that began before a gateway call's estimate may sort before it in the log and commit after
 * the admission read the account: the audit's fold then places the refusal's account state before the
 * window it scanned (`gateway.refusal-explained`, seed 9 once, src/simulation/README.md). The window
 * now opens at the account revision the store had committed when the estimate was issued, which the
 * simulated processes' stores report.
 */
import { randomUUID } from 'node:crypto';
import type { EventStore, NewEvent } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import { ActivityProbe } from '../../src/simulation/event-loop-pump';
import { AppendAcknowledgementLostError, FaultyEventStore, type AppendFault } from '../../src/simulation/faulty-event-store';
import { refusalWindowStart } from '../../src/simulation/log-audit';
import { NO_STORE_FAULTS } from '../support/no-store-faults';

const something = (count = 1): NewEvent[] => Array.from({ length: count }, () => ({ id: randomUUID(), type: 'Something', data: {}, metadata: { schemaVersion: 1 } }));

describe('the simulator: where the audit looks for the account state that refused a gateway call', () => {
  describe('the stores report each committed append', () => {
    let inner: EventStore;
    beforeEach(async () => {
      inner = await openEventStore('sqlite::memory:');
    });
    afterEach(() => inner.close());

    const storeReporting = (fault: AppendFault = 'none') => {
      const committed: { streamName: string; revision: bigint }[][] = [];
      const store = new FaultyEventStore(inner, { ...NO_STORE_FAULTS, faultFor: () => fault, committed: (parts) => void committed.push(parts.map((part) => ({ ...part }))) }, new ActivityProbe());
      return { store, committed };
    };

    it('with each part’s stream and last revision, an append across streams included', async () => {
      const { store, committed } = storeReporting();
      await store.append('account-a', something(2), { expectedRevision: 'no_stream' });
      await store.appendTogether!(
        [
          { streamName: 'account-a', events: something(), expectedRevision: 1n },
          { streamName: 'invocation-x', events: something(3), expectedRevision: 'no_stream' },
        ],
        {},
      );
      expect(committed).toEqual([
        [{ streamName: 'account-a', revision: 1n }],
        [
          { streamName: 'account-a', revision: 2n },
          { streamName: 'invocation-x', revision: 2n },
        ],
      ]);
    });

    it('even when its caller never hears of it (a lost acknowledgement), and not when it conflicted', async () => {
      const lost = storeReporting('lost-ack');
      await expect(lost.store.append('account-a', something(), { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(AppendAcknowledgementLostError);
      expect(lost.committed).toEqual([[{ streamName: 'account-a', revision: 0n }]]);
      const conflicted = storeReporting('conflict');
      await expect(conflicted.store.append('account-a', something(), { expectedRevision: 0n })).rejects.toThrow();
      expect(conflicted.committed).toEqual([]);
    });
  });

  describe('refusalWindowStart', () => {
    it('opens at the last moment before the estimate where positions follow commit order (SQLite, EventStoreDB)', () => {
      expect(refusalWindowStart(6, 2n, true)).toBe(5);
      expect(refusalWindowStart(0, undefined, true)).toBe(0);
    });

    it('opens at the account revision committed when the estimate was issued on PostgreSQL, which may sort earlier', () => {
      expect(refusalWindowStart(6, 2n, false)).toBe(2);
      expect(refusalWindowStart(6, 5n, false)).toBe(5);
      // Nothing of the account known committed: any of its states may have refused.
      expect(refusalWindowStart(6, undefined, false)).toBe(0);
    });
  });
});
