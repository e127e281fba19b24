/**
 * Builds the Messages API body from the runtime's provider-neutral request (SPEC §8).
 */
import type {
  CacheControlEphemeral,
  MessageCreateParamsNonStreaming,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import type { ContentBlock, Message, ProviderRequest, TextBlock, ToolDefinition } from '../../runtime/provider.port';

/**
 * The most `cache_control` breakpoints one Messages API request may carry; the API rejects a request
 * with more (BR-CAP-PFM-LLM-002-12).
 */
export const MAX_CACHE_MARKERS = 4;

const EPHEMERAL: CacheControlEphemeral = { type: 'ephemeral' };

type ApiContentBlock = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam;

/**
 * Hands out cache markers to the blocks that ask, in the order the API renders its prompt prefix:
 * tools, then system, then messages. The first MAX_CACHE_MARKERS askers get one; later askers are
 * sent unmarked. Earlier blocks are the most stable part of the prefix, so they keep their markers.
 */
class CacheMarkerBudget {
  private granted = 0;

  /** True when this asking block gets a marker; false once the budget is spent. */
  take(asks: boolean | undefined): boolean {
    if (asks !== true || this.granted >= MAX_CACHE_MARKERS) return false;
    this.granted += 1;
    return true;
  }
}

/**
 * Turns a ProviderRequest into a non-streaming `messages.create` body.
 *
 * - Blocks marked `stable` (tool definitions, system blocks, message text) ask for a cache marker;
 *   at most MAX_CACHE_MARKERS are sent, the earliest in prefix order kept (tools, system, messages).
 * - Every text is copied as given: marking a block never changes what the model reads.
 * - Consecutive messages of one role become one message (the API would merge them anyway), so a
 *   turn's tool results always reach the model as ONE user message; inside a user message the
 *   `tool_result` blocks come first, as the API requires after a `tool_use` turn.
 */
export function buildMessagesRequest(request: ProviderRequest): MessageCreateParamsNonStreaming {
  const markers = new CacheMarkerBudget();
  // Evaluation order below is the API's prefix order; the marker budget depends on it.
  const tools = request.tools.map((tool) => toApiTool(tool, markers.take(tool.stable)));
  const system = request.system.map((block) => toApiText(block, markers.take(block.stable)));
  const messages = mergeSameRoleRuns(request.messages).map((message) => toApiMessage(message, markers));

  const body: MessageCreateParamsNonStreaming = {
    model: request.model,
    max_tokens: request.maxOutputTokens,
    messages,
  };
  if (system.length > 0) body.system = system;
  if (tools.length > 0) body.tools = tools;
  return body;
}

function toApiTool(tool: ToolDefinition, marked: boolean): Tool {
  const apiTool: Tool = {
    name: tool.name,
    description: tool.description,
    // The port carries a JSON Schema object; the API's type narrows it to `type: 'object'` schemas.
    input_schema: tool.inputSchema as Tool['input_schema'],
  };
  if (marked) apiTool.cache_control = EPHEMERAL;
  return apiTool;
}

function toApiText(block: TextBlock, marked: boolean): TextBlockParam {
  const apiBlock: TextBlockParam = { type: 'text', text: block.text };
  if (marked) apiBlock.cache_control = EPHEMERAL;
  return apiBlock;
}

function toApiMessage(message: Message, markers: CacheMarkerBudget): MessageParam {
  const ordered =
    message.role === 'user'
      ? [...message.content.filter(isToolResult), ...message.content.filter((block) => !isToolResult(block))]
      : message.content;
  return { role: message.role, content: ordered.map((block) => toApiContent(block, markers)) };
}

function toApiContent(block: ContentBlock, markers: CacheMarkerBudget): ApiContentBlock {
  switch (block.type) {
    case 'text':
      return toApiText(block, markers.take(block.stable));
    case 'tool_use':
      return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
    case 'tool_result': {
      const result: ToolResultBlockParam = { type: 'tool_result', tool_use_id: block.toolUseId, content: block.content };
      // Sent only when true: an absent flag is the API's "this call succeeded".
      if (block.isError) result.is_error = true;
      return result;
    }
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
