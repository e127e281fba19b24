import { randomUUID } from 'node:crypto';
import { QueryBus } from '@nestjs/cqrs';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { balanceOf } from '../../src/accounts/account.state';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { LEDGER_UPCASTERS } from '../../src/upcasters/ledger.upcasters';
import type { RecordedEvent } from '../../src/event-store/event-store.port';
import type { RecoverySettings } from '../../src/domain/recovery.settings';
import { InvocationRecovery } from '../../src/invocations/invocation-recovery';
import type { InvocationEvent } from '../../src/invocations/invocation.events';
import { SweepStaleInvocationsHandler } from '../../src/invocations/sweep-stale-invocations.handler';
import { SWEEP_CANDIDATES, type SweepCandidates } from '../../src/invocations/sweep-candidates.port';
import { LedgerMetrics } from '../../src/observability/ledger-metrics';
import { GetExplanationQuery } from '../../src/queries/ledger.queries';
import { VirtualClock } from '../../src/runtime';
import { placeHold } from '../accounts/account.fixtures';
import { HISTORY, PRICE_A, PUBLICATION, type HistoryName } from '../invocations/invocation.fixtures';
import { LedgerTestApp, startLedgerApp } from '../support/ledger-app';

const INTERVAL_MS = 60_000;
const STALE_AFTER_MS = 300_000;
const HOLD = PUBLICATION.creditHold;

/**
 * One leftover of each kind a crash can leave, as an earlier build or a killed process wrote it. The
 * histories are dated 2025, so by the service's clock every one is stale and past its deadline.
 */
const LEFTOVERS: readonly { readonly id: string; readonly history: HistoryName; readonly held: boolean; readonly kind: string; readonly transition?: number; readonly charge: number }[] = [
  { id: 'left-estimated', history: 'estimated', held: false, kind: 'estimated', transition: 12, charge: 0 },
  { id: 'left-estimated-held', history: 'estimated', held: true, kind: 'estimated', transition: 12, charge: 0 },
  { id: 'left-reserved', history: 'reserved', held: true, kind: 'reserved', transition: 13, charge: 0 },
  { id: 'left-dispatched', history: 'dispatched', held: true, kind: 'dispatched', transition: 14, charge: HOLD },
  { id: 'left-completed', history: 'completed', held: true, kind: 'completed', transition: 8, charge: PRICE_A },
  { id: 'left-pending', history: 'pending', held: true, kind: 'pending', transition: 9, charge: HOLD },
  { id: 'left-failed', history: 'failed', held: true, kind: 'failed', transition: 10, charge: PRICE_A },
  // Settled by its own run, which died before its account released the hold.
  { id: 'left-hold', history: 'settled', held: true, kind: 'hold', charge: PRICE_A },
];

/** Writes the leftovers on the account of org-1 and their invocation streams, as a crashed process left them. */
async function leaveBehind(ledger: LedgerTestApp, leftovers: typeof LEFTOVERS): Promise<void> {
  const repository = ledger.app.get(AggregateRepository);
  const account = accountStreamName('org-1');
  await repository.handle(account, accountDecider, { type: 'GrantCredits', data: { credits: 100_000, reason: 'funding', idempotencyKey: 'g-1', grantedAt: new Date().toISOString() } });
  await repository.handle(account, accountDecider, { type: 'ChangeSettings', data: { maxRunning: 100, changedAt: new Date().toISOString() } });
  for (const { id, history, held } of leftovers) {
    if (held) await repository.handle(account, accountDecider, placeHold(id, HOLD));
    const events = HISTORY[history].map((event: InvocationEvent) => ({
      id: randomUUID(),
      type: event.type,
      data: event.type === 'InvocationEstimated' ? { ...event.data, invocationId: id } : event.data,
      metadata: { schemaVersion: 1 },
    }));
    await ledger.store.append(`invocation-${id}`, events, { expectedRevision: 'no_stream' });
  }
}

async function logOf(ledger: LedgerTestApp): Promise<RecordedEvent[]> {
  return ledger.store.readAll();
}

const settlementsOf = (events: readonly RecordedEvent[], id: string) =>
  events.filter((event) => event.streamName === `invocation-${id}` && event.type === 'InvocationSettled').map((event) => event.data as Record<string, unknown>);
const holdSettlementsOf = (events: readonly RecordedEvent[], id: string) =>
  events.filter((event) => event.type === 'HoldSettled' && (event.data as { invocationId: string }).invocationId === id).map((event) => event.data as Record<string, unknown>);

