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
  balanceViewOf,
  OPEN_HOLD_COLLECTION,
  balancesProjection,
  USAGE_DAY_COLLECTION,
  USAGE_STATEMENTS_PROJECTION,
  usageStatementsProjection,
  utcDay,
  type BalanceView,
  type OpenHoldDocument,
  type StoredBalance,
  type UsageDayView,
} from '../../projections';
import { streamId } from '../../projections/stream-names';
import { accountDecider } from '../accounts/account.decider';
import type { AccountEvent } from '../accounts/account.events';
import { balanceOf, heldCredits, totalsAreExact, type AccountState, type AccountTotals, type Balance } from '../accounts/account.state';
import type { EventStore, RecordedEvent } from '../event-store/event-store.port';
import type { InvocationEvent } from '../invocations/invocation.events';
import { GATEWAY_BATCH_STREAM_PREFIX, holdIdOfBatch, type BatchRateCard, type GatewayBatchEvent } from '../gateway/batches/gateway-batch';
import { attemptsSettlement } from '../invocations/invocation.state';
import type { SqliteReadModelStore } from '../projection-runner';
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
      /**
       * A Message Batch's request result recorded at another price than its usage costs at the batch's
       * copied rate card version (served as a batch), its hold when unmeasured, 0 unless it succeeded.
       */
      readonly kind: 'batch_result_price';
      readonly organizationId: string;
      readonly batchId: string;
      readonly customId: string;
      readonly recordedCredits: number;
      readonly recomputedCredits: number;
    }
  | {
      /**
       * A settlement at the sum of attempt prices (transitions 8, 10) charged another sum; a gateway
       * call's charge may stop at its hold only with the rest on record as its overrun.
       */
      readonly kind: 'charge_vs_attempts';
      readonly organizationId: string;
      readonly invocationId: string;
      readonly chargeCredits: number;
      /** The overrun the settlement recorded, when it recorded one. */
      readonly overrunCredits?: number;
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
  const head = await options.eventStore.headPosition();
  const pass = new LedgerPass(balances?.checkpoint, statements?.checkpoint);
  await readLog(options.eventStore, head, options.pageEvents ?? AUDIT_PAGE_EVENTS, (event) => pass.read(event));
  const differences = [...pass.differences, ...pass.holdsOpenAfterSettlement(), ...pass.chargesTotals()];
  if (balances !== undefined) differences.push(...checkBalances(balances.documents, pass.accountsAtBalancesCheckpoint()));
  if (statements !== undefined) differences.push(...checkStatements(statements.creditsByDay, pass.chargesByDay));
  return { differences, events: pass.events, organizations: pass.accounts.size, invocations: pass.invocations, headPosition: head };
}

/** Reads the log in global order, page by page, up to `head`. */
async function readLog(store: EventStore, head: bigint | undefined, pageEvents: number, read: (event: RecordedEvent) => void): Promise<void> {
  let after: bigint | undefined;
  while (head !== undefined && (after === undefined || after < head)) {
    const page = await store.readAll({ ...(after === undefined ? {} : { after }), maxCount: pageEvents });
    if (page.length === 0) break;
    for (const event of page) {
      if (event.position > head) break;
      read(event);
    }
    after = page[page.length - 1]!.position;
  }
}

/**
 * The one pass over the log: folds each account, follows each open invocation, and records the
 * differences found on the way, in log order.
 */
class LedgerPass {
  readonly differences: LedgerDifference[] = [];
  readonly accounts = new Map<string, AccountState>();
  /** Charges settled per organization and UTC day, up to the statements' checkpoint. */
  readonly chargesByDay = new Map<string, number>();
  events = 0;
  invocations = 0;
  private readonly accountEvents = new Map<string, number>();
  /** Organizations already reported out of the exact-integer range (reported once each). */
  private readonly outOfRange = new Set<string>();
  /** Invocations estimated and not yet refused or settled → their organization. */
  private readonly openInvocations = new Map<string, string>();
  private readonly awaitingHold = new Map<string, SettledAwaitingHold>();
  private readonly invocationCharges = new Map<string, number>();
  /** Open invocations' copied rate versions and the sum of their recorded attempt prices. */
  private readonly openPricing = new Map<string, { readonly prices: Prices | undefined; readonly hold: number; readonly gateway: boolean; attemptCredits: number; truncated: boolean }>();
  private accountsAtCheckpoint: ReadonlyMap<string, AccountState> | undefined;
  /** Message Batches not yet settled: their organization, copied rate cards and requests' holds. */
  private readonly openBatches = new Map<string, { readonly organizationId: string; readonly cards: ReadonlyMap<string, BatchRateCard>; readonly requests: Map<string, { readonly model: string; readonly holdCredits: number }> }>();

