/**
 * Maps a Messages API response into the runtime's terms (src/providers/anthropic/README.md): stop
 * reason, content, usage.
 */
import type { Message as ApiMessage, StopReason as ApiStopReason } from '@anthropic-ai/sdk/resources/messages';
import { ProviderFault } from '../../runtime/faults';
import type { ProviderBlock, ProviderResponse, StopReason, TextBlock, ToolUseBlock, Usage, UsageKind } from '../../runtime/provider.port';
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
 * The largest count of one usage kind the gateway believes one call reported, in tokens (or web
 * searches); a count above it is malformed usage (docs/gateway.md "Settlement"). One Anthropic call
 * cannot come near it: a context window is about 10^6 tokens and a server tool re-reads it at most a
 * few hundred times, some 10^8 tokens, and a call makes at most a few hundred searches. Yet it is low
 * enough that the read side's sums stay exact for a very long time: a usage-statement line (one key,
 * model and UTC day) leaves the exact-integer range only after about 900,000 calls each reporting
 * the bound in the same kind (2^53 / 10^10), and anything summed past it saturates there
 * (`addUsageSaturating`).
 */
export const MAX_REPORTED_USAGE_COUNT = 10_000_000_000;

/**
 * The usage the API reported, field by field, or undefined when it reported none:
 * `input_tokens` (uncached input), `output_tokens`, `cache_creation.ephemeral_5m_input_tokens` and
 * `ephemeral_1h_input_tokens` (writes by lifetime), `cache_read_input_tokens`,
 * `server_tool_use.web_search_requests`, and the mode it served the request in: `service_tier`,
 * `speed` (`standard`, `fast`) and `inference_geo`. Nullable counters (null when the request
 * used no cache or no server tool) count as 0. Without the `cache_creation` breakdown, every write in
 * `cache_creation_input_tokens` has the default 5-minute lifetime; a total above the breakdown's sum
 * is counted as 5-minute writes too, so no billed token is dropped. A malformed count counts as 0
 * here, and a count above MAX_REPORTED_USAGE_COUNT as reported (an operation's provider is the
 * operator's own); the gateway reads the same usage with `readUsageReport`, which says which field
 * was malformed.
 */
export function mapUsage(usage: unknown): Usage | undefined {
  return readUsage(usage).usage;
}

/**
 * The API's usage as the gateway prices it (docs/gateway.md "Settlement"): the usage, or, when any
 * field is malformed, the first such field's name (`output_tokens`,
 * `server_tool_use.web_search_requests`, …) and no usage, so it is never priced from a guess. A count
 * is malformed unless it is null, absent or a non-negative integer at most MAX_REPORTED_USAGE_COUNT
 * (1e20, 2^53−1, −1, 9.5 and "9000" all are); a nested object unless null, absent or an object; a mode unless null, absent or a
 * string. Never the field's value: it came from upstream and is not kept.
 */
export function readUsageReport(usage: unknown): { readonly usage?: Usage; readonly malformedField?: string } {
  const read = readUsage(usage);
  if (read.malformedField !== undefined) return { malformedField: read.malformedField };
  return read.usage === undefined ? {} : { usage: read.usage };
}

/**
 * The API field each usage kind is read from (a cache write's total; its 1-hour part from the
 * breakdown), so a price past the exact-integer range can name the field that drove it.
 */
export const API_USAGE_FIELD_OF_KIND: Readonly<Record<UsageKind, string>> = {
  inputTokens: 'input_tokens',
  outputTokens: 'output_tokens',
  cacheWriteTokens: 'cache_creation_input_tokens',
  cacheWrite1hTokens: 'cache_creation.ephemeral_1h_input_tokens',
  cacheReadTokens: 'cache_read_input_tokens',
  webSearchRequests: 'server_tool_use.web_search_requests',
};

/** One pass over the fields: the lenient usage (a malformed count as 0) and the first malformed field. */
function readUsage(usage: unknown): { usage: Usage | undefined; malformedField: string | undefined } {
  if (typeof usage !== 'object' || usage === null || Array.isArray(usage)) {
    return { usage: undefined, malformedField: usage === undefined || usage === null ? undefined : 'usage' };
  }
  const raw = usage as Record<string, unknown>;
  const fields = new UsageFields();
  const breakdown = fields.object('cache_creation', raw.cache_creation);
  const written1h = fields.count('cache_creation.ephemeral_1h_input_tokens', breakdown.ephemeral_1h_input_tokens);
  const written5m = fields.count('cache_creation.ephemeral_5m_input_tokens', breakdown.ephemeral_5m_input_tokens);
  const writtenTotal = fields.count('cache_creation_input_tokens', raw.cache_creation_input_tokens);
  const serviceTier = fields.text('service_tier', raw.service_tier);
  const speed = fields.text('speed', raw.speed);
  const inferenceGeo = fields.text('inference_geo', raw.inference_geo);
  const read: Usage = {
    inputTokens: fields.count('input_tokens', raw.input_tokens),
    outputTokens: fields.count('output_tokens', raw.output_tokens),
    cacheWriteTokens: Math.max(written5m, writtenTotal - written1h),
    cacheWrite1hTokens: written1h,
    cacheReadTokens: fields.count('cache_read_input_tokens', raw.cache_read_input_tokens),
    webSearchRequests: fields.count('server_tool_use.web_search_requests', fields.object('server_tool_use', raw.server_tool_use).web_search_requests),
    ...(serviceTier === undefined ? {} : { serviceTier }),
    ...(speed === undefined ? {} : { speed }),
    ...(inferenceGeo === undefined ? {} : { inferenceGeo }),
  };
  return { usage: read, malformedField: fields.malformed };
}

/** Reads usage fields leniently, remembering the first one that is not what the API documents. */
class UsageFields {
  malformed: string | undefined;

  /**
   * Token counts are non-negative safe integers (null: none); anything else counts as 0 and is
   * malformed. One above MAX_REPORTED_USAGE_COUNT is malformed too, but counts as reported.
   */
  count(name: string, value: unknown): number {
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) {
      if (value > MAX_REPORTED_USAGE_COUNT) this.flag(name, value);
      return value;
    }
    this.flag(name, value);
    return 0;
  }

  object(name: string, value: unknown): Record<string, unknown> {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
    this.flag(name, value);
    return {};
  }

  /** A mode's name; an empty one is none. */
  text(name: string, value: unknown): string | undefined {
    if (typeof value === 'string') return value.trim() === '' ? undefined : value;
    this.flag(name, value);
    return undefined;
  }

  private flag(name: string, value: unknown): void {
    if (value !== undefined && value !== null && this.malformed === undefined) this.malformed = name;
  }
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
