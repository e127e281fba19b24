/**
 * The balances read model keeps each open hold as a document of its own and the balance's `held` and
 * `running` as holds are placed and settled (projections/balances.projection.ts), so a hold event
 * writes one small document whatever else the organization has in flight. Checked here against a
 * fold written again in the test (the open holds as one record, as the read model kept them before),
 * over any sequence of account events, applied in batches of any size through the SQLite read store.
 */
import fc from 'fast-check';
import { DEFAULT_MAX_RUNNING } from '../../src/accounts/account.bounds';
import { availableOf } from '../../src/accounts/account.state';
import type { AccountEvent } from '../../src/accounts/account.events';
import type { RecordedEvent } from '../../src/event-store/event-store.port';
import { openReadModelStore, type SqliteReadModelStore } from '../../src/projection-runner';
import { BALANCE_COLLECTION, BALANCES_PROJECTION, balancesProjection, OPEN_HOLD_COLLECTION, openHoldId, readBalanceView, type BalanceView, type StoredBalance } from '../../projections';

const AT = '2026-12-05T10:00:00.000Z';
const ORGANIZATIONS = ['org-1', 'org-2'] as const;
const invocation = fc.integer({ min: 0, max: 7 }).map((n) => `inv-${n}`);

/** Any account event the projection folds: holds placed (again, too) and settled (unknown ones, too), among grants and adjustments. */
const accountEvent: fc.Arbitrary<AccountEvent> = fc.oneof(
  fc.tuple(invocation, fc.integer({ min: 0, max: 500 })).map(([invocationId, credits]): AccountEvent => ({ type: 'HoldPlaced', data: { invocationId, credits, placedAt: AT } })),
  fc.tuple(invocation, fc.integer({ min: 0, max: 500 })).map(([invocationId, chargedCredits]): AccountEvent => ({ type: 'HoldSettled', data: { invocationId, heldCredits: 0, chargedCredits, settledAt: AT } })),
  fc.integer({ min: 1, max: 1_000 }).map((credits): AccountEvent => ({ type: 'CreditsGranted', data: { credits, reason: 'r', idempotencyKey: `grant-${credits}`, grantedAt: AT } })),
  fc.integer({ min: -100, max: 100 }).map((credits): AccountEvent => ({ type: 'CreditsAdjusted', data: { credits, reason: 'r', idempotencyKey: `adjust-${credits}`, adjustedAt: AT } }) as AccountEvent),
);
/** An event of one of two organizations, so one organization's holds never show in the other's balance. */
const event = fc.tuple(fc.constantFrom(...ORGANIZATIONS), accountEvent);

/** The balance as the read model folded it while the open holds were a record inside it (version 1). */
function referenceFold(events: ReadonlyArray<readonly [string, AccountEvent]>, organizationId: string): BalanceView | undefined {
  let balance: BalanceView | undefined;
  for (const [owner, accountEvent] of events) {
    if (owner !== organizationId) continue;
    const before: BalanceView = balance ?? { organizationId, granted: 0, adjustments: 0, held: 0, charged: 0, available: 0, running: 0, aiEnabled: true, maxRunning: DEFAULT_MAX_RUNNING, openHolds: {} };
    let next: BalanceView = before;
    if (accountEvent.type === 'CreditsGranted') next = { ...before, granted: before.granted + accountEvent.data.credits };
    if (accountEvent.type === 'CreditsAdjusted') next = { ...before, adjustments: before.adjustments + accountEvent.data.credits };
    if (accountEvent.type === 'HoldPlaced') next = { ...before, openHolds: { ...before.openHolds, [accountEvent.data.invocationId]: accountEvent.data.credits } };
    if (accountEvent.type === 'HoldSettled') {
      const { [accountEvent.data.invocationId]: _settled, ...openHolds } = before.openHolds;
      next = { ...before, charged: before.charged + accountEvent.data.chargedCredits, openHolds };
    }
    const holds = Object.values(next.openHolds);
    const held = holds.reduce((sum, credits) => sum + credits, 0);
    balance = { ...next, held, running: holds.length, available: availableOf(next, held) };
  }
  return balance;
}

