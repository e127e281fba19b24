/**
 * A Message Batch sent through the gateway (docs/gateway.md "Message Batches"): its own stream,
 * `gateway-batch-<id>`, keeps which organization and key created it, each request's custom_id, model
 * and hold, the upstream batch's id, and each request's result as it was charged. Every result is
 * decided here, on the batch's stream at its expected revision: a result already recorded is never
 * recorded (nor charged) again, however many times and from however many instances the results are
 * fetched. The account holds the whole batch as one hold (`holdIdOfBatch`), settled once, when every
 * request has its result, at the sum of their charges.
 *
 * Requests and results are recorded in chunks of at most MAX_BATCH_ENTRIES_PER_EVENT, each chunk its
 * own append: one append holds at most MAX_APPEND_SIZE_BYTES, and a batch may hold 100,000 requests.
 */
import type { Decider, DomainCommand, DomainEvent } from '../../domain/decider';
import { IllegalTransitionError, ValidationError } from '../../domain/domain.errors';
import type { GatewayPrices } from '../../runtime/conversation.types';
import { BATCH_SERVICE_TIER, priceAttempt } from '../../runtime/pricing';
import type { Usage } from '../../runtime/provider.port';

export const GATEWAY_BATCH_STREAM_PREFIX = 'gateway-batch-';
/** Requests (or results) one event records: about 100 bytes each, so a chunk stays far under one append's bytes. */
export const MAX_BATCH_ENTRIES_PER_EVENT = 1_000;
/** The result types Anthropic reports for a batch's request. */
export const BATCH_RESULT_TYPES = ['succeeded', 'errored', 'canceled', 'expired'] as const;
/** The operation a batch's requests are counted under in usage statements, beside gateway calls'. */
export const GATEWAY_BATCH_OPERATION_ID = 'gateway.anthropic-message-batches';
export type BatchResultType = (typeof BATCH_RESULT_TYPES)[number];

export function gatewayBatchStreamName(batchId: string): string {
  return `${GATEWAY_BATCH_STREAM_PREFIX}${batchId}`;
}

/** The id the account's hold for the batch goes by (ids there take no `_`). */
export function holdIdOfBatch(batchId: string): string {
  return `hold.${batchId.replace(/_/g, '.')}`;
}

/** The rate card version a batch's requests for one model are priced at, copied in as an invocation copies its publication. */
export interface BatchRateCard {
  readonly model: string;
  readonly version: number;
  readonly prices: GatewayPrices;
}

export interface BatchRequestRecord {
  readonly customId: string;
  readonly model: string;
  /** The request's worst case at batch rates, in credits. */
  readonly holdCredits: number;
}

/** A request's result as charged: its type, the usage it reported (succeeded), and its price. */
export interface BatchResultRecord {
  readonly customId: string;
  /** The request's model (its statement line's). */
  readonly model: string;
  readonly type: BatchResultType;
  readonly usage?: Usage;
  /** The usage field upstream reported malformed (or none at all for a succeeded request): charged its hold. */
  readonly unmeasured?: string;
  readonly priceCredits: number;
}

export type GatewayBatchCreated = DomainEvent<
  'GatewayBatchCreated',
  {
    readonly batchId: string;
    readonly organizationId: string;
    readonly keyId: string;
    readonly keyName: string;
    readonly requestCount: number;
    readonly holdCredits: number;
    readonly rateCards: readonly BatchRateCard[];
    readonly createdAt: string;
  }
>;
export type GatewayBatchRequestsRecorded = DomainEvent<'GatewayBatchRequestsRecorded', { readonly requests: readonly BatchRequestRecord[] }>;
export type GatewayBatchSubmitted = DomainEvent<'GatewayBatchSubmitted', { readonly upstreamBatchId: string; readonly submittedAt: string }>;
/** Refused at the hold, or by upstream: nothing went (or nothing will run) upstream, nothing is charged. */
export type GatewayBatchNotSubmitted = DomainEvent<'GatewayBatchNotSubmitted', { readonly reason: string; readonly at: string }>;
/**
 * Sent, and upstream's answer lost (no answer, or a 5xx after the request went: a timeout, a reset
 * connection, the creating instance stopped): upstream may have created the batch, so the hold stays
 * until the poller finds it upstream or is sure nothing runs (gateway-batches.poller.ts).
 */
