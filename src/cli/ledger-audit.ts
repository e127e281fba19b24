/**
 * The money half of `audit verify` (README.md "The auditors' CLI"): recompute each organization's
 * balance from its account stream alone, cross-check it against the charges recorded in the invocation
 * streams, and check the balances read model against both. Everything here is read from the log or the
 * read model; nothing is written.
 *
 * One pass over the log in global order joins the two kinds of stream. The join relies on the order
 * in which an invocation's own run (or the sweep) writes: InvocationEstimated before its HoldPlaced,
 * and InvocationSettled before its HoldSettled. So memory holds the organizations' account states,
 * the invocations still open, and the settled invocations whose hold is not yet settled — never one
 * record per invocation ever made.
 */
import {
  BALANCE_COLLECTION,
  BALANCES_PROJECTION,
  balancesProjection,
  USAGE_DAY_COLLECTION,
  USAGE_STATEMENTS_PROJECTION,
  usageStatementsProjection,
  utcDay,
  type BalanceView,
  type UsageDayView,
} from '../../projections';
import { streamId } from '../../projections/stream-names';
import { accountDecider } from '../accounts/account.decider';
import type { AccountEvent } from '../accounts/account.events';
import { balanceOf, heldCredits, totalsAreExact, type AccountState, type AccountTotals, type Balance } from '../accounts/account.state';
import type { EventStore, RecordedEvent } from '../event-store/event-store.port';
import type { InvocationEvent } from '../invocations/invocation.events';
import { MAX_LIST_LIMIT, type SqliteReadModelStore } from '../projection-runner';
import type { Prices } from '../runtime/conversation.types';
import { priceAttempt } from '../runtime/pricing';
import type { Usage } from '../runtime/provider.port';
import { currentLedgerEvent } from '../upcasters/ledger.upcasters';

/** Events read from the log per page. */
export const AUDIT_PAGE_EVENTS = 5_000;

const BALANCE_FIELDS = ['granted', 'adjustments', 'held', 'charged', 'available', 'running'] as const;

/** A disagreement between the account streams, the invocation streams and the balances read model. */
export type LedgerDifference =
  | {
      /** Sum of the organization's InvocationSettled charges ≠ what its account charged. */
      readonly kind: 'charges_total';
      readonly organizationId: string;
      readonly accountCharged: number;
      readonly invocationCharges: number;
    }
  | {
      /** An invocation is settled but its account still holds credits for it. */
      readonly kind: 'hold_open_after_settlement';
      readonly organizationId: string;
      readonly invocationId: string;
      readonly heldCredits: number;
      readonly chargeCredits: number;
    }
  | {
      /** The account charged an invocation's hold another amount than the invocation's settlement. */
      readonly kind: 'hold_charge_mismatch';
      readonly organizationId: string;
      readonly invocationId: string;
      readonly holdCharged: number;
      readonly invocationCharge: number;
    }
  | {
      /** The account settled a hold whose invocation was not settled (first). */
      readonly kind: 'hold_settled_before_invocation';
      readonly organizationId: string;
      readonly invocationId: string;
      readonly holdCharged: number;
    }
  | {
      /** The account placed a hold for an invocation that is not open in this organization. */
      readonly kind: 'hold_for_unknown_invocation';
      readonly organizationId: string;
      readonly invocationId: string;
    }
  | {
      /** A settled invocation says credits were held, but the account held none for it. */
      readonly kind: 'settled_without_hold';
      readonly organizationId: string;
      readonly invocationId: string;
      readonly heldCredits: number;
    }
  | {
      /**
       * An attempt's recorded price differs from its usage priced at the invocation's copied rate
       * version (docs/rules.md rule 07).
       */
      readonly kind: 'attempt_price';
      readonly organizationId: string;
      readonly invocationId: string;
      readonly turn: number;
      readonly retry: number;
      readonly recordedCredits: number;
      readonly recomputedCredits: number;
    }
  | {
      /** A settlement at the sum of attempt prices (transitions 8, 10) charged another sum than its attempts. */
      readonly kind: 'charge_vs_attempts';
      readonly organizationId: string;
      readonly invocationId: string;
      readonly chargeCredits: number;
      readonly attemptCredits: number;
    }
  | {
      /**
       * A usage statement's credits for a day differ from the charges its invocation streams settled
       * that day (README.md "The auditors' CLI").
       */
      readonly kind: 'statement_credits';
      readonly organizationId: string;
      readonly day: string;
      readonly statementCredits: number;
      readonly invocationCharges: number;
    }
  | {
      /** A balances document breaks its own arithmetic (docs/lifecycle.md "Settlement and the account"). */
      readonly kind: 'balance_identity';
      readonly organizationId: string;
      readonly rule: 'available = granted + adjustments - charged - held' | 'held = sum of open holds' | 'running = open holds';
      readonly stored: number;
      readonly derived: number;
    }
  | {
      /** A balances document disagrees with the balance recomputed from the account stream. */
      readonly kind: 'balance_mismatch';
      readonly organizationId: string;
      readonly field: (typeof BALANCE_FIELDS)[number];
      readonly readModel: number;
      readonly accountStream: number;
    }
  | {
      /**
       * An account total left the exact-integer range (docs/lifecycle.md "The exact-integer range");
       * its figures can no longer be trusted.
       */
      readonly kind: 'total_out_of_range';
      readonly organizationId: string;
      /** The account stream's revision-order event count at which it first left the range. */
      readonly afterEvents: number;
      readonly totals: AccountTotals;
    }
  | {
      /** An organization has an account stream but no balances document, or the reverse. */
      readonly kind: 'balance_missing';
      readonly organizationId: string;
      readonly missingFrom: 'read_model' | 'account_stream';
    };