function recorded(organizationId: string, accountEvent: AccountEvent, position: number): RecordedEvent {
  return { ...accountEvent, id: `00000000-0000-4000-8000-${String(position).padStart(12, '0')}`, streamName: `account-${organizationId}`, revision: BigInt(position), position: BigInt(position + 1), metadata: { schemaVersion: 1 }, recordedAt: AT } as RecordedEvent;
}

/** Applies the events through the SQLite read store, `batch` events per write transaction, as the runner does. */
function project(store: SqliteReadModelStore, events: ReadonlyArray<readonly [string, AccountEvent]>, batch: number): void {
  for (let start = 0; start < events.length; start += batch) {
    store.write((session) => {
      const tx = session.documents(BALANCES_PROJECTION);
      events.slice(start, start + batch).forEach(([organizationId, accountEvent], index) => balancesProjection.apply(recorded(organizationId, accountEvent, start + index) as never, tx));
    });
  }
}

describe('read side: balances per organization (granted, adjustments, held, charged, available, running), each open hold a document of its own, held and running kept as holds are placed and settled', () => {
  it('answers the same balance as the fold that kept the open holds inside it, after any sequence applied in batches of any size', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 60 }), fc.integer({ min: 1, max: 8 }), (events, batch) => {
        const store = openReadModelStore({ path: ':memory:' });
        try {
          project(store, events, batch);
          for (const organizationId of ORGANIZATIONS) {
            const view = store.readSnapshot(() => readBalanceView(store, organizationId));
            const expected = referenceFold(events, organizationId);
            expect(view).toEqual(expected);
            // What is stored: the figures, not the holds; and one document per open hold, no more.
            expect(store.get<Record<string, unknown>>(BALANCES_PROJECTION, BALANCE_COLLECTION, organizationId)?.['openHolds']).toBeUndefined();
            const holdDocuments = store.list(BALANCES_PROJECTION, OPEN_HOLD_COLLECTION, { indexKey: organizationId }).map(({ id }) => id);
            expect(holdDocuments.sort()).toEqual(Object.keys(expected?.openHolds ?? {}).map((invocationId) => openHoldId(organizationId, invocationId)).sort());
          }
        } finally {
          store.close();
        }
      }),
      { numRuns: 200 },
    );
  });

  it('writes one open-hold document for a hold placed beside 999 others, and removes it when the hold is settled', () => {
    const store = openReadModelStore({ path: ':memory:' });
    try {
      const placed = Array.from({ length: 999 }, (_, n): readonly [string, AccountEvent] => ['org-1', { type: 'HoldPlaced', data: { invocationId: `open-${n}`, credits: 10, placedAt: AT } }]);
      project(store, [['org-1', { type: 'CreditsGranted', data: { credits: 100_000, reason: 'r', idempotencyKey: 'g', grantedAt: AT } }], ...placed], 1_000);
      project(store, [['org-1', { type: 'HoldPlaced', data: { invocationId: 'call', credits: 25, placedAt: AT } }]], 1);
      expect(store.get<StoredBalance>(BALANCES_PROJECTION, BALANCE_COLLECTION, 'org-1')).toMatchObject({ held: 10_015, running: 1_000, available: 89_985 });
      expect(store.get(BALANCES_PROJECTION, OPEN_HOLD_COLLECTION, openHoldId('org-1', 'call'))).toEqual({ invocationId: 'call', credits: 25 });
      project(store, [['org-1', { type: 'HoldSettled', data: { invocationId: 'call', heldCredits: 25, chargedCredits: 7, settledAt: AT } }]], 1);
      expect(store.get(BALANCES_PROJECTION, OPEN_HOLD_COLLECTION, openHoldId('org-1', 'call'))).toBeUndefined();
      const view = store.readSnapshot(() => readBalanceView(store, 'org-1'));
      expect({ held: view?.held, running: view?.running, charged: view?.charged, holds: Object.keys(view?.openHolds ?? {}).length }).toEqual({ held: 9_990, running: 999, charged: 7, holds: 999 });
    } finally {
      store.close();
    }
  });
});