  constructor(
    private readonly balancesCheckpoint: bigint | undefined,
    private readonly statementsCheckpoint: bigint | undefined,
  ) {
    if (balancesCheckpoint === undefined) this.accountsAtCheckpoint = new Map();
  }

  read(event: RecordedEvent): void {
    if (this.accountsAtCheckpoint === undefined && this.balancesCheckpoint !== undefined && event.position > this.balancesCheckpoint) {
      // Account states are immutable values, so a shallow copy is the balances as of the checkpoint.
      this.accountsAtCheckpoint = new Map(this.accounts);
    }
    this.events += 1;
    const organizationId = streamId(event.streamName, 'account');
    if (organizationId !== undefined) {
      this.accountEvent(organizationId, event as unknown as AccountEvent);
      return;
    }
    const invocationId = streamId(event.streamName, 'invocation');
    if (invocationId !== undefined) this.invocationEvent(invocationId, currentLedgerEvent(event) as unknown as InvocationEvent, event.position);
    if (event.streamName.startsWith(GATEWAY_BATCH_STREAM_PREFIX)) this.batchEvent(event.streamName.slice(GATEWAY_BATCH_STREAM_PREFIX.length), event as unknown as GatewayBatchEvent, event.position);
  }

  /**
   * A Message Batch is held and settled on the account as one hold (docs/gateway.md "Message Batches"):
   * it opens like an invocation, each result's price is recomputed from its usage at the batch's copied
   * rate card, and its settlement is what its hold must be charged.
   */
  private batchEvent(batchId: string, event: GatewayBatchEvent, position: bigint): void {
    const holdId = holdIdOfBatch(batchId);
    if (event.type === 'GatewayBatchCreated') {
      this.openInvocations.set(holdId, event.data.organizationId);
      this.openBatches.set(batchId, { organizationId: event.data.organizationId, cards: new Map(event.data.rateCards.map((card) => [card.model, card])), requests: new Map() });
      return;
    }
    const batch = this.openBatches.get(batchId);
    if (batch === undefined) return;
    if (event.type === 'GatewayBatchRequestsRecorded') for (const request of event.data.requests) batch.requests.set(request.customId, { model: request.model, holdCredits: request.holdCredits });
    if (event.type === 'GatewayBatchResultsRecorded') {
      for (const result of event.data.results) {
        const request = batch.requests.get(result.customId);
        const card = request === undefined ? undefined : batch.cards.get(request.model);
        const recomputed =
          result.type !== 'succeeded' ? 0 : result.unmeasured !== undefined ? (request?.holdCredits ?? -1) : card === undefined ? -1 : recomputePrice(result.usage, card.prices);
        if (recomputed !== result.priceCredits) {
          this.differences.push({ kind: 'batch_result_price', organizationId: batch.organizationId, batchId, customId: result.customId, recordedCredits: result.priceCredits, recomputedCredits: recomputed });
        }
      }
    }
    if (event.type !== 'GatewayBatchSettled') return;
    this.openBatches.delete(batchId);
    this.openInvocations.delete(holdId);
    const { chargeCredits, settledAt } = event.data;
    this.invocationCharges.set(batch.organizationId, (this.invocationCharges.get(batch.organizationId) ?? 0) + chargeCredits);
    // The usage statements count a batch's charge on the day it was settled, as an invocation's.
    if (this.statementsCheckpoint !== undefined && position <= this.statementsCheckpoint) {
      const key = `${batch.organizationId}\n${utcDay(settledAt)}`;
      this.chargesByDay.set(key, (this.chargesByDay.get(key) ?? 0) + chargeCredits);
    }
    const open = this.accounts.get(batch.organizationId)?.openHolds.get(holdId);
    if (open !== undefined) this.awaitingHold.set(holdId, { organizationId: batch.organizationId, chargeCredits, heldCredits: open.credits });
  }

  /** The accounts as the balances read model's checkpoint saw them (all of them when it is at the head). */
  accountsAtBalancesCheckpoint(): ReadonlyMap<string, AccountState> {
    return this.accountsAtCheckpoint ?? this.accounts;
  }

