/**
 * Reads a Messages request body once: checks the three fields the gateway cannot hold a call without
 * (`model`, `max_tokens`, `messages`) and counts what the worst-case hold depends on. The body itself
 * goes upstream as received; nothing here keeps or logs any of its text. See docs/gateway.md.
 */
import { readGatewayJson } from './anthropic-body.reader';
import type { MessagesBodyFacts } from './gateway-call.port';

/** Longest `model` accepted, in characters: a model id, never a document. Longer → 400. */
export const MAX_MODEL_ID_CHARS = 256;

/** Why a body cannot be held: always a 400 `invalid_request_error`, naming the field. */
export interface MessagesBodyProblem {
  readonly message: string;
}

export type ReadFacts = { readonly facts: MessagesBodyFacts; readonly problem?: undefined } | { readonly facts?: undefined; readonly problem: MessagesBodyProblem };

const NOT_AN_OBJECT: MessagesBodyProblem = { message: 'The request body must be a JSON object.' };

/** A web-search server tool (`web_search_20250305`, …), whose searches are billed per use. */
const WEB_SEARCH_TOOL_PREFIX = 'web_search_';

/**
 * The facts of a Messages body (`bytes` as received), or the problem that refuses it. The body is
 * read once (readGatewayJson: a member named twice is refused); the counting walk uses an explicit
 * stack, so no nesting depth can exhaust the stack.
 */
export function readMessagesBodyFacts(bytes: Buffer): ReadFacts {
  const read = readGatewayJson(bytes);
  if (read.problem !== undefined) return { problem: { message: read.problem } };
  const body = read.value;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { problem: NOT_AN_OBJECT };
  const fields = body as Record<string, unknown>;
  const { model, max_tokens: maxTokens, messages } = fields;
  if (model === undefined) return { problem: { message: 'model: Field required' } };
  if (typeof model !== 'string' || model === '') return { problem: { message: 'model: Input should be a non-empty string' } };
  if (model.length > MAX_MODEL_ID_CHARS) return { problem: { message: `model: String should have at most ${MAX_MODEL_ID_CHARS} characters` } };
  if (maxTokens === undefined) return { problem: { message: 'max_tokens: Field required' } };
  if (typeof maxTokens !== 'number' || !Number.isSafeInteger(maxTokens)) return { problem: { message: 'max_tokens: Input should be a valid integer' } };
  if (maxTokens < 1) return { problem: { message: 'max_tokens: Input should be greater than or equal to 1' } };
  if (messages === undefined) return { problem: { message: 'messages: Field required' } };
  if (!Array.isArray(messages)) return { problem: { message: 'messages: Input should be a valid list' } };
  const blocks = countBlocks(messages, fields.system);
  const { speed, inference_geo: inferenceGeo } = fields;
  return {
    facts: {
      bodyBytes: bytes.length,
      model,
      maxTokens,
      stream: fields.stream === true,
      imageBlocks: blocks.images,
      documentBlocks: blocks.documents,
      webSearchMaxUses: webSearchMaxUses(fields.tools),
      ...(typeof speed === 'string' ? { speed } : {}),
      ...(typeof inferenceGeo === 'string' ? { inferenceGeo } : {}),
    },
  };
}

/**
 * Image and document blocks anywhere below `messages` and `system`: in a message's content, inside a
 * tool result's content, or deeper. Every object whose `type` is `image` or `document` counts, so a
 * tool's JSON input that happens to look like one is counted too: the count can only make the hold
 * larger than needed, never smaller.
 */
function countBlocks(messages: readonly unknown[], system: unknown): { images: number; documents: number } {
  let images = 0;
  let documents = 0;
  const pending: unknown[] = [messages, system];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'object' && item !== null) pending.push(item);
      continue;
    }
    const record = value as Record<string, unknown>;
    if (record.type === 'image') images++;
    else if (record.type === 'document') documents++;
    for (const key in record) {
      const child = record[key];
      if (typeof child === 'object' && child !== null) pending.push(child);
    }
  }
  return { images, documents };
}

/** Each web-search tool's `max_uses`, or undefined for one that sets no valid bound. */
function webSearchMaxUses(tools: unknown): (number | undefined)[] {
  if (!Array.isArray(tools)) return [];
  const found: (number | undefined)[] = [];
  for (const tool of tools) {
    if (typeof tool !== 'object' || tool === null) continue;
    const { type, max_uses: maxUses } = tool as Record<string, unknown>;
    if (typeof type !== 'string' || !type.startsWith(WEB_SEARCH_TOOL_PREFIX)) continue;
    found.push(typeof maxUses === 'number' && Number.isSafeInteger(maxUses) && maxUses > 0 ? maxUses : undefined);
  }
  return found;
}
