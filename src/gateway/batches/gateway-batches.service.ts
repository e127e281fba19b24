/**
 * The accounting side of Message Batches (docs/gateway.md "Message Batches"). Creating a batch checks
 * every request, records the batch on its own stream, holds every request's worst case at batch rates
 * in one decision on the account stream, and only then sends it upstream. Its results are recorded on
 * the batch's stream, each request's once, and the batch's hold is settled once, at the sum of their
 * charges: by whoever first fetches the results, or by the poller of ended batches.
 */
import { Inject, Injectable } from '@nestjs/common';
import { accountDecider } from '../../accounts/account.decider';
import { accountStreamName } from '../../accounts/account.events';
import { AdmissionRefusedError } from '../../accounts/admission.policy';
import { UnknownGatewayKeyError, type GatewayKey } from '../../accounts/gateway-keys';
import { AggregateRepository } from '../../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../../domain/clock.token';
import { newEventId } from '../../event-store/event-id.generator';
import { placeHold, settleHold } from '../../invocations/invocation-lifecycle';
import { gatewayKeyHash } from '../gateway-keys.codec';
import { readUsageReport } from '../../providers/anthropic/anthropic-response.mapper';
import type { Clock } from '../../runtime';
import { readGatewayJson } from '../anthropic-body.reader';
import { GATEWAY_ACCOUNTING, type AnthropicErrorType, type GatewayAccounting } from '../gateway-call.port';
import { anthropicErrorTypeOf, STATUS_OF_ANTHROPIC_ERROR_TYPE } from '../anthropic-error.body';
import { refusalOfAccount } from '../gateway-calls.service';
import { RATE_CARD_STREAM, rateCardDecider, rateCardInForce } from '../rate-card';
import { batchOverTokensPerMinute, checkBatchRequests, type CheckedBatch } from './batch-requests.reader';
import { GATEWAY_PROVIDER, type GatewayProvider } from '../gateway-provider.port';
import { BatchUpstreamError, type BatchUpstream, type UpstreamBatchObject } from './batch-upstream';
import {
  BATCH_RESULT_TYPES,
  gatewayBatchDecider,
  gatewayBatchStreamName,
  holdIdOfBatch,
  MAX_BATCH_ENTRIES_PER_EVENT,
  type BatchResultReport,
  type BatchResultType,
  type GatewayBatchCommand,
  type GatewayBatchState,
} from './gateway-batch';
import { GATEWAY_BATCH_INDEX_STREAM, gatewayBatchIndexDecider, type GatewayBatchIndexCommand, type IndexedBatch } from './gateway-batch-index';
import {
  GATEWAY_BATCH_LOST_RELEASE_AFTER_MS,
  GATEWAY_BATCH_LOST_SEARCH_AFTER_MS,
  GATEWAY_BATCH_UNSENT_AFTER_MS,
  isNeighbour,
  matchLostBatch,
  MAX_UPSTREAM_LIST_PAGES,
  searchWindow,
  UPSTREAM_LIST_PAGE_SIZE,
  type SearchedBatch,
  type SearchOutcome,
} from './lost-batch-search';

/** Anthropic's answer when it sheds load: given before the request is taken, so nothing was created. */
export const ANTHROPIC_OVERLOADED_STATUS = 529;

/** When a caller asking for a batch still looked for upstream should ask again, in seconds: the poller's interval. */
export const LOST_BATCH_RETRY_AFTER_SECONDS = 60;

/** A gateway batch id: `msgbatch_` and 32 hex digits. */
export const GATEWAY_BATCH_ID_PATTERN = /^msgbatch_[0-9a-f]{32}$/;

/** An answer the gateway gives itself, in Anthropic's error shape. */
export interface BatchRefusal {
  readonly ok: false;
  readonly status: number;
  readonly errorType: AnthropicErrorType;
  readonly message: string;
  readonly retryAfterSeconds?: number;
}
export type BatchAnswer<T> = { readonly ok: true; readonly value: T } | BatchRefusal;

