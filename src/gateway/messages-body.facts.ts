/**
 * Reads a Messages request body once: checks the three fields the gateway cannot hold a call without
 * (`model`, `max_tokens`, `messages`) and counts what the worst-case hold depends on. The body itself
 * goes upstream as received; nothing here keeps or logs any of its text. See docs/gateway.md.
 */
import { MAX_CALL_USER_ID_CHARS } from '../invocations/call-attribution';
import { readGatewayJson } from './anthropic-body.reader';
import type { MessagesBodyFacts, ToolAt, WebFetchFacts } from './gateway-call.port';
import { MAX_WEB_FETCH_CONTENT_TOKENS, MAX_WEB_FETCH_USES } from './worst-case-hold';

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
/** A web-fetch server tool (`web_fetch_20250910`, …): each fetch's content is read as input. */
const WEB_FETCH_TOOL_PREFIX = 'web_fetch_';
/** A code-execution server tool (`code_execution_20250825`, …): held only with the rate card's allowance. */
const CODE_EXECUTION_TOOL_PREFIX = 'code_execution_';
/** A tool that names an MCP server's tools (`mcp_servers`): held only with the rate card's allowance. */
const MCP_TOOLSET_TYPE = 'mcp_toolset';
/**
 * Tools Anthropic defines that the caller runs (`bash_20250124`, `text_editor_20250728`,
 * `computer_20250124`, `memory_20250818`, …): upstream only adds their definition; their results come
 * back in the caller's next request, counted there.
 */
const CLIENT_TOOL_PREFIXES = ['bash_', 'text_editor_', 'computer_', 'memory_'];
/** A tool the caller defines and runs: no `type`, or this one. */
const CUSTOM_TOOL_TYPE = 'custom';

/** Longest tool `type` a refusal repeats, in characters (Anthropic's own are about 30): past it, cut with `…`. */
export const MAX_SHOWN_TOOL_TYPE_CHARS = 64;

/** What the request's `tools` and `mcp_servers` add to the facts. */
type ToolFacts = Pick<MessagesBodyFacts, 'webSearchMaxUses' | 'webFetches' | 'codeExecutionTools' | 'mcpServers' | 'definedTools'>;

/**
 * The facts of a Messages body (`bytes` as received), or the problem that refuses it. The body is
 * read once (readGatewayJson: a member named twice is refused); the counting walk uses an explicit
 * stack, so no nesting depth can exhaust the stack.
 */
export function readMessagesBodyFacts(bytes: Buffer): ReadFacts {
  const read = readGatewayJson(bytes);
  if (read.problem !== undefined) return { problem: { message: read.problem } };
  return readMessagesFacts(read.value, bytes.length);
}

/**
 * The facts of a Messages body already parsed (`bodyBytes` its UTF-8 length): a whole request, or one
 * request's `params` in a Message Batch, whose problems the batch names under `requests[i].params`.
 */
export function readMessagesFacts(body: unknown, bodyBytes: number): ReadFacts {
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
  const tools = readTools(fields.tools, fields.mcp_servers);
  if ('problem' in tools) return { problem: tools.problem };
  const user = readUserId(fields.metadata);
  if (typeof user === 'object') return { problem: user };
  const blocks = countBlocks(messages, fields.system);
  const { speed, inference_geo: inferenceGeo } = fields;
  return {
    facts: {
      bodyBytes,
      model,
      maxTokens,
      stream: fields.stream === true,
      imageBlocks: blocks.images,
      documentBlocks: blocks.documents,
      ...tools,
      ...(typeof speed === 'string' ? { speed } : {}),
      ...(typeof inferenceGeo === 'string' ? { inferenceGeo } : {}),
      ...(user === undefined ? {} : { userId: user }),
    },
  };
}

/**
 * `metadata.user_id`, the caller's opaque id for its end user (docs/gateway.md "Who spent it"): a
 * string of at most MAX_CALL_USER_ID_CHARS characters, recorded as sent; blank, null or absent is
 * none. Another type, or longer, is refused as Anthropic would refuse it. A `metadata` that is not an
 * object is left to upstream.
 */
