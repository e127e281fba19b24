/**
 * The provider port: one model request with a timeout and a signal, answered with a response or a
 * thrown ProviderFault. The runtime imports no SDK; adapters (src/providers/) plug in here.
 */

import { USAGE_KINDS, type UsageKind } from './price-kinds';

// The priced kinds are rows of the price-kind table; re-exported for the port's readers.
export { USAGE_KINDS, type UsageKind };

/** Every priced kind of usage as a non-negative integer count, derived from the price-kind table. */
export type UsageCounts = { readonly [K in UsageKind]: number };

/**
 * Usage as the provider reported it, each priced kind apart so a price can be recomputed from it
 * (docs/rules.md, attempt prices): the counts of the price-kind table (`src/runtime/price-kinds.ts`),
 * and the mode the provider says it served the request in.
 */
export interface Usage extends UsageCounts {
  /** The provider's service tier for the request (e.g. `standard`, `priority`), where it says. */
  readonly serviceTier?: string;
  /** The provider's inference speed for the request (`standard` or `fast`), where it says. */
  readonly speed?: string;
  /** Where the provider says it ran the request (e.g. `us`, `global`), where it says. */
  readonly inferenceGeo?: string;
}

/** How long a provider keeps a cached prefix: 5 minutes (the default) or 1 hour (priced higher to write). */
export type CacheTtl = '5m' | '1h';

export interface TextBlock {
  readonly type: 'text';
  readonly text: string;
  /** The feature marks this content stable, so a provider may cache it (BR-CAP-PFM-LLM-002-12). */
  readonly stable?: boolean;
  /** The cache lifetime a stable block asks for; default `5m`. */
  readonly cacheTtl?: CacheTtl;
}

export interface ToolUseBlock {
  readonly type: 'tool_use';
  /** The call id the model chose; a result must answer it. */
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

export interface ToolResultBlock {
  readonly type: 'tool_result';
  readonly toolUseId: string;
  /** The result as text (JSON for structured values). Error texts are bounded and carry no stack. */
  readonly content: string;
  readonly isError: boolean;
}

/**
 * A block the provider produced that the runtime does not interpret: extended thinking, a server-side
 * tool's call and its result (web search). It stays in the conversation and is sent back to the same
 * provider exactly as received (thinking with tool use requires it). It is conversation body: never
 * recorded in an event, a log line or a span.
 */
export interface ProviderBlock {
  readonly type: 'provider_block';
  /** The provider whose adapter made it; another provider's adapter never sends it. */
  readonly provider: string;
  /** The block as the provider's API returned it, untouched. */
  readonly block: Readonly<Record<string, unknown>>;
}

export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | ProviderBlock;

export interface Message {
  readonly role: 'user' | 'assistant';
  readonly content: readonly ContentBlock[];
}

/** What a provider is told about a tool. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON Schema (draft 2020-12 subset) of the tool's input object. */
  readonly inputSchema: Record<string, unknown>;
  /** Tool definitions are stable across turns and may be cached. */
  readonly stable?: boolean;
  /** The cache lifetime a stable definition asks for; default `5m`. */
  readonly cacheTtl?: CacheTtl;
}

/**
 * Provider-side features a feature may turn on for its conversation: server tools the provider runs
 * itself (their definitions in the provider's own JSON, e.g. Anthropic's
 * `{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }`) and extended thinking.
 * The runtime passes them through; the adapter that understands them sends them.
 */
export interface ProviderFeatures {
  readonly serverTools?: readonly Readonly<Record<string, unknown>>[];
  /** Extended thinking with this budget of output tokens (below `maxOutputTokens`). */
  readonly thinking?: { readonly budgetTokens: number };
}

export interface ProviderRequest {
  readonly model: string;
  /** Stable instructions. */
  readonly system: readonly TextBlock[];
  readonly messages: readonly Message[];
  readonly tools: readonly ToolDefinition[];
  readonly maxOutputTokens: number;
  /** Server tools and extended thinking, when the feature turned them on. */
  readonly features?: ProviderFeatures;
}

/**
 * Why the model stopped, in the runtime's terms. `context_window_exceeded` is the provider's
 * `model_context_window_exceeded`.
 */
export type StopReason =
  | 'end_turn'
  | 'tool_use'
  | 'max_tokens'
  | 'refusal'
  | 'pause_turn'
  | 'stop_sequence'
  | 'context_window_exceeded';

export interface ProviderResponse {
  readonly stopReason: StopReason;
  /** Text, tool_use and pass-through blocks, in the order the model produced them. */
  readonly content: readonly (TextBlock | ToolUseBlock | ProviderBlock)[];
  /** Undefined when the provider reported none. */
  readonly usage?: Usage;
  readonly providerRequestId?: string;
  /** The model that actually answered. */
  readonly model: string;
  readonly httpStatus?: number;
}

export interface SendOptions {
  /** This attempt's timeout: min(attemptTimeoutMs, remaining conversation time). */
  readonly timeoutMs: number;
  /** Fires on cancellation or at the conversation deadline. */
  readonly signal: AbortSignal;
}

export interface Provider {
  /** `routing.provider` of the publications it serves. */
  readonly name: string;
  /** Sends one request; throws only ProviderFault. Makes exactly one attempt (no hidden retries). */
  send(request: ProviderRequest, options: SendOptions): Promise<ProviderResponse>;
}