/** Where a batch stands after a settlement was tried. */
export type SettleOutcome = 'settled' | 'in_progress';

/** An answer of the gateway's own: its status is its type's, Anthropic's (STATUS_OF_ANTHROPIC_ERROR_TYPE). */
const refused = (errorType: AnthropicErrorType, message: string): BatchRefusal => ({ ok: false, status: STATUS_OF_ANTHROPIC_ERROR_TYPE[errorType], errorType, message });
const notFound = (batchId: string): BatchRefusal => refused('not_found_error', `message batch ${batchId} not found`);

/**
 * A batch whose create upstream never answered, while the poller looks for it in upstream's list: it
 * exists, its hold stands, and upstream's id for it is not known yet. 503 (Anthropic's SDKs try
 * again, after `retry-after`) rather than a 404 that would say there is no such batch.
 */
function stillLookedFor(batchId: string): BatchRefusal {
  return {
    ok: false,
    status: 503,
    errorType: 'api_error',
    message: `message batch ${batchId}: upstream's answer to its create was lost; the gateway is looking for it in upstream's list (from ${GATEWAY_BATCH_LOST_SEARCH_AFTER_MS / 60_000} minutes after its creation) and keeps its hold until it is found, or released once upstream has listed no such batch`,
    retryAfterSeconds: LOST_BATCH_RETRY_AFTER_SECONDS,
  };
}

/** Upstream's failure passed on: its status (502 when none came) and its error type, or the status's when it named none. */
function passedOn(error: BatchUpstreamError, message: string): BatchRefusal {
  const status = error.status ?? 502;
  return { ok: false, status, errorType: (error.errorType as AnthropicErrorType | undefined) ?? anthropicErrorTypeOf(status), message };
}

/** What the batches need of the gateway's provider: its name, its credential, its batches API. */
export type BatchesProvider = Pick<GatewayProvider, 'name' | 'configured' | 'batches'>;

/** What every batch route answers (404) when the gateway's upstream has no Message Batches API. */
export function unavailableMessage(providerName: string): string {
  return `Message Batches are not available: the gateway's upstream (${providerName}) has no batches API.`;
}

/** A batch the caller's organization owns, submitted upstream. */
interface Owned {
  readonly batchId: string;
  readonly state: GatewayBatchState;
  readonly upstreamBatchId: string;
}

