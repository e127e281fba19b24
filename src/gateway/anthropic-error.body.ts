/**
 * Anthropic's error shape, which every answer the gateway gives itself under `/anthropic` uses (its
 * refusals, bad input, an unknown path, its own faults), so an Anthropic SDK maps each one to its
 * error class as it would Anthropic's own. See docs/gateway.md.
 */
import type { ServerResponse } from 'node:http';
import type { AnthropicErrorType } from './gateway-call.port';

/** `{ "type": "error", "error": { "type", "message" }, "request_id" }`, as Anthropic answers errors. */
export interface AnthropicErrorBody {
  readonly type: 'error';
  readonly error: { readonly type: AnthropicErrorType; readonly message: string };
  readonly request_id: string;
}

/** The status Anthropic answers each error type with (and that its SDKs map back to the type). */
export const STATUS_OF_ANTHROPIC_ERROR_TYPE: Readonly<Record<AnthropicErrorType, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

const ANTHROPIC_ERROR_TYPE_OF_STATUS: ReadonlyMap<number, AnthropicErrorType> = new Map(
  Object.entries(STATUS_OF_ANTHROPIC_ERROR_TYPE).map(([type, status]) => [status, type as AnthropicErrorType]),
);

/**
 * The error type of a status the gateway answers itself: STATUS_OF_ANTHROPIC_ERROR_TYPE read the other
 * way; any other 4xx is the request's fault (415, 405), any other 5xx an `api_error`.
 */
export function anthropicErrorTypeOf(status: number): AnthropicErrorType {
  return ANTHROPIC_ERROR_TYPE_OF_STATUS.get(status) ?? (status < 500 ? 'invalid_request_error' : 'api_error');
}

export function anthropicErrorBody(type: AnthropicErrorType, message: string, requestId: string): AnthropicErrorBody {
  return { type: 'error', error: { type, message }, request_id: requestId };
}

/** What an answer of the gateway's own carries beside its body. */
export interface GatewayAnswerHeaders {
  /** The invocation the refusal was recorded as. */
  readonly invocationId?: string;
  /** On 429: when a slot may be free again, in whole seconds. */
  readonly retryAfterSeconds?: number;
}

export const INVOCATION_ID_HEADER = 'llm-ledger-invocation-id';
/** Anthropic's SDKs read an error's request id from this header (and the body's `request_id`). */
export const REQUEST_ID_HEADER = 'request-id';

/**
 * Answers an error in Anthropic's shape on Node's own response (Fastify's `reply.raw`, Express's
 * `res`). Nothing more is sent when an answer has already started: the connection is ended instead.
 */
export function sendAnthropicError(
  response: ServerResponse,
  status: number,
  type: AnthropicErrorType,
  message: string,
  requestId: string,
  headers: GatewayAnswerHeaders = {},
): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = JSON.stringify(anthropicErrorBody(type, message, requestId));
  response.statusCode = status;
  response.setHeader('content-type', 'application/json');
  response.setHeader('content-length', Buffer.byteLength(body));
  response.setHeader(REQUEST_ID_HEADER, requestId);
  if (headers.invocationId !== undefined) response.setHeader(INVOCATION_ID_HEADER, headers.invocationId);
  if (headers.retryAfterSeconds !== undefined) response.setHeader('retry-after', String(headers.retryAfterSeconds));
  response.end(body);
}
