/**
 * Maps a Messages API response into the runtime's terms (SPEC §8): stop reason, content, usage.
 */
import type { Message as ApiMessage, StopReason as ApiStopReason } from '@anthropic-ai/sdk/resources/messages';
import { ProviderFault } from '../../runtime/faults';
import type { ProviderResponse, StopReason, TextBlock, ToolUseBlock, Usage } from '../../runtime/provider.port';

const STOP_REASONS: Readonly<Record<ApiStopReason, StopReason>> = {
  end_turn: 'end_turn',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  refusal: 'refusal',
  pause_turn: 'pause_turn',
  stop_sequence: 'stop_sequence',
  model_context_window_exceeded: 'context_window_exceeded',
};

/** The runtime's StopReason for an API `stop_reason`, or undefined for one this adapter does not know. */
export function mapStopReason(stopReason: unknown): StopReason | undefined {
  return typeof stopReason === 'string' && Object.hasOwn(STOP_REASONS, stopReason)
    ? STOP_REASONS[stopReason as ApiStopReason]
    : undefined;
}

/**
 * The usage the API reported, or undefined when it reported none. The cache counters are nullable in
 * the API (null when the request used no cache); null or absent counts as 0.
 */
export function mapUsage(usage: unknown): Usage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const raw = usage as Record<string, unknown>;
  return {
    inputTokens: tokenCount(raw.input_tokens),
    outputTokens: tokenCount(raw.output_tokens),
    cacheWriteTokens: tokenCount(raw.cache_creation_input_tokens),
    cacheReadTokens: tokenCount(raw.cache_read_input_tokens),
  };
}

/** Token counts are non-negative integers; anything else the wire carries counts as 0. */
function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}

export interface ResponseMeta {
  readonly requestedModel: string;
  readonly httpStatus: number;
  readonly providerRequestId?: string;
}

/**
 * Maps a successful (2xx) response. Text and tool_use blocks are kept in the model's order; other
 * block kinds (thinking, server tools) are never requested by this adapter and are dropped.
 * A body without a known stop reason cannot be acted on: it becomes a `server_error` fault that still
 * carries the usage, so a billed attempt is not lost.
 */
export function mapMessageResponse(message: ApiMessage, meta: ResponseMeta): ProviderResponse {
  const body: Partial<ApiMessage> = typeof message === 'object' && message !== null ? message : {};
  const usage = mapUsage(body.usage);
  const stopReason = mapStopReason(body.stop_reason);
  if (stopReason === undefined || !Array.isArray(body.content)) {
    throw new ProviderFault('server_error', `anthropic ${meta.httpStatus}: response without a known stop reason or content`, {
      httpStatus: meta.httpStatus,
      providerRequestId: meta.providerRequestId,
      usage,
    });
  }

  const content: (TextBlock | ToolUseBlock)[] = [];
  for (const block of body.content) {
    if (block.type === 'text') content.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use') content.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
  }

  return {
    stopReason,
    content,
    usage,
    providerRequestId: meta.providerRequestId,
    model: typeof body.model === 'string' && body.model !== '' ? body.model : meta.requestedModel,
    httpStatus: meta.httpStatus,
  };
}
