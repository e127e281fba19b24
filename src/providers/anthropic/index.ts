export { AnthropicProvider, ANTHROPIC_DEFAULT_BASE_URL } from './anthropic.provider';
export type { AnthropicLogger, AnthropicProviderOptions } from './anthropic.provider';
export { buildMessagesRequest, MAX_CACHE_MARKERS } from './anthropic-request.builder';
export { mapMessageResponse, mapStopReason, mapUsage } from './anthropic-response.mapper';
export { MAX_FAULT_MESSAGE_CHARS, parseRetryAfterMs, toProviderFault } from './anthropic-error.mapper';
