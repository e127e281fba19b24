/**
 * Anthropic's list shape and paging (`limit`, `after_id`, `before_id`), as the gateway answers its own
 * lists: the models of the rate card, and Message Batches.
 */
import type { ServerResponse } from 'node:http';

/** Models a page lists unless `limit` says otherwise, and the most it may say (Anthropic's own bounds). */
export const DEFAULT_MODELS_PAGE_SIZE = 20;
export const MAX_MODELS_PAGE_SIZE = 1_000;

/** Anthropic's list shape: a page of models (or batches), the ids at its two ends, and whether more lie beyond. */
export interface ListPage<T> {
  readonly data: readonly T[];
  readonly has_more: boolean;
  readonly first_id: string | null;
  readonly last_id: string | null;
}

/** `limit` as Anthropic's lists take it (1 to MAX_MODELS_PAGE_SIZE, default DEFAULT_MODELS_PAGE_SIZE); undefined when it is not one. */
export function pageSize(limit: unknown): number | undefined {
  if (limit === undefined) return DEFAULT_MODELS_PAGE_SIZE;
  if (typeof limit !== 'string' || !/^\d{1,4}$/.test(limit)) return undefined;
  const size = Number(limit);
  return size >= 1 && size <= MAX_MODELS_PAGE_SIZE ? size : undefined;
}

export function textOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A page as Anthropic pages (models, batches): after `afterId` forwards, or before `beforeId` backwards. */
export function page<T extends { readonly id: string }>(models: readonly T[], size: number, afterId?: string, beforeId?: string): ListPage<T> {
  const indexOf = (id: string): number => models.findIndex((model) => model.id === id);
  const from = afterId === undefined ? 0 : indexOf(afterId) + 1 || models.length;
  const to = beforeId === undefined ? models.length : Math.max(indexOf(beforeId), 0);
  const backwards = beforeId !== undefined && afterId === undefined;
  const start = backwards ? Math.max(from, to - size) : from;
  const end = backwards ? to : Math.min(to, from + size);
  const data = start < end ? models.slice(start, end) : [];
  return {
    data,
    has_more: backwards ? start > from : end < to,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
  };
}

/** A 200 JSON answer on Node's own response. */
export function sendJson(response: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  response.statusCode = 200;
  response.setHeader('content-type', 'application/json');
  response.setHeader('content-length', Buffer.byteLength(text));
  response.end(text);
}

/** A list's paging query as Anthropic takes it, or the 400's message naming `limit`. */
export function readPageQuery(limit: unknown, afterId: unknown, beforeId: unknown): { readonly size: number; readonly afterId?: string; readonly beforeId?: string } | { readonly problem: string } {
  const size = pageSize(limit);
  if (size === undefined) return { problem: `limit: Input should be a whole number from 1 to ${MAX_MODELS_PAGE_SIZE}` };
  const after = textOf(afterId);
  const before = textOf(beforeId);
  return { size, ...(after === undefined ? {} : { afterId: after }), ...(before === undefined ? {} : { beforeId: before }) };
}
