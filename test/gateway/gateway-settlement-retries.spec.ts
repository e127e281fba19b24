/**
 * GatewaySettlementRetries (issue 32): a gateway call's settlement the store could not take is tried
 * again with a doubling wait, within a named window that ends before recovery may take the call over,
 * and never after another failure or shutdown. Time is a VirtualClock's; the store's answers are the
 * test's. The whole path on a real server: test/gateway/gateway-postgres-restart.e2e.spec.ts.
 */
import { Logger } from '@nestjs/common';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { AppendOutcomeUnknownError, EventStoreUnavailableError, type EventStore, type StreamAppend } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import { GatewayAdmin } from '../../src/gateway/gateway-admin.service';
import type { GatewayAdmission, GatewayCallOutcome } from '../../src/gateway/gateway-call.port';
import { GatewayCalls } from '../../src/gateway/gateway-calls.service';
import {
  GATEWAY_SETTLEMENT_RETRY_INITIAL_DELAY_MS,
  GATEWAY_SETTLEMENT_RETRY_MAX_DELAY_MS,
  GATEWAY_SETTLEMENT_RETRY_WINDOW_MS,
  GatewaySettlementRetries,
} from '../../src/gateway/gateway-settlement-retries';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { invocationStreamName } from '../../src/invocations/invocation.events';
import { RECOVERY_DEADLINE_MARGIN_MS } from '../../src/invocations/invocation-ownership';
import { VirtualClock } from '../../src/runtime';
import { NO_USAGE } from '../../src/runtime/usage';
import { NO_TOOLS } from './support/body-facts';

const unavailable = (): EventStoreUnavailableError => new EventStoreUnavailableError('append', 'the server is restarting');

/** A settlement that fails as `answers` say, try by try (then succeeds), recording the clock at each try. */
function settlement(clock: VirtualClock, answers: readonly (Error | undefined)[]): { readonly tries: number[]; readonly settle: () => Promise<void> } {
  const tries: number[] = [];
  return {
    tries,
    settle: async () => {
      const answer = answers[tries.length];
      tries.push(clock.now());
      if (answer !== undefined) throw answer;
    },
  };
}