export interface LedgerAuditResult {
  readonly differences: readonly LedgerDifference[];
  /** Events read from the log. */
  readonly events: number;
  readonly organizations: number;
  readonly invocations: number;
  /** Last log position audited. */
  readonly headPosition: bigint | undefined;
}

export interface LedgerAuditOptions {
  readonly eventStore: EventStore;
  /** The live read models, whose balances are checked; only read. */
  readonly readStore: SqliteReadModelStore;
  readonly pageEvents?: number;
}

interface SettledAwaitingHold {
  readonly organizationId: string;
  readonly chargeCredits: number;
  readonly heldCredits: number;
}

/** Audits the log up to its head as of the call, and the balances read model at its own checkpoint. */
export async function auditLedger(options: LedgerAuditOptions): Promise<LedgerAuditResult> {
  // The read model is read first, so the log's head is at or past its checkpoint.
  const balances = readBalances(options.readStore);
  const statements = readStatementCredits(options.readStore);
  /** Charges settled per organization and UTC day, up to the statements' checkpoint. */
  const chargesByDay = new Map<string, number>();
  const head = await options.eventStore.headPosition();
  const pageEvents = options.pageEvents ?? AUDIT_PAGE_EVENTS;

  const differences: LedgerDifference[] = [];
  const accounts = new Map<string, AccountState>();
  const accountEvents = new Map<string, number>();
  /** Organizations already reported out of the exact-integer range (reported once each). */
  const outOfRange = new Set<string>();
  /** Invocations estimated and not yet refused or settled → their organization. */
  const openInvocations = new Map<string, string>();
  const awaitingHold = new Map<string, SettledAwaitingHold>();
  const invocationCharges = new Map<string, number>();
  /** Open invocations' copied rate versions and the sum of their recorded attempt prices. */
  const openPricing = new Map<string, { readonly prices: Prices | undefined; attemptCredits: number; truncated: boolean }>();
  let accountsAtCheckpoint: ReadonlyMap<string, AccountState> | undefined = balances?.checkpoint === undefined ? new Map() : undefined;
  let events = 0;
  let invocations = 0;

  const onAccountEvent = (organizationId: string, event: AccountEvent): void => {
    const before = accounts.get(organizationId) ?? accountDecider.initialState();
    if (event.type === 'HoldPlaced' && openInvocations.get(event.data.invocationId) !== organizationId) {
      differences.push({ kind: 'hold_for_unknown_invocation', organizationId, invocationId: event.data.invocationId });
    }
    if (event.type === 'HoldSettled') {
      const { invocationId, chargedCredits } = event.data;
      const settled = awaitingHold.get(invocationId);
      if (settled === undefined) {
        differences.push({ kind: 'hold_settled_before_invocation', organizationId, invocationId, holdCharged: chargedCredits });
      } else {
        awaitingHold.delete(invocationId);
        if (settled.chargeCredits !== chargedCredits) {
          differences.push({ kind: 'hold_charge_mismatch', organizationId, invocationId, holdCharged: chargedCredits, invocationCharge: settled.chargeCredits });
        }
      }
    }
    const after = accountDecider.evolve(before, event);
    accounts.set(organizationId, after);
    accountEvents.set(organizationId, (accountEvents.get(organizationId) ?? 0) + 1);
    const totals: AccountTotals = { granted: after.granted, adjustments: after.adjustments, charged: after.charged, held: heldCredits(after) };
    if (!outOfRange.has(organizationId) && !totalsAreExact(totals)) {
      outOfRange.add(organizationId);
      differences.push({ kind: 'total_out_of_range', organizationId, afterEvents: accountEvents.get(organizationId)!, totals });
    }
  };

  const onInvocationEvent = (invocationId: string, event: InvocationEvent, position: bigint): void => {
    switch (event.type) {
      case 'InvocationEstimated':
        invocations += 1;
        openInvocations.set(invocationId, event.data.organizationId);
        openPricing.set(invocationId, { prices: event.data.publication?.prices, attemptCredits: 0, truncated: false });
        return;
      case 'InvocationRefused':
        openInvocations.delete(invocationId);
        openPricing.delete(invocationId);
        return;
      case 'AttemptRecorded': {
        const organizationId = openInvocations.get(invocationId);
        const pricing = openPricing.get(invocationId);
        if (organizationId === undefined || pricing?.prices === undefined) return;
        const { turn, retry, usage, priceCredits } = event.data;
        pricing.attemptCredits += priceCredits;
        const recomputed = recomputePrice(usage, pricing.prices);
        if (recomputed !== priceCredits) {
          differences.push({ kind: 'attempt_price', organizationId, invocationId, turn, retry, recordedCredits: priceCredits, recomputedCredits: recomputed });
        }
        return;
      }
      case 'InvocationCompleted':
      case 'InvocationFailed': {
        const pricing = openPricing.get(invocationId);
        // Past MAX_RETAINED_ATTEMPTS some attempts have no record; only the loop's own total is exact then.
        if (pricing !== undefined) pricing.truncated = event.data.attemptsTruncated;
        return;
      }
      case 'InvocationSettled': {
        const organizationId = openInvocations.get(invocationId);
        // Settled without an estimate: not an invocation this audit can place; the decider never writes one.
        if (organizationId === undefined) return;
        openInvocations.delete(invocationId);
        const pricing = openPricing.get(invocationId);
        openPricing.delete(invocationId);
        const { chargeCredits, heldCredits, transition, settledAt } = event.data;
        if (statements?.checkpoint !== undefined && position <= statements.checkpoint) {
          const key = `${organizationId}\n${utcDay(settledAt)}`;
          chargesByDay.set(key, (chargesByDay.get(key) ?? 0) + chargeCredits);
        }
        if ((transition === 8 || transition === 10) && pricing !== undefined && !pricing.truncated && pricing.attemptCredits !== chargeCredits) {
          differences.push({ kind: 'charge_vs_attempts', organizationId, invocationId, chargeCredits, attemptCredits: pricing.attemptCredits });
        }
        invocationCharges.set(organizationId, (invocationCharges.get(organizationId) ?? 0) + chargeCredits);
        if (accounts.get(organizationId)?.openHolds.has(invocationId) === true) {
          awaitingHold.set(invocationId, { organizationId, chargeCredits, heldCredits });
        } else if (heldCredits > 0) {
          differences.push({ kind: 'settled_without_hold', organizationId, invocationId, heldCredits });
        }
        return;
      }
      default:
        return;
    }
  };

  let after: bigint | undefined;
  while (head !== undefined && (after === undefined || after < head)) {
    const page = await options.eventStore.readAll({ ...(after === undefined ? {} : { after }), maxCount: pageEvents });
    if (page.length === 0) break;
    for (const event of page) {
      if (event.position > head) break;
      if (accountsAtCheckpoint === undefined && balances?.checkpoint !== undefined && event.position > balances.checkpoint) {
        // Account states are immutable values, so a shallow copy is the balances as of the checkpoint.
        accountsAtCheckpoint = new Map(accounts);
      }
      events += 1;
      route(event, onAccountEvent, onInvocationEvent);
    }
    after = page[page.length - 1]!.position;
  }

  for (const [invocationId, settled] of awaitingHold) {
    const held = accounts.get(settled.organizationId)?.openHolds.get(invocationId)?.credits ?? settled.heldCredits;
    differences.push({
      kind: 'hold_open_after_settlement',
      organizationId: settled.organizationId,
      invocationId,
      heldCredits: held,
      chargeCredits: settled.chargeCredits,
    });
  }
  for (const organizationId of sortedUnion(accounts.keys(), invocationCharges.keys())) {
    const accountCharged = accounts.get(organizationId)?.charged ?? 0;
    const charges = invocationCharges.get(organizationId) ?? 0;
    if (accountCharged !== charges) {
      differences.push({ kind: 'charges_total', organizationId, accountCharged, invocationCharges: charges });
    }
  }
  if (balances !== undefined) {
    differences.push(...checkBalances(balances.documents, accountsAtCheckpoint ?? accounts));
  }
  if (statements !== undefined) {
    for (const key of sortedUnion(statements.creditsByDay.keys(), chargesByDay.keys())) {
      const statementCredits = statements.creditsByDay.get(key) ?? 0;
      const charges = chargesByDay.get(key) ?? 0;
      if (statementCredits !== charges) {
        const [organizationId, day] = key.split('\n') as [string, string];
        differences.push({ kind: 'statement_credits', organizationId, day, statementCredits, invocationCharges: charges });
      }
    }
  }
  return { differences, events, organizations: accounts.size, invocations, headPosition: head };
}

