import { DEFAULT_MAX_RUNNING } from '../src/accounts/account.bounds';
import type { AccountEvent } from '../src/accounts/account.events';
import { availableOf, type Balance } from '../src/accounts/account.state';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import type { Projection, ReadModelTx, SqliteReadModelStore } from '../src/projection-runner';
import { streamId } from './stream-names';

export const BALANCES_PROJECTION = 'balances';
export const BALANCE_COLLECTION = 'balance';
/**
 * An organization's open holds, one document each (id `organizationId/invocationId`, index key the
 * organization), so a hold placed or settled writes one small document whatever else is in flight.
 */
export const OPEN_HOLD_COLLECTION = 'open-hold';

/** An organization's balance (docs/http.md `GET …/balance`). `available` is derived when written. */
export interface BalanceView extends Balance {
  readonly organizationId: string;
  readonly aiEnabled: boolean;
  readonly maxRunning: number;
  /** Holds not yet settled, by invocation (bounded by the requests in flight). */
  readonly openHolds: Readonly<Record<string, number>>;
}

/**
 * The balance document as stored: its figures, `held` and `running` kept as each hold is placed and
 * settled. Its open holds are documents of their own (OPEN_HOLD_COLLECTION); balanceViewOf joins them.
 */
export type StoredBalance = Omit<BalanceView, 'openHolds'>;

/** One open hold of an organization (OPEN_HOLD_COLLECTION). */
export interface OpenHoldDocument {
  readonly invocationId: string;
  readonly credits: number;
}

type AccountRecordedEvent = RecordedEvent<AccountEvent['type']> & AccountEvent;

/** Balances per organization, folded from the account streams. */
export const balancesProjection: Projection<AccountRecordedEvent> = {
  name: BALANCES_PROJECTION,
  // 2: the open holds moved out of the balance document into OPEN_HOLD_COLLECTION.
  version: 2,
  handles: ['CreditsGranted', 'CreditsAdjusted', 'OrganizationSettingsChanged', 'HoldPlaced', 'HoldSettled'],
  apply(event, tx) {
    const organizationId = streamId(event.streamName, 'account');
    if (organizationId === undefined) return;
    const before = tx.get<StoredBalance>(BALANCE_COLLECTION, organizationId) ?? emptyBalance(organizationId);
    const after = applyAccountEvent(before, event, tx);
    tx.put(BALANCE_COLLECTION, organizationId, { ...after, available: availableOf(after, after.held) });
  },
};

/** The id of an organization's open hold in OPEN_HOLD_COLLECTION. */
export function openHoldId(organizationId: string, invocationId: string): string {
  return `${organizationId}/${invocationId}`;
}

/** The balance as the read side answers it: the stored figures and the organization's open holds. */
export function balanceViewOf(stored: StoredBalance, holds: Iterable<OpenHoldDocument>): BalanceView {
  const openHolds: Record<string, number> = {};
  for (const { invocationId, credits } of holds) openHolds[invocationId] = credits;
  return { ...stored, openHolds };
}

/** What the readers below read through: a read-model store, inside one snapshot so figures and holds agree. */
export type BalanceDocuments = Pick<SqliteReadModelStore, 'get' | 'listEvery'>;

/** An organization's balance with its open holds, or undefined when the read model has none. */
export function readBalanceView(store: BalanceDocuments, organizationId: string): BalanceView | undefined {
  const stored = store.get<StoredBalance>(BALANCES_PROJECTION, BALANCE_COLLECTION, organizationId);
  if (stored === undefined) return undefined;
  // At most the organization's maxRunning holds.
  const holds = store.listEvery<OpenHoldDocument>(BALANCES_PROJECTION, OPEN_HOLD_COLLECTION, { indexKey: organizationId });
  return balanceViewOf(stored, [...holds].map(({ document }) => document));
}

function emptyBalance(organizationId: string): StoredBalance {
  // A new account's defaults, until its settings say otherwise.
  return {
    organizationId,
    granted: 0,
    adjustments: 0,
    held: 0,
    charged: 0,
    available: 0,
    running: 0,
    aiEnabled: true,
    maxRunning: DEFAULT_MAX_RUNNING,
  };
}

function applyAccountEvent(balance: StoredBalance, event: AccountEvent, tx: ReadModelTx): StoredBalance {
  switch (event.type) {
    case 'CreditsGranted':
      return { ...balance, granted: balance.granted + event.data.credits };
    case 'CreditsAdjusted':
      return { ...balance, adjustments: balance.adjustments + event.data.credits };
    case 'OrganizationSettingsChanged':
      return { ...balance, aiEnabled: event.data.aiEnabled, maxRunning: event.data.maxRunning };
    case 'HoldPlaced': {
      const { invocationId, credits } = event.data;
      const id = openHoldId(balance.organizationId, invocationId);
      // A hold placed again for the same invocation replaces the first, as on the account.
      const replaced = tx.get<OpenHoldDocument>(OPEN_HOLD_COLLECTION, id);
      tx.put(OPEN_HOLD_COLLECTION, id, { invocationId, credits } satisfies OpenHoldDocument, { indexKey: balance.organizationId });
      return { ...balance, held: balance.held - (replaced?.credits ?? 0) + credits, running: balance.running + (replaced === undefined ? 1 : 0) };
    }
    case 'HoldSettled': {
      const id = openHoldId(balance.organizationId, event.data.invocationId);
      const released = tx.get<OpenHoldDocument>(OPEN_HOLD_COLLECTION, id);
      const charged = balance.charged + event.data.chargedCredits;
      // A settlement of a hold the balance does not hold (never placed here) moves only the charge.
      if (released === undefined) return { ...balance, charged };
      tx.delete(OPEN_HOLD_COLLECTION, id);
      return { ...balance, charged, held: balance.held - released.credits, running: balance.running - 1 };
    }
    default:
      // Credit alerts (AlertThresholdsSet, CreditThresholdCrossed) move no credits.
      return balance;
  }
}