describe('issue 32, docs/gateway.md "Settlement": a gateway settlement the store could not take is tried again, bounded, so a measured call reaches STATE-PFM-LLM-001 transition 8 at its usage before recovery could take transition 14 at its hold (GatewaySettlementRetries)', () => {
  let clock: VirtualClock;
  let retries: GatewaySettlementRetries;

  beforeEach(() => {
    clock = new VirtualClock({ autoAdvance: false });
    retries = new GatewaySettlementRetries(clock);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });

  afterEach(() => jest.restoreAllMocks());

  it('tries again after 100 ms, the wait doubling up to 5 s, until the store takes it; then no more', async () => {
    const { tries, settle } = settlement(clock, Array.from({ length: 7 }, unavailable));
    retries.retry('call-1', settle);
    await clock.runAll();
    const waits = tries.map((at, index) => at - (index === 0 ? 0 : tries[index - 1]!));
    expect(waits).toEqual([100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000]);
    expect(waits[0]).toBe(GATEWAY_SETTLEMENT_RETRY_INITIAL_DELAY_MS);
    expect(Math.max(...waits)).toBe(GATEWAY_SETTLEMENT_RETRY_MAX_DELAY_MS);
    expect(clock.pendingTimers).toBe(0);
  });

  it('gives up once GATEWAY_SETTLEMENT_RETRY_WINDOW_MS passed with the store still away, before recovery may settle the call at its hold', async () => {
    expect(GATEWAY_SETTLEMENT_RETRY_WINDOW_MS).toBeLessThanOrEqual(RECOVERY_DEADLINE_MARGIN_MS);
    const { tries, settle } = settlement(clock, Array.from({ length: 1_000 }, unavailable));
    retries.retry('call-1', settle);
    await clock.runAll();
    expect(tries[tries.length - 1]).toBe(GATEWAY_SETTLEMENT_RETRY_WINDOW_MS);
    expect(tries.every((at) => at <= GATEWAY_SETTLEMENT_RETRY_WINDOW_MS)).toBe(true);
    expect(tries.length).toBeLessThan(30);
    expect(Logger.prototype.error).toHaveBeenCalledWith(expect.objectContaining({ message: 'gateway call not settled; recovery will settle it at its hold', invocationId: 'call-1' }));
  });

  it('stops at the first failure that is not the store being away (the call was settled by recovery meanwhile, say)', async () => {
    const { tries, settle } = settlement(clock, [unavailable(), new Error('IllegalTransitionError: already settled')]);
    retries.retry('call-1', settle);
    await clock.runAll();
    expect(tries).toEqual([100, 300]);
  });

  it('tries one call once at a time: a second retry of the same invocation while the first runs is not started', async () => {
    const first = settlement(clock, [unavailable()]);
    const second = settlement(clock, []);
    retries.retry('call-1', first.settle);
    retries.retry('call-1', second.settle);
    await clock.runAll();
    expect(first.tries).toEqual([100, 300]);
    expect(second.tries).toEqual([]);
  });

  it('at shutdown ends every wait and tries nothing more; nothing is retried after it', async () => {
    const { tries, settle } = settlement(clock, Array.from({ length: 1_000 }, unavailable));
    retries.retry('call-1', settle);
    await clock.advance(GATEWAY_SETTLEMENT_RETRY_INITIAL_DELAY_MS);
    expect(tries).toEqual([100]);
    await retries.beforeApplicationShutdown();
    const late = settlement(clock, []);
    retries.retry('call-2', late.settle);
    await clock.runAll();
    expect(tries).toEqual([100]);
    expect(late.tries).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});

/**
 * A store whose appends of an invocation's settlement commit but lose their answer `times` times
 * (the server went away between its commit and its reply), and which says when a hold was settled.
 */
function losingSettlementAnswers(store: EventStore, times: number): { readonly store: EventStore; readonly holdSettled: Promise<void> } {
  let lost = 0;
  let markSettled!: () => void;
  const holdSettled = new Promise<void>((resolve) => (markSettled = resolve));
  const answer = <Result>(result: Result, parts: readonly StreamAppend[]): Result => {
    const types = parts.flatMap((part) => part.events.map((event) => event.type));
    if (types.includes('HoldSettled')) markSettled();
    if (types.includes('InvocationSettled') && lost++ < times) {
      throw new AppendOutcomeUnknownError(parts[0]!.streamName, parts[0]!.expectedRevision, 'the server went away before it answered');
    }
    return result;
  };
  const append: EventStore['append'] = async (streamName, events, options) => answer(await store.append(streamName, events, options), [{ streamName, events, expectedRevision: options.expectedRevision }]);
  const appendTogether: EventStore['appendTogether'] = async (parts, options) => answer(await store.appendTogether!(parts, options), parts);
  const wrapped = { append, appendTogether } as Record<PropertyKey, unknown>;
  return { store: new Proxy(store, { get: (target, name) => wrapped[name] ?? Reflect.get(target, name) }), holdSettled };
}

describe('issue 32: GatewayCalls.settle tried again after its settlement committed but its answer was lost, charged once (STATE-PFM-LLM-001 transition 8)', () => {
  it('settles the hold at the usage the committed settlement recorded, and the invocation once, though the first try failed', async () => {
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    // The retries end with the hold settled, or by giving up, which they log.
    const gaveUp = new Promise<void>((resolve) => jest.spyOn(Logger.prototype, 'error').mockImplementation(() => resolve()));
    const clock = new VirtualClock({ startMs: Date.UTC(2026, 11, 1, 12) });
    const sqlite = await openEventStore('sqlite::memory:');
    // The repository re-sends an append whose outcome is unknown MAX_UNKNOWN_OUTCOME_RETRIES times; all of those lose their answer too.
    const { store, holdSettled } = losingSettlementAnswers(sqlite, 5);
    try {
      const repository = new AggregateRepository(store);
      const admin = new GatewayAdmin(repository, clock);
      const calls = new GatewayCalls(repository, clock, undefined, undefined, undefined, new GatewaySettlementRetries(clock));
      await repository.handle(accountStreamName('acme'), accountDecider, { type: 'GrantCredits', data: { credits: 1_000_000, reason: 'test', idempotencyKey: 'g-1', grantedAt: new Date(clock.now()).toISOString() } });
      const prices = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300 };
      await admin.priceModel('claude-sim', { prices, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true });
      const { key } = await admin.issueKey('acme', { name: 'ci-bot' });
      const facts = { bodyBytes: 1_000, model: 'claude-sim', maxTokens: 1_000, stream: false, imageBlocks: 0, documentBlocks: 0, ...NO_TOOLS };
      const call = (await calls.admit({ presentedKey: key, facts, requestId: 'r' })) as Extract<GatewayAdmission, { admitted: true }>;
      const outcome: GatewayCallOutcome = { startedAtMs: clock.now(), durationMs: 5, classification: 'ok', httpStatus: 200, usage: { ...NO_USAGE, inputTokens: 1_000, outputTokens: 100 }, timedOut: false, callerDisconnected: false };

      await expect(calls.settle(call, outcome)).rejects.toBeInstanceOf(AppendOutcomeUnknownError);
      await Promise.race([holdSettled, gaveUp]);

      const events = await sqlite.readStream(invocationStreamName(call.invocationId));
      expect(events.filter((event) => event.type === 'InvocationSettled')).toHaveLength(1);
      const invocation = (await repository.load(invocationStreamName(call.invocationId), invocationDecider)).state;
      // 1,000 × 3,000 + 100 × 15,000 millionths: 4.5, so 5 credits, below the 46 held.
      expect(invocation.settlement).toMatchObject({ settledBy: 'runtime', transition: 8, chargeCredits: 5, heldCredits: call.holdCredits });
      const account = (await repository.load(accountStreamName('acme'), accountDecider)).state;
      expect({ charged: account.charged, openHolds: account.openHolds.size }).toEqual({ charged: 5, openHolds: 0 });
    } finally {
      await sqlite.close();
      jest.restoreAllMocks();
    }
  });
});
