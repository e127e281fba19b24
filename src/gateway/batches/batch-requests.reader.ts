/**
 * Reads a Message Batch's create body (`{ requests: [{ custom_id, params }] }`) and checks each request
 * as a Messages body is checked (docs/gateway.md "Admission"): its model on the rate card and allowed
 * by the key, its `max_tokens` within both caps, its server tools holdable. Each request's worst case
 * is held at batch rates. Every refusal is a 400 naming the field (`requests[3].params.max_tokens`).
 * Nothing here keeps or logs any of the requests' text.
 */
import { keyAllowsModel, type GatewayKey } from '../../accounts/gateway-keys';
import { MAX_CREDIT_HOLD_CREDITS } from '../../catalog/publication.validation';
import { readMessagesFacts } from '../messages-body.facts';
import { modelNotOnRateCard } from '../gateway-call.port';
import type { RateCardVersion } from '../rate-card';
import { worstCaseHold, worstCaseTokens } from '../worst-case-hold';
import type { BatchRateCard, BatchRequestRecord } from './gateway-batch';

/** Requests one batch may hold: Anthropic's own bound. */
export const MAX_BATCH_REQUESTS = 100_000;
/** A `custom_id` as Anthropic takes it: 1 to 64 letters, digits, `_` and `-`. */
export const CUSTOM_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** One request, checked: its record, and its params as they go upstream. */
export interface CheckedBatch {
  readonly requests: readonly BatchRequestRecord[];
  /** What goes upstream: each request as received (its params parsed once, forwarded as parsed). */
  readonly upstream: readonly { readonly custom_id: string; readonly params: unknown }[];
  readonly rateCards: readonly BatchRateCard[];
  readonly holdCredits: number;
  /** The largest `max_tokens` of its requests: what the hold's decision checks the key's cap against. */
  readonly maxTokens: number;
  /** The sum of its requests' worst cases in tokens (input bound + `max_tokens`): what it counts against the key's `tokensPerMinute`. */
  readonly tokens: number;
}

export type BatchCheck = { readonly batch: CheckedBatch; readonly problem?: undefined } | { readonly batch?: undefined; readonly problem: string };

const problem = (message: string): BatchCheck => ({ problem: message });

/** The requests of a parsed create body, checked against the key and the rate card (`cardOf`). */
export function checkBatchRequests(body: unknown, key: GatewayKey, cardOf: (model: string) => RateCardVersion | undefined): BatchCheck {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return problem('The request body must be a JSON object.');
  const extra = Object.keys(body).find((field) => field !== 'requests');
  if (extra !== undefined) return problem(`${extra}: Extra inputs are not permitted`);
  const { requests } = body as { requests?: unknown };
  if (!Array.isArray(requests)) return problem(requests === undefined ? 'requests: Field required' : 'requests: Input should be a valid list');
  if (requests.length === 0) return problem('requests: List should have at least 1 item');
  if (requests.length > MAX_BATCH_REQUESTS) return problem(`requests: List should have at most ${MAX_BATCH_REQUESTS} items (MAX_BATCH_REQUESTS)`);
  const records: BatchRequestRecord[] = [];
  const cards = new Map<string, BatchRateCard>();
  const seen = new Set<string>();
  let holdCredits = 0;
  let maxTokens = 0;
  let tokens = 0;
  for (const [index, request] of requests.entries()) {
    const checked = checkRequest(request, `requests[${index}]`, key, cardOf);
    if (checked.problem !== undefined) return problem(checked.problem);
    if (seen.has(checked.record.customId)) return problem(`requests[${index}].custom_id: ${checked.record.customId} is used by an earlier request; each custom_id must be unique within the batch`);
    seen.add(checked.record.customId);
    records.push(checked.record);
    cards.set(checked.card.model, { model: checked.card.model, version: checked.card.version, prices: checked.card.prices });
    holdCredits += checked.record.holdCredits;
    maxTokens = Math.max(maxTokens, checked.maxTokens);
    tokens = Math.min(tokens + checked.tokens, Number.MAX_SAFE_INTEGER);
    if (holdCredits > MAX_CREDIT_HOLD_CREDITS) return problem(`requests: the batch could cost more than one hold may hold (${MAX_CREDIT_HOLD_CREDITS} credits)`);
  }
  const overLimit = overKeyRateLimit(key, records.length, tokens);
  if (overLimit !== undefined) return problem(overLimit);
  return { batch: { requests: records, upstream: requests as CheckedBatch['upstream'], rateCards: [...cards.values()], holdCredits, maxTokens, tokens } };
}

