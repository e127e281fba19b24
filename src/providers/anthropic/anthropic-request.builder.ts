/**
 * Builds the Messages API body from the runtime's provider-neutral request
 * (src/providers/anthropic/README.md).
 */
import type {
  CacheControlEphemeral,
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
  ToolUnion,
} from '@anthropic-ai/sdk/resources/messages';
import type { CacheTtl, ContentBlock, Message, ProviderRequest, TextBlock, ToolDefinition } from '../../runtime/provider.port';

/** The `provider` of the pass-through blocks this adapter makes and sends back. */
export const ANTHROPIC_PROVIDER_NAME = 'anthropic';

/**
 * The most `cache_control` breakpoints one Messages API request may carry; the API rejects a request
 * with more (BR-CAP-PFM-LLM-002-12).
 */
export const MAX_CACHE_MARKERS = 4;

const EPHEMERAL_5M: CacheControlEphemeral = { type: 'ephemeral' };
const EPHEMERAL_1H: CacheControlEphemeral = { type: 'ephemeral', ttl: '1h' };

/**
 * Hands out cache markers to the blocks that ask, in the order the API renders its prompt prefix:
 * tools, then system, then messages. The first MAX_CACHE_MARKERS askers get one; later askers are
 * sent unmarked. Earlier blocks are the most stable part of the prefix, so they keep their markers.
 *
 * The API requires every 1-hour marker to come before any 5-minute one in that order. So a block
 * that asks for an hour after a 5-minute marker was placed is marked for 5 minutes: it is still
 * cached, for the shorter (and cheaper to write) lifetime, and the request stays valid.
 */
class CacheMarkerBudget {
  private granted = 0;
  private fiveMinutePlaced = false;

  /** The marker this asking block gets, or undefined once the budget is spent (or it does not ask). */
  take(asks: boolean | undefined, ttl: CacheTtl | undefined): CacheControlEphemeral | undefined {
    if (asks !== true || this.granted >= MAX_CACHE_MARKERS) return undefined;
    this.granted += 1;
    if (ttl === '1h' && !this.fiveMinutePlaced) return EPHEMERAL_1H;
    this.fiveMinutePlaced = true;
    return EPHEMERAL_5M;
  }
}

/**
 * Turns a ProviderRequest into a non-streaming `messages.create` body.
 *
 * - Blocks marked `stable` (tool definitions, system blocks, message text) ask for a cache marker
 *   with their `cacheTtl` (5 minutes unless they ask for 1 hour); at most MAX_CACHE_MARKERS are
 *   sent, the earliest in prefix order kept (tools, system, messages), 1-hour ones first.
 * - Server tools (web search) follow the feature's own tools, as the feature defined them; extended
 *   thinking is requested with its budget.
 * - Pass-through blocks (thinking, server tool calls and results) go back exactly as received.
 * - Every text is copied as given: marking a block never changes what the model reads.
 * - Consecutive messages of one role become one message (the API would merge them anyway), so a
 *   turn's tool results always reach the model as ONE user message; inside a user message the
 *   `tool_result` blocks come first, as the API requires after a `tool_use` turn.
 */
export function buildMessagesRequest(request: ProviderRequest): MessageCreateParamsNonStreaming {
  const markers = new CacheMarkerBudget();
  // Evaluation order below is the API's prefix order; the marker budget depends on it.
  const tools: ToolUnion[] = request.tools.map((tool) => toApiTool(tool, markers.take(tool.stable, tool.cacheTtl)));
  const system = request.system.map((block) => toApiText(block, markers.take(block.stable, block.cacheTtl)));
  const messages = mergeSameRoleRuns(request.messages).map((message) => toApiMessage(message, markers));
  // Server tools come after the feature's tools and carry no marker of ours: sent as defined.
  for (const serverTool of request.features?.serverTools ?? []) tools.push({ ...serverTool } as unknown as ToolUnion);

  const body: MessageCreateParamsNonStreaming = {
    model: request.model,
    max_tokens: request.maxOutputTokens,
    messages,
  };
  if (system.length > 0) body.system = system;
  if (tools.length > 0) body.tools = tools;
  const thinking = request.features?.thinking;
  if (thinking !== undefined) body.thinking = { type: 'enabled', budget_tokens: thinking.budgetTokens };
  return body;
}

function toApiTool(tool: ToolDefinition, marker: CacheControlEphemeral | undefined): Tool {
  const apiTool: Tool = {
    name: tool.name,
    description: tool.description,
    // The port carries a JSON Schema object; the API's type narrows it to `type: 'object'` schemas.
    input_schema: tool.inputSchema as Tool['input_schema'],
  };
  if (marker !== undefined) apiTool.cache_control = marker;
  return apiTool;
}

function toApiText(block: TextBlock, marker: CacheControlEphemeral | undefined): TextBlockParam {
  const apiBlock: TextBlockParam = { type: 'text', text: block.text };
  if (marker !== undefined) apiBlock.cache_control = marker;
  return apiBlock;
}

function toApiMessage(message: Message, markers: CacheMarkerBudget): MessageParam {
  const ordered =
    message.role === 'user'
      ? [...message.content.filter(isToolResult), ...message.content.filter((block) => !isToolResult(block))]
      : message.content;
  const content: ContentBlockParam[] = [];
  for (const block of ordered) {
    const apiBlock = toApiContent(block, markers);
    if (apiBlock !== undefined) content.push(apiBlock);
  }
  return { role: message.role, content };
}

function toApiContent(block: ContentBlock, markers: CacheMarkerBudget): ContentBlockParam | undefined {
  switch (block.type) {
    case 'text':
      return toApiText(block, markers.take(block.stable, block.cacheTtl));
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
    case 'tool_result': {
      const result: ToolResultBlockParam = { type: 'tool_result', tool_use_id: block.toolUseId, content: block.content };
      // Sent only when true: an absent flag is the API's "this call succeeded".
      if (block.isError) result.is_error = true;
      return result;
    }
    case 'provider_block':
      // Ours, sent back as received (a thinking block's signature covers its exact content); another
      // provider's block means nothing to this API and is left out.
      return block.provider === ANTHROPIC_PROVIDER_NAME ? (block.block as unknown as ContentBlockParam) : undefined;
  }
}

function isToolResult(block: ContentBlock): boolean {
  return block.type === 'tool_result';
}

function mergeSameRoleRuns(messages: readonly Message[]): Message[] {
  const merged: Message[] = [];
  for (const message of messages) {
    const last = merged[merged.length - 1];
    if (last !== undefined && last.role === message.role) {
      merged[merged.length - 1] = { role: last.role, content: [...last.content, ...message.content] };
    } else {
      merged.push(message);
    }
  }
  return merged;
}