export type GatewayBatchAnswerLost = DomainEvent<'GatewayBatchAnswerLost', { readonly reason: string; readonly at: string }>;
/** A batch whose create answer was lost, found in upstream's list: from here it is a submitted batch. */
export type GatewayBatchFoundUpstream = DomainEvent<'GatewayBatchFoundUpstream', { readonly upstreamBatchId: string; readonly upstreamCreatedAt: string; readonly foundAt: string }>;
/** `endedAt`: when upstream says the batch ended (its `ended_at`), what `reconcile anthropic` buckets the results' usage at; absent in results recorded before it was kept. */
export type GatewayBatchResultsRecorded = DomainEvent<'GatewayBatchResultsRecorded', { readonly results: readonly BatchResultRecord[]; readonly recordedAt: string; readonly endedAt?: string }>;
export type GatewayBatchSettled = DomainEvent<
  'GatewayBatchSettled',
  { readonly chargeCredits: number; readonly counts: Readonly<Record<BatchResultType, number>>; readonly settledAt: string }
>;
export type GatewayBatchDeleted = DomainEvent<'GatewayBatchDeleted', { readonly deletedAt: string }>;
export type GatewayBatchEvent =
  | GatewayBatchCreated
  | GatewayBatchRequestsRecorded
  | GatewayBatchSubmitted
  | GatewayBatchNotSubmitted
  | GatewayBatchAnswerLost
  | GatewayBatchFoundUpstream
  | GatewayBatchResultsRecorded
  | GatewayBatchSettled
  | GatewayBatchDeleted;

/** A result as read from upstream, before it is priced here. */
export interface BatchResultReport {
  readonly customId: string;
  readonly type: BatchResultType;
  readonly usage?: Usage;
  readonly malformedUsage?: string;
}

export type GatewayBatchCommand =
  | DomainCommand<'CreateBatch', Omit<GatewayBatchCreated['data'], 'requestCount' | 'holdCredits'> & { readonly requests: readonly BatchRequestRecord[] }>
  | DomainCommand<'RecordBatchRequests', { readonly requests: readonly BatchRequestRecord[] }>
  | DomainCommand<'SubmitBatch', GatewayBatchSubmitted['data']>
  | DomainCommand<'RefuseBatch', GatewayBatchNotSubmitted['data']>
  | DomainCommand<'LoseBatchAnswer', GatewayBatchAnswerLost['data']>
  | DomainCommand<'FindBatchUpstream', GatewayBatchFoundUpstream['data']>
  | DomainCommand<'RecordBatchResults', { readonly results: readonly BatchResultReport[]; readonly recordedAt: string; readonly endedAt?: string }>
  | DomainCommand<'SettleBatch', { readonly settledAt: string }>
  | DomainCommand<'DeleteBatch', { readonly deletedAt: string }>;

export interface GatewayBatchState {
  readonly created?: GatewayBatchCreated['data'];
  /** custom_id → the request, in the order sent. */
  readonly requests: ReadonlyMap<string, BatchRequestRecord>;
  readonly upstreamBatchId?: string;
  readonly notSubmitted?: GatewayBatchNotSubmitted['data'];
  /** Its create's answer was lost: held until found upstream (`found`) or released (`notSubmitted`). */
  readonly answerLost?: GatewayBatchAnswerLost['data'];
  readonly found?: GatewayBatchFoundUpstream['data'];
  /** custom_id → its result, as charged. */
  readonly results: ReadonlyMap<string, BatchResultRecord>;
  readonly settled?: GatewayBatchSettled['data'];
  readonly deletedAt?: string;
}