/**
 * A batch no minute of its key could ever admit (docs/gateway.md "Message Batches", rate limits): each
 * of its requests counts against `requestsPerMinute` and its worst-case tokens against
 * `tokensPerMinute` in the minute it is created, so a batch past either on its own is a 400, not a 429.
 */
function overKeyRateLimit(key: GatewayKey, requests: number, tokens: number): string | undefined {
  if (key.requestsPerMinute !== undefined && requests > key.requestsPerMinute) {
    return `requests: ${requests} requests are over key ${JSON.stringify(key.name)}'s requestsPerMinute (${key.requestsPerMinute}); a batch counts each of its requests in the minute it is created`;
  }
  if (key.tokensPerMinute !== undefined && tokens > key.tokensPerMinute) return batchOverTokensPerMinute(key.name, tokens, key.tokensPerMinute);
  return undefined;
}

/** A batch whose worst case in tokens is over its key's `tokensPerMinute`: at the check, or when the limit fell before the hold. */
export function batchOverTokensPerMinute(keyName: string, tokens: number, tokensPerMinute: number): string {
  return `requests: the batch's worst case of ${tokens} tokens is over key ${JSON.stringify(keyName)}'s tokensPerMinute (${tokensPerMinute}); a batch counts its requests' worst cases in the minute it is created`;
}

type RequestCheck =
  | { readonly record: BatchRequestRecord; readonly card: RateCardVersion; readonly maxTokens: number; readonly tokens: number; readonly problem?: undefined }
  | { readonly record?: undefined; readonly card?: undefined; readonly maxTokens?: undefined; readonly tokens?: undefined; readonly problem: string };

/** One request: its custom_id, then its params as a Messages body (not streamed), then the key's and the card's caps and the hold. */
function checkRequest(request: unknown, at: string, key: GatewayKey, cardOf: (model: string) => RateCardVersion | undefined): RequestCheck {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return { problem: `${at}: Input should be a valid object` };
  const { custom_id: customId, params, ...rest } = request as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) return { problem: `${at}.${extra}: Extra inputs are not permitted` };
  if (typeof customId !== 'string' || !CUSTOM_ID_PATTERN.test(customId)) return { problem: `${at}.custom_id: must be 1 to 64 letters, digits, _ or -` };
  const read = readMessagesFacts(params, Buffer.byteLength(JSON.stringify(params ?? null)));
  if (read.problem !== undefined) return { problem: underParams(at, read.problem.message) };
  const { facts } = read;
  if (facts.stream) return { problem: `${at}.params.stream: a batch's requests are not streamed` };
  const card = cardOf(facts.model);
  if (card === undefined || !card.enabled) return { problem: `${at}.params.${modelNotOnRateCard(facts.model)}` };
  if (!keyAllowsModel(key, facts.model)) return { problem: `${at}.params.model: key ${JSON.stringify(key.name)} may not call ${facts.model}` };
  const cap = Math.min(card.maxOutputTokens, key.maxOutputTokens ?? Number.MAX_SAFE_INTEGER);
  if (facts.maxTokens > cap) {
    const whose = cap === key.maxOutputTokens ? `key ${JSON.stringify(key.name)}'s maxOutputTokens` : `the rate card's maxOutputTokens for ${facts.model}`;
    return { problem: `${at}.params.max_tokens: ${facts.maxTokens} is over ${cap}, ${whose}` };
  }
  const hold = worstCaseHold(facts, card, 'batch');
  if (hold.problem !== undefined) return { problem: underParams(at, hold.problem) };
  return { record: { customId, model: facts.model, holdCredits: hold.credits }, card, maxTokens: facts.maxTokens, tokens: worstCaseTokens(hold.bounds) };
}

/** A Messages body's problem, named under the request's params: `tools[0].type: …` → `requests[2].params.tools[0].type: …`. */
function underParams(at: string, message: string): string {
  return /^[A-Za-z_][\w.[\]]*: /.test(message) ? `${at}.params.${message}` : `${at}.params: ${message}`;
}