@Injectable()
export class GatewayBatches {
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(GATEWAY_ACCOUNTING) private readonly accounting: GatewayAccounting,
    @Inject(GATEWAY_PROVIDER) private readonly provider: BatchesProvider,
  ) {}

  /** The gateway's upstream has a Message Batches API (a provider's optional `batches`). */
  get available(): boolean {
    return this.provider.batches !== undefined;
  }

  /** The gateway's upstream, as the registry names it. */
  get providerName(): string {
    return this.provider.name;
  }

  /** Batches can go upstream: the upstream has them and the service has its credential. */
  get configured(): boolean {
    return this.available && this.provider.configured;
  }

  /** The upstream's batches API; only asked for once `available` (the routes answer 404 before). */
  private get upstream(): BatchUpstream {
    if (this.provider.batches === undefined) throw new BatchUpstreamError(404, 'not_found_error', unavailableMessage(this.provider.name));
    return this.provider.batches;
  }

  /** The batch's record as its stream has it; undefined for an id that is not a gateway batch's. */
  async state(batchId: string): Promise<GatewayBatchState | undefined> {
    if (!GATEWAY_BATCH_ID_PATTERN.test(batchId)) return undefined;
    return (await this.repository.load(gatewayBatchStreamName(batchId), gatewayBatchDecider)).state;
  }

  /** Checked, recorded, held in one decision, then sent upstream; the upstream's batch object under the gateway's id. */
  async create(presentedKey: string, bytes: Buffer): Promise<BatchAnswer<{ readonly batchId: string; readonly upstream: UpstreamBatchObject }>> {
    const found = await this.key(presentedKey);
    if (!found.ok) return found;
    const { organizationId, key } = found.value;
    const read = readGatewayJson(bytes);
    if (read.problem !== undefined) return refused('invalid_request_error', read.problem);
    const card = (await this.repository.load(RATE_CARD_STREAM, rateCardDecider)).state;
    const checked = checkBatchRequests(read.value, key, (model) => rateCardInForce(card, model));
    if (checked.problem !== undefined) return refused('invalid_request_error', checked.problem);
    const batchId = `msgbatch_${newEventId().replace(/-/g, '')}`;
    await this.record(batchId, organizationId, key, checked.batch);
    const held = await this.hold(batchId, organizationId, key, checked.batch, gatewayKeyHash(presentedKey));
    if (!held.ok) {
      await this.refuse(batchId, held.message);
      return held;
    }
    let upstream: UpstreamBatchObject;
    try {
      upstream = await this.upstream.create(checked.batch.upstream);
    } catch (error) {
      if (!(error instanceof BatchUpstreamError)) throw error;
      return this.unanswered(batchId, error);
    }
    await this.onBatch(batchId, { type: 'SubmitBatch', data: { upstreamBatchId: upstream.id, submittedAt: isoAt(this.clock) } });
    return { ok: true, value: { batchId, upstream } };
  }

  /**
   * A create upstream did not answer with its batch. Refused (a 4xx, or 529: Anthropic sheds load before
   * taking the request): nothing will run, the hold is released whole. No answer, or another 5xx: upstream
   * may have created it, so the answer is recorded lost and the hold stays (resolveUnsent).
   */
  private async unanswered(batchId: string, error: BatchUpstreamError): Promise<BatchRefusal> {
    const reason = `upstream answered ${error.status ?? 'nothing'}`;
    if (error.status !== undefined && (error.status < 500 || error.status === ANTHROPIC_OVERLOADED_STATUS)) {
      await this.refuse(batchId, reason);
      return passedOn(error, `upstream refused the batch: ${error.message}`);
    }
    await this.onBatch(batchId, { type: 'LoseBatchAnswer', data: { reason, at: isoAt(this.clock) } });
    const hours = Math.ceil(GATEWAY_BATCH_LOST_RELEASE_AFTER_MS / 3_600_000);
    return passedOn(error, `upstream's answer to the batch's create was lost (${error.message}); upstream may still run it, so it stays held as ${batchId}, listed once found upstream, released if upstream shows no such batch within ${hours} hours`);
  }

  /**
   * A batch held and not known to be submitted (docs/gateway.md "Message Batches"): with no answer
   * recorded GATEWAY_BATCH_UNSENT_AFTER_MS after its creation, its answer counts as lost (its instance
   * stopped); a lost batch is looked for in upstream's list from GATEWAY_BATCH_LOST_SEARCH_AFTER_MS on
   * (lost-batch-search.ts), recorded found when it alone fits, released when upstream listed none by
   * GATEWAY_BATCH_LOST_RELEASE_AFTER_MS. Returns the search's outcome, if one ran. Throws
   * BatchUpstreamError when upstream's list does not answer.
   */
  async resolveUnsent(batchId: string, nowMs: number): Promise<SearchOutcome | undefined> {
    let state = (await this.repository.load(gatewayBatchStreamName(batchId), gatewayBatchDecider)).state;
    if (state.created === undefined || state.upstreamBatchId !== undefined || state.notSubmitted !== undefined) return undefined;
    const createdAtMs = Date.parse(state.created.createdAt);
    if (state.answerLost === undefined) {
      if (nowMs - createdAtMs <= GATEWAY_BATCH_UNSENT_AFTER_MS) return undefined;
      state = await this.onBatch(batchId, { type: 'LoseBatchAnswer', data: { reason: 'no answer recorded: the instance creating it stopped', at: isoAt(this.clock) } });
    }
    if (nowMs - createdAtMs < GATEWAY_BATCH_LOST_SEARCH_AFTER_MS) return undefined;
    const listed = await this.listedSince(searchWindow(createdAtMs).fromMs);
    const match = matchLostBatch(searchedOf(batchId, state), await this.neighbours(createdAtMs), listed);
    if (match.found !== undefined) {
      await this.onBatch(batchId, { type: 'FindBatchUpstream', data: { upstreamBatchId: match.found.id, upstreamCreatedAt: match.found.created_at, foundAt: isoAt(this.clock) } });
    } else if (match.candidates === 0 && nowMs - createdAtMs >= GATEWAY_BATCH_LOST_RELEASE_AFTER_MS) {
      await this.refuse(batchId, `its create's answer was lost, and upstream listed no batch of its ${state.created!.requestCount} requests created then: nothing runs`);
    }
    return match;
  }

  /** Upstream's batches created at `fromMs` or later (newest first, a page at a time, at most MAX_UPSTREAM_LIST_PAGES pages). */
  private async listedSince(fromMs: number): Promise<UpstreamBatchObject[]> {
    const listed: UpstreamBatchObject[] = [];
    let afterId: string | undefined;
    for (let page = 0; page < MAX_UPSTREAM_LIST_PAGES; page++) {
      const answer = await this.upstream.list({ limit: UPSTREAM_LIST_PAGE_SIZE, ...(afterId === undefined ? {} : { afterId }) });
      listed.push(...answer.data);
      const oldest = answer.data[answer.data.length - 1];
      if (!answer.hasMore || answer.lastId === null || oldest === undefined || Date.parse(oldest.created_at) < fromMs) break;
      afterId = answer.lastId;
    }
    return listed;
  }

  /** The gateway batches recorded near enough to share a lost batch's window, as the search weighs them. */
  private async neighbours(createdAtMs: number): Promise<SearchedBatch[]> {
    const index = (await this.repository.load(GATEWAY_BATCH_INDEX_STREAM, gatewayBatchIndexDecider)).state;
    const near: SearchedBatch[] = [];
    for (const { batchId, createdAt } of index.batches.values()) {
      if (!isNeighbour(createdAtMs, Date.parse(createdAt))) continue;
      near.push(searchedOf(batchId, (await this.repository.load(gatewayBatchStreamName(batchId), gatewayBatchDecider)).state));
    }
    return near;
  }

  async retrieve(presentedKey: string, batchId: string): Promise<BatchAnswer<UpstreamBatchObject>> {
    const owned = await this.owned(presentedKey, batchId);
    return owned.ok ? this.fromUpstream(() => this.upstream.retrieve(owned.value.upstreamBatchId)) : owned;
  }

  async cancel(presentedKey: string, batchId: string): Promise<BatchAnswer<UpstreamBatchObject>> {
    const owned = await this.owned(presentedKey, batchId);
    return owned.ok ? this.fromUpstream(() => this.upstream.cancel(owned.value.upstreamBatchId)) : owned;
  }

  /** The organization's batches (submitted, not deleted), newest first, each as upstream has it now. */
  async list(presentedKey: string): Promise<BatchAnswer<readonly { readonly batchId: string; readonly upstreamBatchId: string }[]>> {
    const found = await this.key(presentedKey);
    if (!found.ok) return found;
    const mine = (await this.indexedOf(found.value.organizationId)).filter((batch) => !batch.deleted);
    const listed: { batchId: string; upstreamBatchId: string }[] = [];
    for (const { batchId } of mine) {
      const state = (await this.repository.load(gatewayBatchStreamName(batchId), gatewayBatchDecider)).state;
      if (state.upstreamBatchId !== undefined && state.deletedAt === undefined) listed.push({ batchId, upstreamBatchId: state.upstreamBatchId });
    }
    return { ok: true, value: listed };
  }

  /** Every batch the organization created (refused and deleted ones too), newest first, as the index has them. */
  async indexedOf(organizationId: string): Promise<readonly IndexedBatch[]> {
    const index = (await this.repository.load(GATEWAY_BATCH_INDEX_STREAM, gatewayBatchIndexDecider)).state;
    return [...index.batches.values()].filter((batch) => batch.organizationId === organizationId).reverse();
  }

  /** Settled first (a batch Anthropic deletes keeps no results), then deleted upstream and here. */
  async delete(presentedKey: string, batchId: string): Promise<BatchAnswer<{ readonly id: string; readonly type: 'message_batch_deleted' }>> {
    const owned = await this.owned(presentedKey, batchId);
    if (!owned.ok) return owned;
    const settled = await this.fromUpstream(() => this.settle(batchId));
    if (!settled.ok) return settled;
    if (settled.value !== 'settled') return refused('invalid_request_error', `message batch ${batchId} is still in progress; cancel it first, and delete it once it has ended`);
    const deleted = await this.fromUpstream(() => this.upstream.delete(owned.value.upstreamBatchId));
    if (!deleted.ok) return deleted;
    await this.onBatch(batchId, { type: 'DeleteBatch', data: { deletedAt: isoAt(this.clock) } });
    await this.onIndex({ type: 'NoteBatchDeleted', data: { batchId } });
    return { ok: true, value: { id: batchId, type: 'message_batch_deleted' } };
  }

  /** The batch settled (its results recorded, each once), then its results' lines for the caller, fetched again. */
  async results(presentedKey: string, batchId: string): Promise<BatchAnswer<AsyncIterable<unknown>>> {
    const owned = await this.owned(presentedKey, batchId);
    if (!owned.ok) return owned;
    const settled = await this.fromUpstream(() => this.settle(batchId));
    if (!settled.ok) return settled;
    if (settled.value !== 'settled') return refused('invalid_request_error', `message batch ${batchId} has not ended; its results are not ready`);
    return { ok: true, value: this.upstream.results(owned.value.upstreamBatchId) };
  }

  /**
   * Settles the batch if it can be: a batch never submitted at nothing; a submitted one once upstream
   * says it ended, each result recorded once (decided on the batch's stream at its expected revision,
   * so a second instance's or a second fetch's recording is a no-op), then the batch and its hold.
   * Throws BatchUpstreamError when upstream does not answer.
   */
  async settle(batchId: string): Promise<SettleOutcome> {
    const stream = gatewayBatchStreamName(batchId);
    const state = (await this.repository.load(stream, gatewayBatchDecider)).state;
    if (state.created === undefined) return 'in_progress';
    if (state.settled === undefined && state.notSubmitted === undefined) {
      if (state.upstreamBatchId === undefined) return 'in_progress';
      const batch = await this.upstream.retrieve(state.upstreamBatchId);
      if (batch.processing_status !== 'ended') return 'in_progress';
      await this.recordResults(batchId, state.upstreamBatchId, batch.ended_at ?? undefined);
    }
    const settled = await this.onBatch(batchId, { type: 'SettleBatch', data: { settledAt: isoAt(this.clock) } });
    const { chargeCredits, settledAt } = settled.settled!;
    await this.repository.handle(accountStreamName(settled.created!.organizationId), accountDecider, settleHold(holdIdOfBatch(batchId), { settlement: { chargeCredits } }, settledAt), { correlationId: batchId });
    await this.onIndex({ type: 'NoteBatchSettled', data: { batchId } });
    return 'settled';
  }

  /** Reads the results file through, recording each chunk of results as it comes (nothing of the answers is kept). */
  private async recordResults(batchId: string, upstreamBatchId: string, endedAt: string | undefined): Promise<void> {
    let chunk: BatchResultReport[] = [];
    const flush = async (): Promise<void> => {
      if (chunk.length > 0) await this.onBatch(batchId, { type: 'RecordBatchResults', data: { results: chunk, recordedAt: isoAt(this.clock), ...(endedAt === undefined ? {} : { endedAt }) } });
      chunk = [];
    };
    for await (const line of this.upstream.results(upstreamBatchId)) {
      const report = reportOf(line);
      if (report !== undefined) chunk.push(report);
      if (chunk.length >= MAX_BATCH_ENTRIES_PER_EVENT) await flush();
    }
    await flush();
  }

  /** The header and the requests, one chunk per append (an append holds at most 1 MiB). */
  private async record(batchId: string, organizationId: string, key: GatewayKey, batch: CheckedBatch): Promise<void> {
    const createdAt = isoAt(this.clock);
    const stream = gatewayBatchStreamName(batchId);
    const context = { correlationId: batchId, newStream: true, acknowledgeOnCommit: true };
    await this.repository.handle(
      stream,
      gatewayBatchDecider,
      { type: 'CreateBatch', data: { batchId, organizationId, keyId: key.keyId, keyName: key.name, rateCards: batch.rateCards, requests: batch.requests, createdAt } },
      context,
    );
    for (let at = MAX_BATCH_ENTRIES_PER_EVENT; at < batch.requests.length; at += MAX_BATCH_ENTRIES_PER_EVENT) {
      await this.repository.handle(stream, gatewayBatchDecider, { type: 'RecordBatchRequests', data: { requests: batch.requests.slice(at, at + MAX_BATCH_ENTRIES_PER_EVENT) } }, { correlationId: batchId, acknowledgeOnCommit: true });
    }
    await this.onIndex({ type: 'IndexBatch', data: { batchId, organizationId, createdAt } });
  }

  /**
   * One PlaceHold for the whole batch: the organization's credits, the key's limit and its team's in one
   * decision, with the key as this decision sees it (revoked, expired or rotated away since; its cap
   * below the batch's largest `max_tokens`; its models without any of the batch's models). Against the
   * key's rate limits the batch is one hold in flight (`maxConcurrent`), its request count in its
   * minute (`requestsPerMinute`) and the sum of its requests' worst cases in tokens (`tokensPerMinute`).
   */
  private async hold(batchId: string, organizationId: string, key: GatewayKey, batch: CheckedBatch, keyHash: string): Promise<BatchAnswer<undefined>> {
    const [model, ...models] = batch.rateCards.map((card) => card.model);
    const gatewayCall = { model: model!, ...(models.length === 0 ? {} : { models }), maxTokens: batch.maxTokens, tokens: batch.tokens, requests: batch.requests.length, keyHash };
    try {
      await this.repository.handle(
        accountStreamName(organizationId),
        accountDecider,
        placeHold(holdIdOfBatch(batchId), batch.holdCredits, isoAt(this.clock), { gatewayKey: { keyId: key.keyId, period: '' }, gatewayCall }),
        { correlationId: batchId },
      );
      return { ok: true, value: undefined };
    } catch (error) {
      if (error instanceof UnknownGatewayKeyError) return refused('authentication_error', 'invalid x-api-key');
      if (!(error instanceof AdmissionRefusedError)) throw error;
      if (error.refusal.reason === 'key_worst_case_tokens') return refused('invalid_request_error', batchOverTokensPerMinute(key.name, batch.tokens, error.refusal.figures.tokensPerMinute));
      const { status, errorType, message, retryAfterSeconds } = refusalOfAccount(error.refusal, batchId, key);
      return { ok: false, status, errorType, message, ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }) };
    }
  }

  /** Not sent (or refused upstream): recorded, settled at nothing, its hold (if any) released. */
  private async refuse(batchId: string, reason: string): Promise<void> {
    await this.onBatch(batchId, { type: 'RefuseBatch', data: { reason, at: isoAt(this.clock) } });
    await this.settle(batchId);
  }

  private async key(presentedKey: string): Promise<BatchAnswer<{ readonly organizationId: string; readonly key: GatewayKey }>> {
    const known = await this.accounting.authenticate(presentedKey);
    if (!('ok' in known)) return { ok: false, status: known.status, errorType: known.errorType, message: known.message };
    const account = (await this.repository.load(accountStreamName(known.organizationId), accountDecider, false)).state;
    const key = account.gatewayKeys.get(known.keyId);
    return key === undefined ? refused('authentication_error', 'invalid x-api-key') : { ok: true, value: { organizationId: known.organizationId, key } };
  }

  /** The batch, if the caller's organization created it, it was submitted and not deleted: else 404, as for a batch that does not exist. */
  private async owned(presentedKey: string, batchId: string): Promise<BatchAnswer<Owned>> {
    const found = await this.key(presentedKey);
    if (!found.ok) return found;
    if (!GATEWAY_BATCH_ID_PATTERN.test(batchId)) return notFound(batchId);
    const state = (await this.repository.load(gatewayBatchStreamName(batchId), gatewayBatchDecider)).state;
    if (state.created?.organizationId !== found.value.organizationId || state.deletedAt !== undefined) return notFound(batchId);
    if (state.upstreamBatchId === undefined) return state.answerLost !== undefined && state.notSubmitted === undefined ? stillLookedFor(batchId) : notFound(batchId);
    return { ok: true, value: { batchId, state, upstreamBatchId: state.upstreamBatchId } };
  }

  /** Upstream's answer, or its refusal passed on in Anthropic's shape (502 when none came). */
  private async fromUpstream<T>(call: () => Promise<T>): Promise<BatchAnswer<T>> {
    try {
      return { ok: true, value: await call() };
    } catch (error) {
      if (!(error instanceof BatchUpstreamError)) throw error;
      return passedOn(error, `upstream: ${error.message}`);
    }
  }

  private async onBatch(batchId: string, command: GatewayBatchCommand): Promise<GatewayBatchState> {
    return (await this.repository.handle(gatewayBatchStreamName(batchId), gatewayBatchDecider, command, { correlationId: batchId })).state;
  }

  private async onIndex(command: GatewayBatchIndexCommand): Promise<void> {
    await this.repository.handle(GATEWAY_BATCH_INDEX_STREAM, gatewayBatchIndexDecider, command, { correlationId: command.data.batchId });
  }
}

