import { DEFAULT_MAX_RUNNING } from '../src/accounts/account.bounds';
import type { AccountEvent } from '../src/accounts/account.events';
import { availableOf, type Balance } from '../src/accounts/account.state';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import type { Projection } from '../src/projection-runner';
import { streamId } from './stream-names';

export const BALANCES_PROJECTION = 'balances';
export const BALANCE_COLLECTION = 'balance';

/** An organization's balance (docs/http.md `GET …/balance`). `available` is derived when written. */
export interface BalanceView extends Balance {
  readonly organizationId: string;
  readonly aiEnabled: boolean;
  readonly maxRunning: number;
  /** Holds not yet settled, by invocation (bounded by the requests in flight). */
  readonly openHolds: Readonly<Record<string, number>>;
}

type AccountRecordedEvent = RecordedEvent<AccountEvent['type']> & AccountEvent;

/** Balances per organization, folded from the account streams. */
export const balancesProjection: Projection<AccountRecordedEvent> = {
  name: BALANCES_PROJECTION,
  version: 1,
  handles: ['CreditsGranted', 'CreditsAdjusted', 'OrganizationSettingsChanged', 'HoldPlaced', 'HoldSettled'],
  apply(event, tx) {
    const organizationId = streamId(event.streamName, 'account');
    if (organizationId === undefined) return;
    const before = tx.get<BalanceView>(BALANCE_COLLECTION, organizationId) ?? emptyBalance(organizationId);
    tx.put(BALANCE_COLLECTION, organizationId, withDerived(applyAccountEvent(before, event)));
  },
};

function emptyBalance(organizationId: string): BalanceView {
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
    openHolds: {},
  };
}

function applyAccountEvent(balance: BalanceView, event: AccountEvent): BalanceView {
  switch (event.type) {
    case 'CreditsGranted':
      return { ...balance, granted: balance.granted + event.data.credits };
    case 'CreditsAdjusted':
      return { ...balance, adjustments: balance.adjustments + event.data.credits };
    case 'OrganizationSettingsChanged':
      return { ...balance, aiEnabled: event.data.aiEnabled, maxRunning: event.data.maxRunning };
    case 'HoldPlaced':
      return { ...balance, openHolds: { ...balance.openHolds, [event.data.invocationId]: event.data.credits } };
    case 'HoldSettled': {
      const { [event.data.invocationId]: _released, ...openHolds } = balance.openHolds;
      return { ...balance, charged: balance.charged + event.data.chargedCredits, openHolds };
    }
    default:
      // Credit alerts (AlertThresholdsSet, CreditThresholdCrossed) move no credits.
      return balance;
  }
}

function withDerived(balance: BalanceView): BalanceView {
  const holds = Object.values(balance.openHolds);
  const held = holds.reduce((sum, credits) => sum + credits, 0);
  return {
    ...balance,
    held,
    running: holds.length,
    available: availableOf(balance, held),
  };
}
