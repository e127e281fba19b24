import type { AccountEvent } from '../src/accounts/account.events';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import type { Projection } from '../src/projection-runner';
import { streamId } from './stream-names';

export const LEDGER_ENTRIES_PROJECTION = 'ledger-entries';
/** One document per entry, indexed by organization, ids ascending in the account's own order. */
export const LEDGER_ENTRY_COLLECTION = 'entry';
/** Per organization: the running totals the next entry's `availableAfter` starts from. */
const TOTALS_COLLECTION = 'totals';

export const LEDGER_ENTRY_KINDS = ['grant', 'adjustment', 'hold', 'charge', 'release'] as const;
export type LedgerEntryKind = (typeof LEDGER_ENTRY_KINDS)[number];

/**
 * One movement of an organization's credits (README.md "Invoicing"), naming its invocation or
 * idempotency key.
 */
export interface LedgerEntryView {
  readonly organizationId: string;
  /** The entry's place in the account: `<revision>.<n>` (a settlement is a charge then a release). */
  readonly sequence: string;
  readonly kind: LedgerEntryKind;
  /** Integer credits moved: granted, adjusted (may be negative), held, charged or released. */
  readonly credits: number;
  /** Holds, charges and releases name their invocation. */
  readonly invocationId?: string;
  /** Grants and adjustments name their idempotency key and reason. */
  readonly idempotencyKey?: string;
  readonly reason?: string;
  /** ISO-8601, by the service's clock. */
  readonly at: string;
  /** The organization's available credits once this entry is applied. */
  readonly availableAfter: number;
}

interface Totals {
  readonly available: number;
}

/** Digits of an account revision in an entry id, so ids sort in revision order. */
const REVISION_DIGITS = 20;

/** The entry's id: organization, then the account revision and the entry's place within the event. */
export function ledgerEntryId(organizationId: string, revision: bigint, part: number): string {
  return `${organizationId}\n${revision.toString().padStart(REVISION_DIGITS, '0')}.${part}`;
}

type AccountRecordedEvent = RecordedEvent<AccountEvent['type']> & AccountEvent;

/**
 * Ledger entries per organization: every grant, adjustment, hold, charge and release in the account
 * stream's order. The account stream is append-only, so an entry never changes and a cursor (the
 * last id read) always resumes exactly after it.
 */
export const ledgerEntriesProjection: Projection<AccountRecordedEvent> = {
  name: LEDGER_ENTRIES_PROJECTION,
  version: 1,
  handles: ['CreditsGranted', 'CreditsAdjusted', 'HoldPlaced', 'HoldSettled'],
  apply(event, tx) {
    const organizationId = streamId(event.streamName, 'account');
    if (organizationId === undefined) return;
    let available = tx.get<Totals>(TOTALS_COLLECTION, organizationId)?.available ?? 0;
    const entries: Omit<LedgerEntryView, 'organizationId' | 'sequence' | 'availableAfter'>[] = [];
    const moves: number[] = [];
    switch (event.type) {
      case 'CreditsGranted': {
        const { credits, reason, idempotencyKey, grantedAt } = event.data;
        entries.push({ kind: 'grant', credits, idempotencyKey, reason, at: grantedAt });
        moves.push(credits);
        break;
      }
      case 'CreditsAdjusted': {
        const { credits, reason, idempotencyKey, adjustedAt } = event.data;
        entries.push({ kind: 'adjustment', credits, idempotencyKey, reason, at: adjustedAt });
        moves.push(credits);
        break;
      }
      case 'HoldPlaced': {
        const { invocationId, credits, placedAt } = event.data;
        entries.push({ kind: 'hold', credits, invocationId, at: placedAt });
        moves.push(-credits);
        break;
      }
      case 'HoldSettled': {
        const { invocationId, heldCredits, chargedCredits, settledAt } = event.data;
        entries.push({ kind: 'charge', credits: chargedCredits, invocationId, at: settledAt });
        moves.push(-chargedCredits);
        entries.push({ kind: 'release', credits: heldCredits, invocationId, at: settledAt });
        moves.push(heldCredits);
        break;
      }
      default:
        return;
    }
    entries.forEach((entry, part) => {
      available += moves[part]!;
      const sequence = `${event.revision}.${part}`;
      tx.put(LEDGER_ENTRY_COLLECTION, ledgerEntryId(organizationId, event.revision, part), { organizationId, sequence, ...entry, availableAfter: available }, { indexKey: organizationId });
    });
    tx.put(TOTALS_COLLECTION, organizationId, { available } satisfies Totals);
  },
};