  private accountEvent(organizationId: string, event: AccountEvent): void {
    if (event.type === 'HoldPlaced') this.holdPlaced(organizationId, event.data.invocationId);
    if (event.type === 'HoldSettled') this.holdSettled(organizationId, event.data.invocationId, event.data.chargedCredits);
    const after = accountDecider.evolve(this.accounts.get(organizationId) ?? accountDecider.initialState(), event);
    this.accounts.set(organizationId, after);
    const count = (this.accountEvents.get(organizationId) ?? 0) + 1;
    this.accountEvents.set(organizationId, count);
    const totals: AccountTotals = { granted: after.granted, adjustments: after.adjustments, charged: after.charged, held: heldCredits(after) };
    if (!this.outOfRange.has(organizationId) && !totalsAreExact(totals)) {
      this.outOfRange.add(organizationId);
      this.differences.push({ kind: 'total_out_of_range', organizationId, afterEvents: count, totals });
    }
  }

  private holdPlaced(organizationId: string, invocationId: string): void {
    if (this.openInvocations.get(invocationId) !== organizationId) this.differences.push({ kind: 'hold_for_unknown_invocation', organizationId, invocationId });
  }

  private holdSettled(organizationId: string, invocationId: string, chargedCredits: number): void {
    const settled = this.awaitingHold.get(invocationId);
    if (settled === undefined) {
      this.differences.push({ kind: 'hold_settled_before_invocation', organizationId, invocationId, holdCharged: chargedCredits });
      return;
    }
    this.awaitingHold.delete(invocationId);
    if (settled.chargeCredits !== chargedCredits) {
      this.differences.push({ kind: 'hold_charge_mismatch', organizationId, invocationId, holdCharged: chargedCredits, invocationCharge: settled.chargeCredits });
    }
  }

  private invocationEvent(invocationId: string, event: InvocationEvent, position: bigint): void {
    switch (event.type) {
      case 'InvocationEstimated':
        this.invocations += 1;
        this.openInvocations.set(invocationId, event.data.organizationId);
        this.openPricing.set(invocationId, { prices: event.data.publication?.prices, hold: event.data.publication?.creditHold ?? 0, gateway: event.data.gateway !== undefined, attemptCredits: 0, truncated: false });
        return;
      case 'InvocationRefused':
        this.openInvocations.delete(invocationId);
        this.openPricing.delete(invocationId);
        return;
      case 'AttemptRecorded':
        return this.attemptRecorded(invocationId, event.data);
      case 'InvocationCompleted':
      case 'InvocationFailed': {
        const pricing = this.openPricing.get(invocationId);
        // Past MAX_RETAINED_ATTEMPTS some attempts have no record; only the loop's own total is exact then.
        if (pricing !== undefined) pricing.truncated = event.data.attemptsTruncated;
        return;
      }
      case 'InvocationSettled':
        return this.invocationSettled(invocationId, event.data, position);
      default:
        return;
    }
  }

  private attemptRecorded(invocationId: string, { turn, retry, usage, priceCredits }: Extract<InvocationEvent, { type: 'AttemptRecorded' }>['data']): void {
    const organizationId = this.openInvocations.get(invocationId);
    const pricing = this.openPricing.get(invocationId);
    if (organizationId === undefined || pricing?.prices === undefined) return;
    pricing.attemptCredits += priceCredits;
    const recomputed = recomputePrice(usage, pricing.prices);
    if (recomputed !== priceCredits) {
      this.differences.push({ kind: 'attempt_price', organizationId, invocationId, turn, retry, recordedCredits: priceCredits, recomputedCredits: recomputed });
    }
  }

