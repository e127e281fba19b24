import { randomUUID } from 'node:crypto';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { balanceOf } from '../../src/accounts/account.state';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { SweepStaleInvocationsCommand, type SweepReport } from '../../src/invocations/sweep-stale-invocations.command';
import { SystemClock } from '../../src/runtime';
import { placeHold } from '../accounts/account.fixtures';
import { HISTORY, PRICE_A, PUBLICATION, type HistoryName } from '../invocations/invocation.fixtures';
import { LedgerTestApp, startLedgerApp } from '../support/ledger-app';

/**
 * A run appends reserved with dispatched, and a result with its settlement, so no crash of this build
 * leaves a reserved request or an unsettled result. A log can still hold them (written by an earlier
 * build that appended each transition alone, or by another writer): the sweep settles them as docs/lifecycle.md
 * says. The histories are dated 2025 and the sweep runs a day ahead of the wall clock, so every one is stale.
 */
const A_DAY_MS = 86_400_000;
class TomorrowClock extends SystemClock {
  override now(): number {
    return super.now() + A_DAY_MS;
  }
}
const LEFTOVERS: { history: HistoryName; transition: number; charge: number }[] = [
  { history: 'reserved', transition: 13, charge: 0 },
  { history: 'completed', transition: 8, charge: PRICE_A },
  { history: 'completedUnmeasured', transition: 9, charge: PUBLICATION.creditHold },
  { history: 'pending', transition: 9, charge: PUBLICATION.creditHold },
  { history: 'failed', transition: 10, charge: PRICE_A },
];

describe('the sweep settles requests left between transitions by earlier builds (docs/lifecycle.md transitions 8, 9, 10, 13)', () => {
  let ledger: LedgerTestApp;

  beforeEach(async () => {
    // Recovery off: these prove the manual sweep, which recovery's first pass would pre-empt.
    ledger = await startLedgerApp({ clock: new TomorrowClock(), env: { LEDGER_RECOVERY_INTERVAL_MS: '0' } });
  });

  afterEach(() => ledger.close());

  it.each(LEFTOVERS)('settles a stale $history request with transition $transition and frees its hold', async ({ history, transition, charge }) => {
    const repository = ledger.app.get(AggregateRepository);
    const account = accountStreamName('org-1');
    await repository.handle(account, accountDecider, { type: 'GrantCredits', data: { credits: 10_000, reason: 'funding', idempotencyKey: 'g-1', grantedAt: new Date().toISOString() } });
    await repository.handle(account, accountDecider, placeHold('inv-1', PUBLICATION.creditHold));
    const events = HISTORY[history].map((event) => ({ id: randomUUID(), type: event.type, data: event.data, metadata: { schemaVersion: 1 } }));
    await ledger.store.append('invocation-inv-1', events, { expectedRevision: 'no_stream' });

    const report: SweepReport = await ledger.commandBus.execute(new SweepStaleInvocationsCommand(60_000));

    expect(report.settled).toEqual([expect.objectContaining({ invocationId: 'inv-1', transition, chargeCredits: charge })]);
    const { state } = await repository.load(account, accountDecider);
    expect(balanceOf(state)).toMatchObject({ held: 0, running: 0, charged: charge });
  });
});

/** The service's clock a year behind the store's (an EventStoreDB server's clock, say, or a skewed host). */
const A_YEAR_MS = 365 * A_DAY_MS;
class LastYearClock extends SystemClock {
  override now(): number {
    return super.now() - A_YEAR_MS;
  }
}

/** The history with every ISO time the events carry moved to `atMs`. */
function datedAt<T>(value: T, atMs: number): T {
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value)) return new Date(atMs).toISOString() as T;
  if (Array.isArray(value)) return value.map((item) => datedAt(item, atMs)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, datedAt(item, atMs)])) as T;
  }
  return value;
}

describe('STATE-PFM-LLM-001 transition 13: the sweep judges staleness by the service\'s clock alone, whatever clock the store records with', () => {
  let ledger: LedgerTestApp;
  const clock = new LastYearClock();

  beforeEach(async () => {
    ledger = await startLedgerApp({ clock, env: { LEDGER_RECOVERY_INTERVAL_MS: '0' } });
  });

  afterEach(() => ledger.close());

  it('settles a request its own events date two days back, though the store recorded it "a year ahead"', async () => {
    const repository = ledger.app.get(AggregateRepository);
    const account = accountStreamName('org-1');
    await repository.handle(account, accountDecider, { type: 'GrantCredits', data: { credits: 10_000, reason: 'funding', idempotencyKey: 'g-1', grantedAt: new Date(clock.now()).toISOString() } });
    await repository.handle(account, accountDecider, placeHold('inv-1', PUBLICATION.creditHold));
    const events = datedAt(HISTORY.reserved, clock.now() - 2 * A_DAY_MS).map((event) => ({ id: randomUUID(), type: event.type, data: event.data, metadata: { schemaVersion: 1 } }));
    await ledger.store.append('invocation-inv-1', events, { expectedRevision: 'no_stream' });

    const report: SweepReport = await ledger.commandBus.execute(new SweepStaleInvocationsCommand(A_DAY_MS));

    expect(report.settled).toEqual([expect.objectContaining({ invocationId: 'inv-1', transition: 13, chargeCredits: 0 })]);
  });
});