function readUserId(metadata: unknown): string | MessagesBodyProblem | undefined {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return undefined;
  const userId = (metadata as Record<string, unknown>).user_id;
  if (userId === undefined || userId === null || (typeof userId === 'string' && userId.trim() === '')) return undefined;
  if (typeof userId !== 'string') return { message: 'metadata.user_id: Input should be a valid string' };
  if (userId.length > MAX_CALL_USER_ID_CHARS) return { message: `metadata.user_id: String should have at most ${MAX_CALL_USER_ID_CHARS} characters` };
  return userId;
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

/**
 * The facts of the request's tools: each web search's and web fetch's bounds, each code-execution
 * tool, the MCP servers, and how many tools Anthropic defines. A tool with any other `type` is a
 * server tool the hold cannot bound: the body is refused, naming it. A web fetch's bound outside its
 * range is refused too; an entry of `tools` that is not an object is left to upstream to refuse.
 */
function readTools(tools: unknown, mcpServers: unknown): ToolFacts | { readonly problem: MessagesBodyProblem } {
  const facts = { webSearchMaxUses: [] as (number | undefined)[], webFetches: [] as WebFetchFacts[], codeExecutionTools: [] as ToolAt[], definedTools: 0 };
  let toolsets = 0;
  for (const [index, tool] of (Array.isArray(tools) ? tools : []).entries()) {
    if (typeof tool !== 'object' || tool === null) continue;
    const field = `tools[${index}]`;
    const { type, max_uses: maxUses } = tool as Record<string, unknown>;
    if (type === undefined || type === CUSTOM_TOOL_TYPE) continue;
    if (typeof type !== 'string') return { problem: { message: `${field}.type: Input should be a string` } };
    facts.definedTools++;
    if (type.startsWith(WEB_SEARCH_TOOL_PREFIX)) facts.webSearchMaxUses.push(typeof maxUses === 'number' && Number.isSafeInteger(maxUses) && maxUses > 0 ? maxUses : undefined);
    else if (type.startsWith(WEB_FETCH_TOOL_PREFIX)) {
      const fetch = readWebFetch(field, tool as Record<string, unknown>);
      if ('problem' in fetch) return fetch;
      facts.webFetches.push(fetch);
    } else if (type.startsWith(CODE_EXECUTION_TOOL_PREFIX)) facts.codeExecutionTools.push({ field, type: shown(type) });
    else if (type === MCP_TOOLSET_TYPE) toolsets++;
    else if (!CLIENT_TOOL_PREFIXES.some((prefix) => type.startsWith(prefix))) {
      return { problem: { message: `${field}.type: ${shown(type)} is a server tool the gateway cannot bound, so it cannot hold the call` } };
    }
  }
  // An `mcp_servers` that is not a list is upstream's to refuse; counted as one server, it is never held as none.
  const servers = Array.isArray(mcpServers) ? mcpServers.length : mcpServers === undefined || mcpServers === null ? 0 : 1;
  return { ...facts, mcpServers: Math.max(servers, toolsets) };
}

/** A tool type as a refusal repeats it: at most MAX_SHOWN_TOOL_TYPE_CHARS characters of it. */
function shown(type: string): string {
  return type.length <= MAX_SHOWN_TOOL_TYPE_CHARS ? type : `${type.slice(0, MAX_SHOWN_TOOL_TYPE_CHARS)}…`;
}

/** A web-fetch tool's `max_uses` and `max_content_tokens`: absent, or a whole number within its named bound. */
function readWebFetch(field: string, tool: Record<string, unknown>): WebFetchFacts | { readonly problem: MessagesBodyProblem } {
  const fetch: { maxUses?: number; maxContentTokens?: number } = {};
  for (const [name, key, max] of [
    ['max_uses', 'maxUses', MAX_WEB_FETCH_USES],
    ['max_content_tokens', 'maxContentTokens', MAX_WEB_FETCH_CONTENT_TOKENS],
  ] as const) {
    const value = tool[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) {
      return { problem: { message: `${field}.${name}: Input should be a whole number from 1 to ${max}` } };
    }
    fetch[key] = value;
  }
  return fetch;
}