  private invocationSettled(invocationId: string, settlement: Extract<InvocationEvent, { type: 'InvocationSettled' }>['data'], position: bigint): void {
    const organizationId = this.openInvocations.get(invocationId);
    // Settled without an estimate: not an invocation this audit can place; the decider never writes one.
    if (organizationId === undefined) return;
    this.openInvocations.delete(invocationId);
    const pricing = this.openPricing.get(invocationId);
    this.openPricing.delete(invocationId);
    const { chargeCredits, heldCredits, transition, settledAt } = settlement;
    if (this.statementsCheckpoint !== undefined && position <= this.statementsCheckpoint) {
      const key = `${organizationId}\n${utcDay(settledAt)}`;
      this.chargesByDay.set(key, (this.chargesByDay.get(key) ?? 0) + chargeCredits);
    }
    if ((transition === 8 || transition === 10) && pricing !== undefined && !pricing.truncated) {
      // A charge below the attempts' price is sound only when the overrun on record makes up the difference exactly.
      const overrunCredits = settlement.overrunCredits ?? 0;
      const expected = attemptsSettlement(pricing.attemptCredits, pricing.hold, pricing.gateway);
      if (expected.chargeCredits !== chargeCredits || expected.overrunCredits !== overrunCredits) {
        this.differences.push({ kind: 'charge_vs_attempts', organizationId, invocationId, chargeCredits, ...(overrunCredits === 0 ? {} : { overrunCredits }), attemptCredits: pricing.attemptCredits });
      }
    }
    this.invocationCharges.set(organizationId, (this.invocationCharges.get(organizationId) ?? 0) + chargeCredits);
    if (this.accounts.get(organizationId)?.openHolds.has(invocationId) === true) {
      this.awaitingHold.set(invocationId, { organizationId, chargeCredits, heldCredits });
    } else if (heldCredits > 0) {
      this.differences.push({ kind: 'settled_without_hold', organizationId, invocationId, heldCredits });
    }
  }

  /** After the pass: settled invocations whose account still holds credits for them. */
  holdsOpenAfterSettlement(): LedgerDifference[] {
    return [...this.awaitingHold].map(([invocationId, settled]) => ({
      kind: 'hold_open_after_settlement',
      organizationId: settled.organizationId,
      invocationId,
      heldCredits: this.accounts.get(settled.organizationId)?.openHolds.get(invocationId)?.credits ?? settled.heldCredits,
      chargeCredits: settled.chargeCredits,
    }));
  }

  /** After the pass: each organization's account charges against its invocations' settlements. */
  chargesTotals(): LedgerDifference[] {
    const differences: LedgerDifference[] = [];
    for (const organizationId of sortedUnion(this.accounts.keys(), this.invocationCharges.keys())) {
      const accountCharged = this.accounts.get(organizationId)?.charged ?? 0;
      const charges = this.invocationCharges.get(organizationId) ?? 0;
      if (accountCharged !== charges) differences.push({ kind: 'charges_total', organizationId, accountCharged, invocationCharges: charges });
    }
    return differences;
  }
}

/** The usage statements' credits per organization and day against the charges the log settled that day. */
function checkStatements(creditsByDay: ReadonlyMap<string, number>, chargesByDay: ReadonlyMap<string, number>): LedgerDifference[] {
  const differences: LedgerDifference[] = [];
  for (const key of sortedUnion(creditsByDay.keys(), chargesByDay.keys())) {
    const statementCredits = creditsByDay.get(key) ?? 0;
    const charges = chargesByDay.get(key) ?? 0;
    if (statementCredits !== charges) {
      const [organizationId, day] = key.split('\n') as [string, string];
      differences.push({ kind: 'statement_credits', organizationId, day, statementCredits, invocationCharges: charges });
    }
  }
  return differences;
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
 * The balances, each with its open holds, and their checkpoint, from one snapshot. Undefined when the
 * live store holds another version of the projection (or none): `verifyReadModel` reports that; there
 * is nothing here to check against.
 */
function readBalances(store: SqliteReadModelStore): BalancesSnapshot | undefined {
  return store.readSnapshot(() => {
    const checkpoint = store.checkpoint(BALANCES_PROJECTION);
    if (checkpoint === undefined || checkpoint.version !== balancesProjection.version) return undefined;
    const holdsByOrganization = new Map<string, OpenHoldDocument[]>();
    for (const { document, indexKey } of store.listEvery<OpenHoldDocument>(BALANCES_PROJECTION, OPEN_HOLD_COLLECTION)) {
      const organizationId = indexKey ?? '';
      const holds = holdsByOrganization.get(organizationId);
      if (holds === undefined) holdsByOrganization.set(organizationId, [document]);
      else holds.push(document);
    }
    const documents = [...store.listEvery<StoredBalance>(BALANCES_PROJECTION, BALANCE_COLLECTION)].map(({ document }) => balanceViewOf(document, holdsByOrganization.get(document.organizationId) ?? []));
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
    for (const { document } of store.listEvery<UsageDayView>(USAGE_STATEMENTS_PROJECTION, USAGE_DAY_COLLECTION)) {
      const key = `${document.organizationId}\n${document.day}`;
      creditsByDay.set(key, (creditsByDay.get(key) ?? 0) + document.credits);
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