async function accountBalance(ledger: LedgerTestApp) {
  return balanceOf((await ledger.app.get(AggregateRepository).load(accountStreamName('org-1'), accountDecider)).state);
}

describe('recovery finishes what a crash left behind, on start and on its schedule, with no operator (issue 24, STATE-PFM-LLM-001 transitions 8–14)', () => {
  const clock = new VirtualClock({ startMs: Date.now(), autoAdvance: false });
  let ledger: LedgerTestApp;

  beforeAll(async () => {
    // The crashed process's log, written with recovery off.
    const crashed = await startLedgerApp({ keepDirectory: true, env: { LEDGER_RECOVERY_INTERVAL_MS: '0' } });
    await leaveBehind(crashed, LEFTOVERS);
    await crashed.close();
    ledger = await startLedgerApp({
      directory: crashed.directory,
      clock,
      env: { LEDGER_RECOVERY_INTERVAL_MS: String(INTERVAL_MS), LEDGER_RECOVERY_STALE_AFTER_MS: String(STALE_AFTER_MS) },
    });
    // The first pass is due at start: let the clock reach it, and wait for it to end.
    await clock.advance(0);
    await ledger.app.get(InvocationRecovery).idle();
    await ledger.runner.caughtUp();
  });

  afterAll(() => ledger.close());

  it.each(LEFTOVERS.filter((leftover) => leftover.transition !== undefined))(
    'settles a $history request left by a crash ($id) once, by recovery, with transition $transition and its charge',
    async ({ id, transition, charge, held }) => {
      const events = await logOf(ledger);
      expect(settlementsOf(events, id)).toEqual([expect.objectContaining({ transition, chargeCredits: charge, settledBy: 'recovery' })]);
      expect(holdSettlementsOf(events, id)).toEqual(held ? [expect.objectContaining({ chargedCredits: charge, heldCredits: HOLD, settledBy: 'recovery' })] : []);
    },
  );

  it('releases the hold of an invocation its own run settled, at the charge the invocation recorded, once', async () => {
    const events = await logOf(ledger);
    expect(settlementsOf(events, 'left-hold')).toEqual([expect.objectContaining({ settledBy: 'runtime' })]);
    expect(holdSettlementsOf(events, 'left-hold')).toEqual([expect.objectContaining({ chargedCredits: PRICE_A, heldCredits: HOLD, settledBy: 'recovery' })]);
  });

  it('leaves nothing held: the balance charges exactly what the invocations were charged', async () => {
    const charged = LEFTOVERS.reduce((sum, { charge }) => sum + charge, 0);
    expect(await accountBalance(ledger)).toMatchObject({ held: 0, running: 0, charged, available: 100_000 - charged });
  });

  it('counts what it recovered in ledger_recovered_total by kind', async () => {
    const metric = await ledger.app.get(LedgerMetrics).registry.getSingleMetric('ledger_recovered_total')!.get();
    const byKind = Object.fromEntries(metric.values.map(({ labels, value }) => [String(labels.kind), value]));
    expect(byKind).toEqual({ estimated: 2, reserved: 1, dispatched: 1, completed: 1, pending: 1, failed: 1, hold: 1 });
  });

  it('says so in the explanation: settled by recovery after a restart, and the hold it released', async () => {
    const queries = ledger.app.get(QueryBus);
    const dispatched = await queries.execute(new GetExplanationQuery('left-dispatched'));
    expect(dispatched).toMatchObject({ settlement: { transition: 14, by: 'recovery', chargeCredits: HOLD } });
    expect(dispatched!.sentence).toContain(
      `Settled by recovery after a restart or a lost process (transition 14): abandoned in flight; its real cost was never learned, so charged the estimate, ${HOLD} credits.`,
    );
    const held = await queries.execute(new GetExplanationQuery('left-hold'));
    expect(held).toMatchObject({ settlement: { by: 'runtime' }, holdRelease: { by: 'recovery', heldCredits: HOLD } });
    expect(held!.sentence).toMatch(/Settled \(transition 8, by runtime\): charged 13 credits, the sum of its attempt prices\. Its 500-credit hold was released by recovery after a restart or a lost process\.$/);
  });

  it('runs again every LEDGER_RECOVERY_INTERVAL_MS by the clock, not before, and finishes what a later crash left', async () => {
    const recovery = ledger.app.get(InvocationRecovery);
    const passes = recovery.passes;
    await leaveBehind(ledger, [{ id: 'left-later', history: 'reserved', held: true, kind: 'reserved', transition: 13, charge: 0 }]);
    await clock.advance(INTERVAL_MS - 1);
    await recovery.idle();
    expect(recovery.passes).toBe(passes);
    expect(settlementsOf(await logOf(ledger), 'left-later')).toEqual([]);

    await clock.advance(1);
    await recovery.idle();
    expect(recovery.passes).toBe(passes + 1);
    expect(settlementsOf(await logOf(ledger), 'left-later')).toEqual([expect.objectContaining({ transition: 13, settledBy: 'recovery' })]);
    expect(await accountBalance(ledger)).toMatchObject({ held: 0, running: 0 });
  });
});

