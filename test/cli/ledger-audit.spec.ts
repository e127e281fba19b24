import { BALANCE_COLLECTION, BALANCES_PROJECTION, balancesProjection, type BalanceView } from '../../projections';
import type { AccountEvent } from '../../src/accounts/account.events';
import { auditLedger, type LedgerDifference } from '../../src/cli/ledger-audit';
import type { DomainEvent } from '../../src/domain/decider';
import { gatewayBatchStreamName, holdIdOfBatch } from '../../src/gateway/batches/gateway-batch';
import { openReadModelStore, rebuildProjections, type SqliteReadModelStore } from '../../src/projection-runner';
import { InMemoryEventLog, newEvent } from '../projection-runner/fixtures/in-memory-event-log.fake';
import { at, attempt, completed, dispatched, estimated, figures, publicationV, reserved, settled, usage } from '../projections/support/invocation-log';

const granted = (credits: number): AccountEvent => ({ type: 'CreditsGranted', data: { credits, reason: 'funding', idempotencyKey: `grant-${credits}`, grantedAt: at(0) } });
const holdPlaced = (invocationId: string, credits = 500): AccountEvent => ({ type: 'HoldPlaced', data: { invocationId, credits, placedAt: at(8) } });
const holdSettled = (invocationId: string, chargedCredits: number, heldCredits = 500): AccountEvent => ({
  type: 'HoldSettled',
  data: { invocationId, heldCredits, chargedCredits, settledAt: at(1_100) },
});

class Log {
  readonly store = new InMemoryEventLog();

  append(streamName: string, ...events: DomainEvent[]): this {
    this.store.appendNow(streamName, events.map((event) => newEvent(event.type, event.data)));
    return this;
  }

  /**
   * Estimated, hold placed, reserved, dispatched, one attempt (12,333 input tokens at 3,000 per MTok:
   * 36.999, so 37 credits), completed and settled at 37 credits: what a run writes, in its order.
   */
  settledRun(invocationId: string, options: { organizationId?: string; holdCharge?: number | 'none' } = {}): this {
    const organizationId = options.organizationId ?? 'acme';
    const stream = `invocation-${invocationId}`;
    this.append(stream, estimated(publicationV(1), { invocationId, organizationId }))
      .append(`account-${organizationId}`, holdPlaced(invocationId))
      .append(stream, reserved(), dispatched(), attempt(1, 0, { usage: usage(12_333), priceCredits: 37 }), completed('completed', figures({ spentCredits: 37 })), settled(8, 37));
    if (options.holdCharge !== 'none') this.append(`account-${organizationId}`, holdSettled(invocationId, options.holdCharge ?? 37));
    return this;
  }
}

async function audit(log: Log, readStore: SqliteReadModelStore = openReadModelStore({ path: ':memory:' })): Promise<readonly LedgerDifference[]> {
  try {
    return (await auditLedger({ eventStore: log.store, readStore, pageEvents: 3 })).differences;
  } finally {
    readStore.close();
  }
}

async function balancesOf(log: Log): Promise<SqliteReadModelStore> {
  const store = openReadModelStore({ path: ':memory:' });
  await rebuildProjections({ eventStore: log.store, store, projections: [balancesProjection] });
  return store;
}