function route(
  event: RecordedEvent,
  onAccount: (organizationId: string, event: AccountEvent) => void,
  onInvocation: (invocationId: string, event: InvocationEvent, position: bigint) => void,
): void {
  const organizationId = streamId(event.streamName, 'account');
  if (organizationId !== undefined) {
    onAccount(organizationId, event as unknown as AccountEvent);
    return;
  }
  const invocationId = streamId(event.streamName, 'invocation');
  if (invocationId !== undefined) onInvocation(invocationId, currentLedgerEvent(event) as unknown as InvocationEvent, event.position);
}

/** The attempt's price recomputed from its usage; -1 when the record cannot be priced at all (bad counts). */
function recomputePrice(usage: Usage | undefined, prices: Prices): number {
  try {
    return priceAttempt(usage, prices);
  } catch {
    return -1;
  }
}

interface BalancesSnapshot {
  /** The balances projection's checkpoint (undefined: it has applied nothing). */
  readonly checkpoint: bigint | undefined;
  readonly documents: readonly BalanceView[];
}

/**
 * The balances documents and their checkpoint, from one snapshot. Undefined when the live store holds
 * another version of the projection (or none): `verifyReadModel` reports that; there is nothing here
 * to check against.
 */
function readBalances(store: SqliteReadModelStore): BalancesSnapshot | undefined {
  return store.readSnapshot(() => {
    const checkpoint = store.checkpoint(BALANCES_PROJECTION);
    if (checkpoint === undefined || checkpoint.version !== balancesProjection.version) return undefined;
    const documents: BalanceView[] = [];
    let afterId: string | undefined;
    for (;;) {
      const page = store.list<BalanceView>(BALANCES_PROJECTION, BALANCE_COLLECTION, {
        limit: MAX_LIST_LIMIT,
        ...(afterId === undefined ? {} : { afterId }),
      });
      documents.push(...page.map((entry) => entry.document));
      if (page.length < MAX_LIST_LIMIT) break;
      afterId = page[page.length - 1]!.id;
    }
    return { checkpoint: checkpoint.position, documents };
  });
}