describe('recovery on several instances of one log settles each leftover once: the deciders refuse a second settlement (issue 24)', () => {
  let ledger: LedgerTestApp;

  beforeAll(async () => {
    ledger = await startLedgerApp({ env: { LEDGER_RECOVERY_INTERVAL_MS: '0' } });
    const many = Array.from({ length: 5 }, (_, copy) => LEFTOVERS.map((leftover) => ({ ...leftover, id: `${leftover.id}-${copy}` }))).flat();
    await leaveBehind(ledger, many);
  });

  afterAll(() => ledger.close());

  it('three instances recovering at once: one settlement and one release per leftover, every leftover reported by exactly one', async () => {
    const settings: RecoverySettings = { intervalMs: INTERVAL_MS, staleAfterMs: STALE_AFTER_MS };
    const candidates = ledger.app.get<SweepCandidates>(SWEEP_CANDIDATES);
    const clock = new VirtualClock({ startMs: Date.now(), autoAdvance: false });
    // Each instance its own repository and cache, as another process's would be, on the same log.
    const instances = Array.from({ length: 3 }, () => {
      const handler = new SweepStaleInvocationsHandler(new AggregateRepository(ledger.store, LEDGER_UPCASTERS), candidates, clock);
      return new InvocationRecovery((command) => handler.execute(command), clock, settings);
    });
    const reports = await Promise.all(instances.map((instance) => instance.recover()));
    // They really raced: the leftovers were shared out between the instances, not taken by the first.
    expect(reports.filter((report) => report.settled.length + report.releasedHolds.length > 0).length).toBeGreaterThan(1);

    const events = await logOf(ledger);
    const ids = [...new Set(events.filter((e) => e.streamName.startsWith('invocation-left-')).map((e) => e.streamName.slice('invocation-'.length)))];
    expect(ids).toHaveLength(5 * LEFTOVERS.length);
    for (const id of ids) {
      expect(settlementsOf(events, id)).toHaveLength(1);
      expect(holdSettlementsOf(events, id)).toHaveLength(id.startsWith('left-estimated-') && !id.startsWith('left-estimated-held') ? 0 : 1);
    }
    const reported = reports.flatMap((report) => [...report.settled.map((s) => s.invocationId), ...report.releasedHolds.map((r) => r.invocationId)]);
    expect(reported.sort()).toEqual(ids.sort());
    const charged = 5 * LEFTOVERS.reduce((sum, { charge }) => sum + charge, 0);
    expect(await accountBalance(ledger)).toMatchObject({ held: 0, running: 0, charged });
  });
});

describe('recovery leaves live requests alone (issue 24)', () => {
  it('settles nothing that is not stale by its own stream: a fresh reserved request, or a dispatched one inside its deadline', async () => {
    const clock = new VirtualClock({ startMs: Date.now(), autoAdvance: false });
    const ledger = await startLedgerApp({ clock, env: { LEDGER_RECOVERY_INTERVAL_MS: String(INTERVAL_MS) } });
    try {
      const repository = ledger.app.get(AggregateRepository);
      const account = accountStreamName('org-1');
      const now = (offsetMs: number) => new Date(clock.now() + offsetMs).toISOString();
      await repository.handle(account, accountDecider, { type: 'GrantCredits', data: { credits: 10_000, reason: 'funding', idempotencyKey: 'g-1', grantedAt: now(0) } });
      for (const id of ['fresh', 'in-flight']) await repository.handle(account, accountDecider, { ...placeHold(id, HOLD), data: { invocationId: id, credits: HOLD, placedAt: now(0) } });
      const estimatedAt = { type: 'InvocationEstimated', data: { invocationId: 'fresh', operationId: 'op', organizationId: 'org-1', publication: PUBLICATION, estimatedAt: now(0) } };
      await ledger.store.append('invocation-fresh', [estimatedAt, { type: 'InvocationReserved', data: { creditHold: HOLD, reservedAt: now(0) } }].map(withId), { expectedRevision: 'no_stream' });
      // Dispatched an hour ago under a two-hour budget: stale by activity, but its conversation may still run.
      const long = { ...PUBLICATION, limits: { ...PUBLICATION.limits, totalTimeMs: 2 * 3_600_000 } };
      await ledger.store.append(
        'invocation-in-flight',
        [
          { type: 'InvocationEstimated', data: { invocationId: 'in-flight', operationId: 'op', organizationId: 'org-1', publication: long, estimatedAt: now(-3_600_000) } },
          { type: 'InvocationReserved', data: { creditHold: HOLD, reservedAt: now(-3_600_000) } },
          { type: 'InvocationDispatched', data: { dispatchedAt: now(-3_600_000) } },
        ].map(withId),
        { expectedRevision: 'no_stream' },
      );
      const report = await ledger.app.get(InvocationRecovery).recover();
      expect(report).toMatchObject({ settled: [], releasedHolds: [] });
      expect(await accountBalance(ledger)).toMatchObject({ held: 2 * HOLD, running: 2 });
    } finally {
      await ledger.close();
    }
  });
});