describe('audit verify cross-checks each account against the charges settled in its invocation streams (docs/lifecycle.md, docs/http.md)', () => {
  it('finds nothing wrong in what runs and the sweep write', async () => {
    const log = new Log().append('account-acme', granted(1_000)).settledRun('inv-1').settledRun('inv-2');
    // The sweep closing a request that stopped between its hold and its reservation (transition 12, then the hold).
    log
      .append('invocation-inv-3', estimated(publicationV(1), { invocationId: 'inv-3' }))
      .append('account-acme', holdPlaced('inv-3'))
      .append('invocation-inv-3', settled(12, 0, 'sweep', 0))
      .append('account-acme', holdSettled('inv-3', 0));
    expect(await audit(log, await balancesOf(log))).toEqual([]);
  });

  it('reports a hold left open after its invocation was settled, and the charge the account is missing', async () => {
    const log = new Log().append('account-acme', granted(1_000)).settledRun('inv-1', { holdCharge: 'none' });
    expect(await audit(log)).toEqual([
      { kind: 'hold_open_after_settlement', organizationId: 'acme', invocationId: 'inv-1', heldCredits: 500, chargeCredits: 37 },
      { kind: 'charges_total', organizationId: 'acme', accountCharged: 0, invocationCharges: 37 },
    ]);
  });

  it('reports a hold charged another amount than its invocation', async () => {
    const log = new Log().append('account-acme', granted(1_000)).settledRun('inv-1', { holdCharge: 40 });
    expect(await audit(log)).toEqual([
      { kind: 'hold_charge_mismatch', organizationId: 'acme', invocationId: 'inv-1', holdCharged: 40, invocationCharge: 37 },
      { kind: 'charges_total', organizationId: 'acme', accountCharged: 40, invocationCharges: 37 },
    ]);
  });

  it('reports a hold for an invocation that is not open in that organization', async () => {
    const log = new Log()
      .append('account-acme', granted(1_000), holdPlaced('ghost'))
      .append('invocation-inv-9', estimated(publicationV(1), { invocationId: 'inv-9', organizationId: 'globex' }))
      .append('account-acme', holdPlaced('inv-9'));
    expect(await audit(log)).toEqual([
      { kind: 'hold_for_unknown_invocation', organizationId: 'acme', invocationId: 'ghost' },
      { kind: 'hold_for_unknown_invocation', organizationId: 'acme', invocationId: 'inv-9' },
    ]);
  });

  it('reports an invocation settled as if credits were held when its account held none', async () => {
    const log = new Log()
      .append('account-acme', granted(1_000))
      .append('invocation-inv-1', estimated(publicationV(1)), reserved(), settled(13, 0, 'sweep', 500));
    expect(await audit(log)).toEqual([{ kind: 'settled_without_hold', organizationId: 'acme', invocationId: 'inv-1', heldCredits: 500 }]);
  });
});