/** Every request recorded: the batch may be held and sent. */
export function allRequestsRecorded(state: GatewayBatchState): boolean {
  return state.created !== undefined && state.requests.size === state.created.requestCount;
}

/**
 * A result's charge: a succeeded request at its usage served as a batch (the batch multiplier of its
 * rate card version), or its hold when its usage is missing or malformed (unmeasured, as a gateway call
 * without usage is); errored, canceled and expired requests nothing.
 */
export function chargeResult(report: BatchResultReport, request: BatchRequestRecord, card: BatchRateCard): BatchResultRecord {
  const base = { customId: report.customId, model: request.model, type: report.type };
  if (report.type !== 'succeeded') return { ...base, priceCredits: 0 };
  if (report.usage === undefined) return { ...base, unmeasured: report.malformedUsage ?? 'usage', priceCredits: request.holdCredits };
  const usage: Usage = { ...report.usage, serviceTier: BATCH_SERVICE_TIER };
  try {
    return { ...base, usage, priceCredits: priceAttempt(usage, card.prices) };
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return { ...base, unmeasured: 'usage', priceCredits: request.holdCredits };
  }
}

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let at = 0; at < items.length; at += MAX_BATCH_ENTRIES_PER_EVENT) out.push(items.slice(at, at + MAX_BATCH_ENTRIES_PER_EVENT));
  return out;
}

function create(data: Extract<GatewayBatchCommand, { type: 'CreateBatch' }>['data'], state: GatewayBatchState): GatewayBatchEvent[] {
  if (state.created !== undefined) return [];
  const { requests, ...header } = data;
  const holdCredits = requests.reduce((sum, request) => sum + request.holdCredits, 0);
  if (!Number.isSafeInteger(holdCredits)) throw ValidationError.of('requests', 'the batch’s hold is past the exact-integer range');
  // The header and the first chunk; the caller records the rest, one append each.
  const first = requests.slice(0, MAX_BATCH_ENTRIES_PER_EVENT);
  return [
    { type: 'GatewayBatchCreated', data: { ...header, requestCount: requests.length, holdCredits } },
    { type: 'GatewayBatchRequestsRecorded', data: { requests: first } },
  ];
}

function recordRequests(requests: readonly BatchRequestRecord[], state: GatewayBatchState): GatewayBatchEvent[] {
  if (state.created === undefined) throw new IllegalTransitionError('no batch', 'RecordBatchRequests');
  const fresh = requests.filter((request) => !state.requests.has(request.customId));
  return chunks(fresh).map((chunk) => ({ type: 'GatewayBatchRequestsRecorded', data: { requests: chunk } }));
}

/** Each result not yet recorded, priced; results for custom_ids the batch never sent are left out. */
function recordResults({ results, recordedAt, endedAt }: Extract<GatewayBatchCommand, { type: 'RecordBatchResults' }>['data'], state: GatewayBatchState): GatewayBatchEvent[] {
  if (state.upstreamBatchId === undefined) throw new IllegalTransitionError(state.created === undefined ? 'no batch' : 'not submitted', 'RecordBatchResults');
  const cards = new Map(state.created!.rateCards.map((card) => [card.model, card]));
  const seen = new Set<string>();
  const fresh: BatchResultRecord[] = [];
  for (const report of results) {
    const request = state.requests.get(report.customId);
    if (request === undefined || state.results.has(report.customId) || seen.has(report.customId)) continue;
    seen.add(report.customId);
    fresh.push(chargeResult(report, request, cards.get(request.model)!));
  }
  return chunks(fresh).map((chunk) => ({ type: 'GatewayBatchResultsRecorded', data: { results: chunk, recordedAt, ...(endedAt === undefined ? {} : { endedAt }) } }));
}