describe('docs/lifecycle.md "Recovery", how soon a dead instance\'s holds are released: the hold of an invocation its own run settled (STATE-PFM-LLM-001 transition 8) and whose owner\'s lease lapsed is released at once', () => {
  it("releases it inside the staleness threshold once the owner's lease is recorded expired, and leaves a live owner's to its run", async () => {
    const clock = new VirtualClock({ startMs: Date.now(), autoAdvance: false });
    const ledger = await startLedgerApp({ clock, env: { LEDGER_RECOVERY_INTERVAL_MS: String(INTERVAL_MS), LEDGER_RECOVERY_STALE_AFTER_MS: String(STALE_AFTER_MS) } });
    try {
      const repository = ledger.app.get(AggregateRepository);
      const account = accountStreamName('org-1');
      const now = (offsetMs: number) => new Date(clock.now() + offsetMs).toISOString();
      await repository.handle(account, accountDecider, { type: 'GrantCredits', data: { credits: 10_000, reason: 'funding', idempotencyKey: 'g-1', grantedAt: now(0) } });
      // Two instances' leases: one lapsed a second ago (its process was killed), one live.
      const leases = { 'lease-gone': now(-1_000), 'lease-live': now(30_000) };
      for (const [leaseId, expiresAt] of Object.entries(leases)) {
        await ledger.store.append(`lease-${leaseId}`, [withId({ type: 'InstanceLeaseTaken', data: { leaseId, instance: `host:${leaseId}`, takenAt: now(-30_000), expiresAt } })], { expectedRevision: 'no_stream' });
      }
      // Each invocation settled by its own run a moment ago; its account's HoldSettled never written.
      for (const [id, leaseId] of [['owner-gone', 'lease-gone'], ['owner-live', 'lease-live']] as const) {
        await repository.handle(account, accountDecider, { ...placeHold(id, HOLD), data: { invocationId: id, credits: HOLD, placedAt: now(-2_000) } });
        const events = HISTORY.settled.map((event: InvocationEvent) =>
          withId({
            type: event.type,
            data:
              event.type === 'InvocationEstimated'
                ? { ...event.data, invocationId: id, ownerLeaseId: leaseId }
                : event.type === 'InvocationSettled'
                  ? { ...event.data, settledAt: now(-500) }
                  : event.data,
          }),
        );
        await ledger.store.append(`invocation-${id}`, events, { expectedRevision: 'no_stream' });
      }

      const report = await ledger.app.get(InvocationRecovery).recover();

      expect(report.releasedHolds).toEqual([{ invocationId: 'owner-gone', organizationId: 'org-1', chargeCredits: PRICE_A }]);
      const events = await logOf(ledger);
      expect(holdSettlementsOf(events, 'owner-gone')).toEqual([expect.objectContaining({ chargedCredits: PRICE_A, heldCredits: HOLD, settledBy: 'recovery' })]);
      expect(holdSettlementsOf(events, 'owner-live')).toEqual([]);
      expect(events.filter((event) => event.type === 'InstanceLeaseExpired').map((event) => event.streamName)).toEqual(['lease-lease-gone']);
      expect(await accountBalance(ledger)).toMatchObject({ held: HOLD, running: 1 });
    } finally {
      await ledger.close();
    }
  });
});

function withId<T extends object>(event: T): T & { id: string; metadata: { schemaVersion: number } } {
  return { ...event, id: randomUUID(), metadata: { schemaVersion: 1 } };
}
