/**
 * Finding upstream a batch whose create answer was lost (docs/gateway.md "Message Batches", "A lost
 * create answer"). Anthropic's create takes nothing but the requests (no metadata, no idempotency key),
 * and a batch object shows neither the requests nor their custom_ids, so a batch is recognised by what
 * upstream's list shows: its request count and its `created_at`, within the window in which this
 * batch's create could have reached upstream, among the batches no other gateway batch has claimed.
 * Every gateway batch goes upstream with the operator's one key, which nothing else uses, so a batch in
 * that list is one of the gateway's. The match must be unique: one candidate, and no other lost batch
 * of the same count near enough to claim it; else the hold stays and the search goes on.
 */
import { BATCH_UPSTREAM_TIMEOUT_MS, type UpstreamBatchObject } from './batch-upstream';

/** How far upstream's clock (its `created_at`) may be from this service's, in ms. */
export const BATCH_CLOCK_SKEW_MS = 5 * 60_000;
/** A batch recorded but not sent upstream for this long, in ms, never will be: twice the upstream call's bound. */
export const GATEWAY_BATCH_UNSENT_AFTER_MS = 2 * BATCH_UPSTREAM_TIMEOUT_MS;
/**
 * How long after a lost batch's creation, in ms, the search starts: every create whose upstream batch
 * could fall in its window has been answered (or lost) by then, so its claim is on record.
 */
export const GATEWAY_BATCH_LOST_SEARCH_AFTER_MS = GATEWAY_BATCH_UNSENT_AFTER_MS + BATCH_UPSTREAM_TIMEOUT_MS + 2 * BATCH_CLOCK_SKEW_MS;
/** Anthropic ends every batch within 24 hours of its creation, in ms. */
export const ANTHROPIC_BATCH_EXPIRY_MS = 24 * 60 * 60_000;
/**
 * How long after its creation, in ms, a lost batch that upstream's list never showed is released:
 * past Anthropic's expiry window, an hour's margin and the search's start, a batch upstream had
 * created would have run, ended and been listed all along; none was, so nothing runs.
 */
export const GATEWAY_BATCH_LOST_RELEASE_AFTER_MS = ANTHROPIC_BATCH_EXPIRY_MS + 60 * 60_000 + GATEWAY_BATCH_LOST_SEARCH_AFTER_MS;
/** Batches asked of upstream's list per page (Anthropic's most). */
export const UPSTREAM_LIST_PAGE_SIZE = 1_000;
/** Pages of upstream's list one search reads at most, newest first: 100,000 batches. */
export const MAX_UPSTREAM_LIST_PAGES = 100;

/** A gateway batch as the search compares it: when it was recorded, its request count, its upstream batch if known. */
export interface SearchedBatch {
  readonly batchId: string;
  readonly createdAtMs: number;
  readonly requestCount: number;
  readonly upstreamBatchId?: string;
  /** Its create answer was lost and nothing is decided yet. */
  readonly lost: boolean;
}

/** The instants of upstream's `created_at` this batch's create could carry: from its record (less the skew) to when it counts as unsent (plus the skew). */
export function searchWindow(createdAtMs: number): { readonly fromMs: number; readonly toMs: number } {
  return { fromMs: createdAtMs - BATCH_CLOCK_SKEW_MS, toMs: createdAtMs + GATEWAY_BATCH_UNSENT_AFTER_MS + BATCH_CLOCK_SKEW_MS };
}

/** Gateway batches recorded this near another could share its window: whose claims and contention the search weighs. */
export function isNeighbour(createdAtMs: number, otherMs: number): boolean {
  return Math.abs(createdAtMs - otherMs) <= GATEWAY_BATCH_UNSENT_AFTER_MS + 2 * BATCH_CLOCK_SKEW_MS;
}

export type SearchOutcome = { readonly found: UpstreamBatchObject } | { readonly found?: undefined; readonly candidates: number; readonly contenders: number };

/**
 * The upstream batch that is `lost`'s, if exactly one fits and no other lost neighbour could claim it:
 * listed in its window, of its request count, not claimed by any neighbour.
 */
export function matchLostBatch(lost: SearchedBatch, neighbours: readonly SearchedBatch[], listed: readonly UpstreamBatchObject[]): SearchOutcome {
  const { fromMs, toMs } = searchWindow(lost.createdAtMs);
  const claimed = new Set(neighbours.flatMap((batch) => (batch.upstreamBatchId === undefined ? [] : [batch.upstreamBatchId])));
  const candidates = listed.filter((batch) => {
    const createdMs = Date.parse(batch.created_at);
    return createdMs >= fromMs && createdMs <= toMs && requestCountOf(batch) === lost.requestCount && !claimed.has(batch.id);
  });
  const contenders = neighbours.filter((batch) => batch.batchId !== lost.batchId && batch.lost && batch.requestCount === lost.requestCount).length;
  return candidates.length === 1 && contenders === 0 ? { found: candidates[0]! } : { candidates: candidates.length, contenders };
}

/** The requests upstream counts in the batch, whatever their state. */
export function requestCountOf(batch: UpstreamBatchObject): number {
  const counts = batch.request_counts;
  return counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired;
}
