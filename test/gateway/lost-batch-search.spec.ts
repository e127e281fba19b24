/**
 * A batch whose create answer was lost is recognised in upstream's list by its request count and its
 * `created_at` within its window, among batches no other gateway batch claimed, and only when the match
 * is unique (docs/gateway.md "Message Batches", src/gateway/batches/lost-batch-search.ts).
 */
import type { UpstreamBatchObject } from '../../src/gateway/batches/batch-upstream';
import { IllegalTransitionError } from '../../src/domain/domain.errors';
import { gatewayBatchDecider, type GatewayBatchCommand } from '../../src/gateway/batches/gateway-batch';
import { replay } from '../../src/domain/decider';
import { BATCH_CLOCK_SKEW_MS, GATEWAY_BATCH_UNSENT_AFTER_MS, matchLostBatch, type SearchedBatch } from '../../src/gateway/batches/lost-batch-search';

const CREATED_MS = Date.parse('2026-12-03T12:00:00.000Z');
const lost: SearchedBatch = { batchId: 'msgbatch_lost', createdAtMs: CREATED_MS, requestCount: 3, lost: true };

function listed(id: string, createdMs: number, count: number): UpstreamBatchObject {
  const at = new Date(createdMs).toISOString();
  return { id, type: 'message_batch', processing_status: 'in_progress', request_counts: { processing: count, succeeded: 0, errored: 0, canceled: 0, expired: 0 }, ended_at: null, created_at: at, expires_at: at, archived_at: null, cancel_initiated_at: null, results_url: null };
}

describe('A lost create answer: finding the batch upstream', () => {
  it('finds the one batch of its request count created in its window, none claimed by another gateway batch', () => {
    const mine = listed('up-mine', CREATED_MS + 2_000, 3);
    const claimed = listed('up-claimed', CREATED_MS + 1_000, 3);
    const other = { batchId: 'msgbatch_other', createdAtMs: CREATED_MS + 500, requestCount: 3, lost: false, upstreamBatchId: 'up-claimed' };
    const outcome = matchLostBatch(lost, [lost, other], [mine, claimed, listed('up-smaller', CREATED_MS + 3_000, 2)]);
    expect(outcome.found?.id).toBe('up-mine');
  });

  it('looks only within its window: from its record less the clock skew to when it counts unsent plus the skew', () => {
    const early = listed('up-early', CREATED_MS - BATCH_CLOCK_SKEW_MS - 1, 3);
    const late = listed('up-late', CREATED_MS + GATEWAY_BATCH_UNSENT_AFTER_MS + BATCH_CLOCK_SKEW_MS + 1, 3);
    expect(matchLostBatch(lost, [lost], [early, late])).toEqual({ candidates: 0, contenders: 0 });
    expect(matchLostBatch(lost, [lost], [listed('up-edge', CREATED_MS - BATCH_CLOCK_SKEW_MS, 3)]).found?.id).toBe('up-edge');
  });

  it('claims nothing when the match is not unique: two candidates, or another lost batch of the same count that could claim it', () => {
    expect(matchLostBatch(lost, [lost], [listed('up-1', CREATED_MS + 1, 3), listed('up-2', CREATED_MS + 2, 3)])).toEqual({ candidates: 2, contenders: 0 });
    const rival = { batchId: 'msgbatch_rival', createdAtMs: CREATED_MS + 10, requestCount: 3, lost: true };
    expect(matchLostBatch(lost, [lost, rival], [listed('up-1', CREATED_MS + 1, 3)])).toEqual({ candidates: 1, contenders: 1 });
  });

  it('records the answer lost once, and a found batch only after its answer was lost', () => {
    const create: GatewayBatchCommand = {
      type: 'CreateBatch',
      data: { batchId: 'msgbatch_lost', organizationId: 'acme', keyId: 'k', keyName: 'bot', rateCards: [], requests: [{ customId: 'a', model: 'm', holdCredits: 10 }], createdAt: '2026-12-03T12:00:00.000Z' },
    };
    let state = replay(gatewayBatchDecider, gatewayBatchDecider.decide(create, gatewayBatchDecider.initialState()), gatewayBatchDecider.initialState());
    const find: GatewayBatchCommand = { type: 'FindBatchUpstream', data: { upstreamBatchId: 'up', upstreamCreatedAt: '2026-12-03T12:00:01.000Z', foundAt: '2026-12-03T12:20:00.000Z' } };
    expect(() => gatewayBatchDecider.decide(find, state)).toThrow(IllegalTransitionError);
    const lose: GatewayBatchCommand = { type: 'LoseBatchAnswer', data: { reason: 'upstream answered nothing', at: '2026-12-03T12:02:00.000Z' } };
    state = replay(gatewayBatchDecider, gatewayBatchDecider.decide(lose, state), state);
    expect(gatewayBatchDecider.decide(lose, state)).toEqual([]);
    state = replay(gatewayBatchDecider, gatewayBatchDecider.decide(find, state), state);
    expect(state.upstreamBatchId).toBe('up');
    expect(gatewayBatchDecider.decide(find, state)).toEqual([]);
  });
});