/** Once: when every request has its result (or nothing was submitted), at the sum of their charges. */
function settle(settledAt: string, state: GatewayBatchState): GatewayBatchEvent[] {
  if (state.created === undefined) throw new IllegalTransitionError('no batch', 'SettleBatch');
  if (state.settled !== undefined) return [];
  const counts: Record<BatchResultType, number> = { succeeded: 0, errored: 0, canceled: 0, expired: 0 };
  if (state.notSubmitted === undefined && state.results.size < state.created.requestCount) {
    throw new IllegalTransitionError(`${state.results.size} of ${state.created.requestCount} results recorded`, 'SettleBatch');
  }
  let chargeCredits = 0;
  for (const result of state.results.values()) {
    counts[result.type] += 1;
    chargeCredits += result.priceCredits;
  }
  return [{ type: 'GatewayBatchSettled', data: { chargeCredits, counts, settledAt } }];
}

export function decideGatewayBatch(command: GatewayBatchCommand, state: GatewayBatchState): GatewayBatchEvent[] {
  switch (command.type) {
    case 'CreateBatch':
      return create(command.data, state);
    case 'RecordBatchRequests':
      return recordRequests(command.data.requests, state);
    case 'SubmitBatch':
      if (state.upstreamBatchId !== undefined || state.notSubmitted !== undefined) return [];
      if (!allRequestsRecorded(state)) throw new IllegalTransitionError('requests not all recorded', 'SubmitBatch');
      return [{ type: 'GatewayBatchSubmitted', data: command.data }];
    case 'RefuseBatch':
      if (state.upstreamBatchId !== undefined || state.notSubmitted !== undefined) return [];
      return [{ type: 'GatewayBatchNotSubmitted', data: command.data }];
    case 'LoseBatchAnswer':
      if (state.created === undefined) throw new IllegalTransitionError('no batch', 'LoseBatchAnswer');
      if (state.upstreamBatchId !== undefined || state.notSubmitted !== undefined || state.answerLost !== undefined) return [];
      return [{ type: 'GatewayBatchAnswerLost', data: command.data }];
    case 'FindBatchUpstream':
      if (state.upstreamBatchId !== undefined || state.notSubmitted !== undefined) return [];
      if (state.answerLost === undefined) throw new IllegalTransitionError('its create was answered', 'FindBatchUpstream');
      return [{ type: 'GatewayBatchFoundUpstream', data: command.data }];
    case 'RecordBatchResults':
      return recordResults(command.data, state);
    case 'SettleBatch':
      return settle(command.data.settledAt, state);
    case 'DeleteBatch':
      return state.deletedAt === undefined ? [{ type: 'GatewayBatchDeleted', data: command.data }] : [];
  }
}

export function evolveGatewayBatch(state: GatewayBatchState, event: GatewayBatchEvent): GatewayBatchState {
  switch (event.type) {
    case 'GatewayBatchCreated':
      return { ...state, created: event.data };
    case 'GatewayBatchRequestsRecorded': {
      const requests = new Map(state.requests);
      for (const request of event.data.requests) requests.set(request.customId, request);
      return { ...state, requests };
    }
    case 'GatewayBatchSubmitted':
      return { ...state, upstreamBatchId: event.data.upstreamBatchId };
    case 'GatewayBatchNotSubmitted':
      return { ...state, notSubmitted: event.data };
    case 'GatewayBatchAnswerLost':
      return { ...state, answerLost: event.data };
    case 'GatewayBatchFoundUpstream':
      return { ...state, upstreamBatchId: event.data.upstreamBatchId, found: event.data };
    case 'GatewayBatchResultsRecorded': {
      const results = new Map(state.results);
      for (const result of event.data.results) results.set(result.customId, result);
      return { ...state, results };
    }
    case 'GatewayBatchSettled':
      return { ...state, settled: event.data };
    case 'GatewayBatchDeleted':
      return { ...state, deletedAt: event.data.deletedAt };
  }
}

export const gatewayBatchDecider: Decider<GatewayBatchCommand, GatewayBatchEvent, GatewayBatchState> = {
  decide: decideGatewayBatch,
  evolve: evolveGatewayBatch,
  initialState: () => ({ requests: new Map(), results: new Map() }),
};