interface StatementCredits {
  readonly checkpoint: bigint | undefined;
  /** Credits per `<organizationId>\n<day>`, summed over the day's lines (operations and models). */
  readonly creditsByDay: ReadonlyMap<string, number>;
}

/** The usage statements' credits per organization and day, and their checkpoint, from one snapshot. */
function readStatementCredits(store: SqliteReadModelStore): StatementCredits | undefined {
  return store.readSnapshot(() => {
    const checkpoint = store.checkpoint(USAGE_STATEMENTS_PROJECTION);
    if (checkpoint === undefined || checkpoint.version !== usageStatementsProjection.version) return undefined;
    const creditsByDay = new Map<string, number>();
    let afterId: string | undefined;
    for (;;) {
      const page = store.list<UsageDayView>(USAGE_STATEMENTS_PROJECTION, USAGE_DAY_COLLECTION, { limit: MAX_LIST_LIMIT, ...(afterId === undefined ? {} : { afterId }) });
      for (const { document } of page) {
        const key = `${document.organizationId}\n${document.day}`;
        creditsByDay.set(key, (creditsByDay.get(key) ?? 0) + document.credits);
      }
      if (page.length < MAX_LIST_LIMIT) break;
      afterId = page[page.length - 1]!.id;
    }
    return { checkpoint: checkpoint.position, creditsByDay };
  });
}