describe('audit verify recomputes every attempt price from its usage and the copied rate version (docs/rules.md rule 07, BR-CAP-PFM-LLM-002-07)', () => {
  const run = (attemptPrice: number, charge: number, attemptUsage = usage(12_333)): Log =>
    new Log()
      .append('account-acme', granted(1_000))
      .append('invocation-inv-1', estimated(publicationV(1)))
      .append('account-acme', holdPlaced('inv-1'))
      .append('invocation-inv-1', reserved(), dispatched(), attempt(1, 0, { usage: attemptUsage, priceCredits: attemptPrice }), completed('completed', figures({ spentCredits: charge })), settled(8, charge))
      .append('account-acme', holdSettled('inv-1', charge));

  it('reports an attempt recorded at another price than its usage costs, naming the turn, retry and both figures', async () => {
    // 12,333 input tokens at 3,000 per MTok cost 37 credits; the record says 36.
    expect(await audit(run(36, 36))).toEqual([
      { kind: 'attempt_price', organizationId: 'acme', invocationId: 'inv-1', turn: 1, retry: 0, recordedCredits: 36, recomputedCredits: 37 },
    ]);
  });

  it('prices 1-hour cache writes and web searches at the copied defaults when the rate version names neither', async () => {
    // 1,000 one-hour writes at the 5-minute 3,750 per MTok = 3.75, plus 2 free searches: 4 credits.
    const attemptUsage = { ...usage(0), cacheWrite1hTokens: 1_000, webSearchRequests: 2 };
    expect(await audit(run(4, 4, attemptUsage))).toEqual([]);
  });

  it('reports a settlement at the sum of attempt prices that charged another sum than its attempts', async () => {
    expect(await audit(run(37, 40))).toEqual([{ kind: 'charge_vs_attempts', organizationId: 'acme', invocationId: 'inv-1', chargeCredits: 40, attemptCredits: 37 }]);
  });

  /** A gateway call held at 30 whose attempt cost 37, settled (transition 8) with the settlement `data` given. */
  const cappedGatewayCall = (settlement: Partial<ReturnType<typeof settled>['data']>): Log => {
    const gateway = { keyId: 'key-1', keyName: 'ci-bot', model: 'claude-sim', rateCardVersion: 1, stream: true };
    const call = estimated({ ...publicationV(1), creditHold: 30 });
    const settlement8 = settled(8, 30);
    return new Log()
      .append('account-acme', granted(1_000))
      .append('invocation-inv-1', { ...call, data: { ...call.data, gateway } })
      .append('account-acme', holdPlaced('inv-1', 30))
      .append('invocation-inv-1', reserved(), dispatched(), attempt(1, 0, { usage: usage(12_333), priceCredits: 37 }), completed('completed', figures({ spentCredits: 37 })), { ...settlement8, data: { ...settlement8.data, ...settlement } })
      .append('account-acme', holdSettled('inv-1', 30, 30));
  };

  it('finding 4: accepts a gateway call charged its hold below its attempt price only when the overrun on record accounts for the difference exactly (docs/gateway.md "Settlement")', async () => {
    expect(await audit(cappedGatewayCall({ overrunCredits: 7 }))).toEqual([]);
    // Capped in silence: the 7 credits the attempt cost beyond the hold are nowhere on record.
    expect(await audit(cappedGatewayCall({}))).toEqual([{ kind: 'charge_vs_attempts', organizationId: 'acme', invocationId: 'inv-1', chargeCredits: 30, attemptCredits: 37 }]);
    expect(await audit(cappedGatewayCall({ overrunCredits: 6 }))).toEqual([
      { kind: 'charge_vs_attempts', organizationId: 'acme', invocationId: 'inv-1', chargeCredits: 30, overrunCredits: 6, attemptCredits: 37 },
    ]);
  });
});

describe('audit verify checks the balances read model against its own arithmetic and the account streams', () => {
  it('reports a document that breaks available = granted + adjustments - charged - held, and one missing', async () => {
    const log = new Log().append('account-acme', granted(1_000)).append('account-globex', granted(200)).settledRun('inv-1', { holdCharge: 'none' });
    const store = await balancesOf(log);
    const acme = store.get<BalanceView>(BALANCES_PROJECTION, BALANCE_COLLECTION, 'acme')!;
    store.write((session) => {
      const balances = session.documents(BALANCES_PROJECTION);
      balances.put(BALANCE_COLLECTION, 'acme', { ...acme, held: 0 });
      balances.delete(BALANCE_COLLECTION, 'globex');
      balances.put(BALANCE_COLLECTION, 'nobody', { ...acme, organizationId: 'nobody', granted: 0, openHolds: {}, held: 0, running: 0, available: 0 });
    });
    const differences = (await audit(log, store)).filter((difference) => difference.kind.startsWith('balance'));
    expect(differences).toEqual([
      { kind: 'balance_identity', organizationId: 'acme', rule: 'available = granted + adjustments - charged - held', stored: 500, derived: 1_000 },
      { kind: 'balance_identity', organizationId: 'acme', rule: 'held = sum of open holds', stored: 0, derived: 500 },
      { kind: 'balance_mismatch', organizationId: 'acme', field: 'held', readModel: 0, accountStream: 500 },
      { kind: 'balance_missing', organizationId: 'nobody', missingFrom: 'account_stream' },
      { kind: 'balance_missing', organizationId: 'globex', missingFrom: 'read_model' },
    ]);
  });

  it('compares the read model as of its own checkpoint, so a model behind the log is not a difference', async () => {
    const log = new Log().append('account-acme', granted(1_000));
    const store = await balancesOf(log);
    log.append('account-acme', granted(250)).settledRun('inv-1');
    expect(await audit(log, store)).toEqual([]);
  });
});

