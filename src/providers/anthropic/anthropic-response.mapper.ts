/**
 * Maps a Messages API response into the runtime's terms (src/providers/anthropic/README.md): stop
 * reason, content, usage.
 */
import type { Message as ApiMessage, StopReason as ApiStopReason } from '@anthropic-ai/sdk/resources/messages';
import { ProviderFault } from '../../runtime/faults';
import type { ProviderBlock, ProviderResponse, StopReason, TextBlock, ToolUseBlock, Usage } from '../../runtime/provider.port';
import { ANTHROPIC_PROVIDER_NAME } from './anthropic-request.builder';

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
 * The usage the API reported, field by field, or undefined when it reported none:
 * `input_tokens` (uncached input), `output_tokens`, `cache_creation.ephemeral_5m_input_tokens` and
 * `ephemeral_1h_input_tokens` (writes by lifetime), `cache_read_input_tokens`,
 * `server_tool_use.web_search_requests`, and the mode it served the request in: `service_tier`,
 * `speed` (`standard`, `fast`) and `inference_geo`. Nullable counters (null when the request
 * used no cache or no server tool) count as 0. Without the `cache_creation` breakdown, every write in
 * `cache_creation_input_tokens` has the default 5-minute lifetime; a total above the breakdown's sum
 * is counted as 5-minute writes too, so no billed token is dropped.
 */
export function mapUsage(usage: unknown): Usage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const raw = usage as Record<string, unknown>;
  const breakdown = objectOrEmpty(raw.cache_creation);
  const written1h = tokenCount(breakdown.ephemeral_1h_input_tokens);
  const written5m = tokenCount(breakdown.ephemeral_5m_input_tokens);
  const writtenTotal = tokenCount(raw.cache_creation_input_tokens);
  const serviceTier = nonEmptyText(raw.service_tier);
  const speed = nonEmptyText(raw.speed);
  const inferenceGeo = nonEmptyText(raw.inference_geo);
  return {
    inputTokens: tokenCount(raw.input_tokens),
    outputTokens: tokenCount(raw.output_tokens),
    cacheWriteTokens: Math.max(written5m, writtenTotal - written1h),
    cacheWrite1hTokens: written1h,
    cacheReadTokens: tokenCount(raw.cache_read_input_tokens),
    webSearchRequests: tokenCount(objectOrEmpty(raw.server_tool_use).web_search_requests),
    ...(serviceTier === undefined ? {} : { serviceTier }),
    ...(speed === undefined ? {} : { speed }),
    ...(inferenceGeo === undefined ? {} : { inferenceGeo }),
  };
}

function nonEmptyText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function objectOrEmpty(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
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
 * Maps a successful (2xx) response. Text and tool_use blocks become the runtime's own; every other
 * block (thinking, redacted thinking, a server tool's call and result such as web search) is kept as
 * a pass-through block, in the model's order, untouched, so the next turn sends it back as received.
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

  const content: (TextBlock | ToolUseBlock | ProviderBlock)[] = [];
  for (const block of body.content) {
    if (block.type === 'text') content.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use') content.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
    else if (typeof block === 'object' && block !== null) {
      content.push({ type: 'provider_block', provider: ANTHROPIC_PROVIDER_NAME, block: block as unknown as Record<string, unknown> });
    }
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