function checkBalances(documents: readonly BalanceView[], accounts: ReadonlyMap<string, AccountState>): LedgerDifference[] {
  const differences: LedgerDifference[] = [];
  const seen = new Set<string>();
  for (const document of documents) {
    const organizationId = document.organizationId;
    seen.add(organizationId);
    const holds = Object.values(document.openHolds ?? {});
    const heldByHolds = holds.reduce((sum, credits) => sum + credits, 0);
    const identities = [
      ['available = granted + adjustments - charged - held', document.available, document.granted + document.adjustments - document.charged - document.held],
      ['held = sum of open holds', document.held, heldByHolds],
      ['running = open holds', document.running, holds.length],
    ] as const;
    for (const [rule, stored, derived] of identities) {
      if (stored !== derived) differences.push({ kind: 'balance_identity', organizationId, rule, stored, derived });
    }
    const account = accounts.get(organizationId);
    if (account === undefined || !account.exists) {
      differences.push({ kind: 'balance_missing', organizationId, missingFrom: 'account_stream' });
      continue;
    }
    const recomputed: Balance = balanceOf(account);
    for (const field of BALANCE_FIELDS) {
      if (document[field] !== recomputed[field]) {
        differences.push({ kind: 'balance_mismatch', organizationId, field, readModel: document[field], accountStream: recomputed[field] });
      }
    }
  }
  for (const [organizationId, account] of [...accounts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (account.exists && !seen.has(organizationId)) differences.push({ kind: 'balance_missing', organizationId, missingFrom: 'read_model' });
  }
  return differences;
}

function sortedUnion(a: Iterable<string>, b: Iterable<string>): string[] {
  return [...new Set([...a, ...b])].sort();
}