describe('audit verify flags an account whose totals left the exact-integer range (docs/http.md)', () => {
  it('reports the first event that took a figure (here granted + adjustments) past Number.MAX_SAFE_INTEGER, once', async () => {
    // Written before the decider bounded every total: a log the audit must not call sound.
    const log = new Log()
      .append('account-acme', granted(Number.MAX_SAFE_INTEGER - 5))
      .append('account-acme', { type: 'CreditsAdjusted', data: { credits: 1_000, reason: 'r', idempotencyKey: 'adj-1', adjustedAt: at(1) } })
      .append('account-acme', { type: 'CreditsAdjusted', data: { credits: 1, reason: 'r', idempotencyKey: 'adj-2', adjustedAt: at(2) } });
    const differences = (await audit(log, await balancesOf(log))).filter((difference) => difference.kind === 'total_out_of_range');
    expect(differences).toEqual([
      { kind: 'total_out_of_range', organizationId: 'acme', afterEvents: 2, totals: { granted: Number.MAX_SAFE_INTEGER - 5, adjustments: 1_000, charged: 0, held: 0 } },
    ]);
  });
});

describe('audit verify recomputes each Message Batch result from its usage at the batch’s copied rate card, at batch rates (docs/gateway.md "Message Batches")', () => {
  const BATCH = 'msgbatch_0123456789abcdef0123456789abcdef';
  const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300, webSearchPerThousand: 0, batchBasisPoints: 5_000 };
  const batchLog = (priceOfFirst: number): Log => {
    const stream = gatewayBatchStreamName(BATCH);
    const holdId = holdIdOfBatch(BATCH);
    const requests = [
      { customId: 'a', model: 'm', holdCredits: 40 },
      { customId: 'b', model: 'm', holdCredits: 40 },
    ];
    // 10,000 input tokens at 3,000 per MTok = 30 credits, halved: 15; errored: nothing.
    const usageOfA = { ...usage(10_000), serviceTier: 'batch' };
    return new Log()
      .append('account-acme', granted(1_000))
      .append(
        stream,
        { type: 'GatewayBatchCreated', data: { batchId: BATCH, organizationId: 'acme', keyId: 'k', keyName: 'bot', requestCount: 2, holdCredits: 80, rateCards: [{ model: 'm', version: 1, prices: PRICES }], createdAt: at(0) } },
        { type: 'GatewayBatchRequestsRecorded', data: { requests } },
      )
      .append('account-acme', holdPlaced(holdId, 80))
      .append(
        stream,
        { type: 'GatewayBatchSubmitted', data: { upstreamBatchId: 'up-1', submittedAt: at(1) } },
        { type: 'GatewayBatchResultsRecorded', data: { results: [{ customId: 'a', model: 'm', type: 'succeeded', usage: usageOfA, priceCredits: priceOfFirst }, { customId: 'b', model: 'm', type: 'errored', priceCredits: 0 }], recordedAt: at(2) } },
        { type: 'GatewayBatchSettled', data: { chargeCredits: priceOfFirst, counts: { succeeded: 1, errored: 1, canceled: 0, expired: 0 }, settledAt: at(3) } },
      )
      .append('account-acme', holdSettled(holdId, priceOfFirst, 80));
  };

  it('finds nothing wrong in a batch held as one hold and settled at its results’ batch prices', async () => {
    expect(await audit(batchLog(15))).toEqual([]);
  });

  it('reports a result recorded at the whole price instead of the batch price, naming the batch and the request', async () => {
    expect(await audit(batchLog(30))).toEqual([{ kind: 'batch_result_price', organizationId: 'acme', batchId: BATCH, customId: 'a', recordedCredits: 30, recomputedCredits: 15 }]);
  });
});
