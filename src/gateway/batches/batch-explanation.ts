/**
 * A Message Batch explained, and each of its requests (docs/gateway.md "Message Batches"): read from
 * the batch's own stream, with the figures a reader checks a charge by and a sentence that says them.
 */
import type { BatchResultRecord, BatchResultType, GatewayBatchState } from './gateway-batch';

/**
 * Where a batch stands: its requests being recorded, refused (nothing ran), its create's answer lost
 * (held until found upstream or certain not to run), sent, settled, deleted.
 */
export const BATCH_STATUSES = ['recording', 'refused', 'answer_lost', 'submitted', 'settled', 'deleted'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

export interface BatchExplanation {
  readonly batchId: string;
  readonly organizationId: string;
  readonly keyId: string;
  readonly keyName: string;
  readonly status: BatchStatus;
  readonly requestCount: number;
  /** Every request's worst case at batch rates, held as one hold. */
  readonly holdCredits: number;
  readonly rateCards: readonly { readonly model: string; readonly version: number; readonly batchBasisPoints: number | null }[];
  /** Results recorded so far, by type. */
  readonly results: Readonly<Record<BatchResultType, number>>;
  /** Present once settled: the sum of the results' charges, what the account charged. */
  readonly chargeCredits?: number;
  readonly refusedReason?: string;
  /** Its create's answer was lost: why, and when. */
  readonly answerLost?: { readonly reason: string; readonly at: string };
  /** When a batch whose create answer was lost was found in upstream's list. */
  readonly foundUpstreamAt?: string;
  readonly createdAt: string;
  readonly settledAt?: string;
  readonly sentence: string;
}

export interface BatchRequestExplanation {
  readonly batchId: string;
  readonly customId: string;
  readonly model: string;
  readonly rateCardVersion: number;
  readonly holdCredits: number;
  /** Absent until the batch's results are recorded. */
  readonly result?: BatchResultRecord;
  readonly sentence: string;
}

function statusOf(state: GatewayBatchState): BatchStatus {
  if (state.deletedAt !== undefined) return 'deleted';
  if (state.settled !== undefined && state.notSubmitted === undefined) return 'settled';
  if (state.notSubmitted !== undefined) return 'refused';
  if (state.upstreamBatchId !== undefined) return 'submitted';
  return state.answerLost === undefined ? 'recording' : 'answer_lost';
}

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;

export function explainBatch(state: GatewayBatchState): BatchExplanation | undefined {
  const created = state.created;
  if (created === undefined) return undefined;
  const results: Record<BatchResultType, number> = { succeeded: 0, errored: 0, canceled: 0, expired: 0 };
  for (const result of state.results.values()) results[result.type] += 1;
  const status = statusOf(state);
  const head = `Batch of ${plural(created.requestCount, 'request')} by key ${JSON.stringify(created.keyName)}, held ${created.holdCredits} credits at batch rates`;
  const tail =
    status === 'refused'
      ? `; refused (${state.notSubmitted!.reason}): nothing ran, nothing was charged, the hold (if placed) released.`
      : status === 'answer_lost'
        ? `; upstream's answer to its create was lost (${state.answerLost!.reason}): upstream may run it, so it stays held until it is found upstream or certain not to run.`
        : state.settled !== undefined
          ? `; ${results.succeeded} succeeded, ${results.errored} errored, ${results.canceled} canceled, ${results.expired} expired; charged ${state.settled.chargeCredits} credits for the succeeded requests' usage at batch rates, the rest of the hold released.`
          : `; not yet settled: ${state.results.size} of ${created.requestCount} results recorded.`;
  return {
    batchId: created.batchId,
    organizationId: created.organizationId,
    keyId: created.keyId,
    keyName: created.keyName,
    status,
    requestCount: created.requestCount,
    holdCredits: created.holdCredits,
    rateCards: created.rateCards.map((card) => ({ model: card.model, version: card.version, batchBasisPoints: card.prices.batchBasisPoints ?? null })),
    results,
    ...(state.settled === undefined ? {} : { chargeCredits: state.settled.chargeCredits, settledAt: state.settled.settledAt }),
    ...(state.notSubmitted === undefined ? {} : { refusedReason: state.notSubmitted.reason }),
    ...(state.answerLost === undefined ? {} : { answerLost: state.answerLost }),
    ...(state.found === undefined ? {} : { foundUpstreamAt: state.found.foundAt }),
    createdAt: created.createdAt,
    sentence: head + tail,
  };
}

const RESULT_WORDS: Readonly<Record<Exclude<BatchResultType, 'succeeded'>, string>> = { errored: 'errored', canceled: 'was canceled', expired: 'expired before it ran' };

export function explainBatchRequest(state: GatewayBatchState, customId: string): BatchRequestExplanation | undefined {
  const request = state.requests.get(customId);
  const card = state.created?.rateCards.find((candidate) => candidate.model === request?.model);
  if (request === undefined || card === undefined) return undefined;
  const result = state.results.get(customId);
  const head = `Request ${JSON.stringify(customId)} of batch ${state.created!.batchId} (${request.model}, rate card version ${card.version}) held ${request.holdCredits} credits at batch rates`;
  const tail =
    result === undefined
      ? '; its result is not recorded yet.'
      : result.type !== 'succeeded'
        ? `; it ${RESULT_WORDS[result.type]}: charged nothing, its hold released.`
        : result.unmeasured !== undefined
          ? `; it succeeded without usage the gateway could price (${result.unmeasured}): charged its hold.`
          : `; it succeeded and was charged ${result.priceCredits} credits for its usage at batch rates, the rest of its hold released.`;
  return { batchId: state.created!.batchId, customId, model: request.model, rateCardVersion: card.version, holdCredits: request.holdCredits, ...(result === undefined ? {} : { result }), sentence: head + tail };
}

/** A page of a list of ids: those after `after` (from the start when absent), at most `limit`, and the last one's id when more follow; undefined for an `after` not in the list. */
export function pageAfter(ids: readonly string[], after: string | undefined, limit: number): { readonly ids: readonly string[]; readonly nextAfter: string | null } | undefined {
  const start = after === undefined ? 0 : ids.indexOf(after) + 1;
  if (start === 0 && after !== undefined) return undefined;
  const chosen = ids.slice(start, start + limit);
  return { ids: chosen, nextAfter: start + limit < ids.length ? chosen.at(-1)! : null };
}
