/**
 * The batch's own stream decides each result once (docs/gateway.md "Message Batches"): a result
 * already recorded records nothing, the settlement is one, at the sum of the results' charges, and
 * requests and results are recorded in chunks no larger than one append may hold.
 */
import { IllegalTransitionError } from '../../src/domain/domain.errors';
import { replay } from '../../src/domain/decider';
import {
  chargeResult,
  gatewayBatchDecider,
  MAX_BATCH_ENTRIES_PER_EVENT,
  type BatchResultReport,
  type GatewayBatchCommand,
  type GatewayBatchEvent,
  type GatewayBatchState,
} from '../../src/gateway/batches/gateway-batch';
import { NO_USAGE } from '../../src/runtime/usage';

const PRICES = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000, batchBasisPoints: 5_000 };
const AT = '2026-12-03T12:00:00.000Z';

function decideAll(commands: readonly GatewayBatchCommand[], from: GatewayBatchState = gatewayBatchDecider.initialState()): { state: GatewayBatchState; events: GatewayBatchEvent[] } {
  let state = from;
  const events: GatewayBatchEvent[] = [];
  for (const command of commands) {
    const decided = gatewayBatchDecider.decide(command, state);
    events.push(...decided);
    state = replay(gatewayBatchDecider, decided, state);
  }
  return { state, events };
}

const requests = (count: number) => Array.from({ length: count }, (_, index) => ({ customId: `r-${index}`, model: 'm', holdCredits: 1_000 }));
const created = (count: number): GatewayBatchCommand => ({
  type: 'CreateBatch',
  data: { batchId: 'msgbatch_x', organizationId: 'acme', keyId: 'k', keyName: 'bot', rateCards: [{ model: 'm', version: 1, prices: PRICES }], requests: requests(count), createdAt: AT },
});
const succeeded = (customId: string): BatchResultReport => ({ customId, type: 'succeeded', usage: { ...NO_USAGE, inputTokens: 100, outputTokens: 20 } });

describe('Message Batches: the batch’s stream decides each result once', () => {
  it(`records 2,500 requests in chunks of at most ${MAX_BATCH_ENTRIES_PER_EVENT}, and none twice`, () => {
    const first = decideAll([created(2_500)]);
    expect(first.events.map((event) => event.type)).toEqual(['GatewayBatchCreated', 'GatewayBatchRequestsRecorded']);
    const rest = decideAll([{ type: 'RecordBatchRequests', data: { requests: requests(2_500).slice(MAX_BATCH_ENTRIES_PER_EVENT) } }], first.state);
    expect(rest.events.map((event) => (event.data as unknown as { requests: unknown[] }).requests.length)).toEqual([1_000, 500]);
    expect(decideAll([{ type: 'RecordBatchRequests', data: { requests: requests(2_500) } }], rest.state).events).toEqual([]);
  });

  it('charges a result recorded twice (a second fetch, a second instance) once, and settles once at the sum; errored, canceled and expired at nothing', () => {
    const submitted = decideAll([created(4), { type: 'SubmitBatch', data: { upstreamBatchId: 'up', submittedAt: AT } }]).state;
    const reports: BatchResultReport[] = [succeeded('r-0'), { customId: 'r-1', type: 'errored' }, { customId: 'r-2', type: 'canceled' }, { customId: 'r-3', type: 'expired' }];
    const once = decideAll([{ type: 'RecordBatchResults', data: { results: reports, recordedAt: AT } }], submitted);
    // 100 × 3 + 20 × 15 = 600 credits, at half price 300.
    expect(once.events).toHaveLength(1);
    expect((once.events[0]!.data as unknown as { results: { priceCredits: number }[] }).results.map((result) => result.priceCredits)).toEqual([300, 0, 0, 0]);
    const twice = decideAll([{ type: 'RecordBatchResults', data: { results: reports, recordedAt: AT } }, { type: 'SettleBatch', data: { settledAt: AT } }, { type: 'SettleBatch', data: { settledAt: AT } }], once.state);
    expect(twice.events).toEqual([{ type: 'GatewayBatchSettled', data: { chargeCredits: 300, counts: { succeeded: 1, errored: 1, canceled: 1, expired: 1 }, settledAt: AT } }]);
  });

  it('settles nothing until every request has its result, and records no result for a custom_id the batch never sent', () => {
    const submitted = decideAll([created(2), { type: 'SubmitBatch', data: { upstreamBatchId: 'up', submittedAt: AT } }]).state;
    const partial = decideAll([{ type: 'RecordBatchResults', data: { results: [succeeded('r-0'), succeeded('stranger')], recordedAt: AT } }], submitted);
    expect(partial.state.results.size).toBe(1);
    expect(() => gatewayBatchDecider.decide({ type: 'SettleBatch', data: { settledAt: AT } }, partial.state)).toThrow(IllegalTransitionError);
  });

  it('charges a succeeded request whose usage is missing or malformed its hold (unmeasured), never nothing', () => {
    const request = { customId: 'r-0', model: 'm', holdCredits: 1_000 };
    const card = { model: 'm', version: 1, prices: PRICES };
    expect(chargeResult({ customId: 'r-0', type: 'succeeded', malformedUsage: 'output_tokens' }, request, card)).toMatchObject({ unmeasured: 'output_tokens', priceCredits: 1_000 });
    expect(chargeResult({ customId: 'r-0', type: 'succeeded' }, request, card)).toMatchObject({ unmeasured: 'usage', priceCredits: 1_000 });
  });
});