/** A gateway batch as the lost-batch search compares it. */
function searchedOf(batchId: string, state: GatewayBatchState): SearchedBatch {
  const lost = state.answerLost !== undefined && state.upstreamBatchId === undefined && state.notSubmitted === undefined;
  return { batchId, createdAtMs: Date.parse(state.created!.createdAt), requestCount: state.created!.requestCount, lost, ...(state.upstreamBatchId === undefined ? {} : { upstreamBatchId: state.upstreamBatchId }) };
}

/**
 * One line of upstream's results file as a report: its custom_id, type and usage (never the message's
 * text). A type Anthropic does not name is read as a success without usage: charged its hold, never
 * nothing for what upstream may have billed.
 */
export function reportOf(line: unknown): BatchResultReport | undefined {
  if (typeof line !== 'object' || line === null) return undefined;
  const { custom_id: customId, result } = line as { custom_id?: unknown; result?: { type?: unknown; message?: { usage?: unknown } } };
  if (typeof customId !== 'string') return undefined;
  const type = BATCH_RESULT_TYPES.includes(result?.type as BatchResultType) ? (result!.type as BatchResultType) : undefined;
  if (type !== undefined && type !== 'succeeded') return { customId, type };
  if (type === undefined) return { customId, type: 'succeeded', malformedUsage: 'result.type' };
  const read = readUsageReport(result?.message?.usage);
  return { customId, type, ...(read.usage === undefined ? {} : { usage: read.usage }), ...(read.malformedField === undefined ? {} : { malformedUsage: read.malformedField }) };
}
