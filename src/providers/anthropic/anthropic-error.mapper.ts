/**
 * Classifies every failure of one Messages API attempt into the closed fault set of
 * docs/rules.md rules 05–06. This is the one place that reads the SDK's error classes and the
 * provider's error bodies; the runtime branches only on the resulting classification.
 */
import {
  AnthropicError,
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import { classifyHttpFault, FaultClass, ProviderFault } from '../../runtime/faults';

/** Fault messages are for operators; the provider's own text is cut to this many characters. */
export const MAX_FAULT_MESSAGE_CHARS = 500;

/**
 * Anthropic `error.details.error_code`s that mean the account's spending is capped until a person
 * acts (a monthly or contract spend limit). Retrying reads a purchase problem as load (BR-06).
 */
const SPEND_LIMIT_ERROR_CODE = /(^|_)spend_limit_reached$/;

/**
 * Node and undici codes that say the connection itself failed (the `connection` class;
 * docs/rules.md rule 05).
 */
const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** How far down an error's `cause` chain to look for a network error code. */
const MAX_CAUSE_DEPTH = 5;

/** What the provider knew about the attempt when it failed. */
export interface AttemptContext {
  /** The adapter's own attempt timer fired. */
  readonly attemptTimedOut: boolean;
  /** The caller's signal, to tell a cancellation from a deadline. */
  readonly callerSignal: AbortSignal;
  /** Texts that must never appear in a fault message (the API key). */
  readonly secrets: readonly string[];
}

/** Minimal view of response headers (the fetch `Headers` class satisfies it). */
export interface HeaderReader {
  get(name: string): string | null;
}

/**
 * The wait the server asked for, in whole milliseconds: `retry-after-ms` (milliseconds) first, then
 * `retry-after` as delta-seconds or an HTTP date. A date is read against the response's own `date`
 * header when it has one, so the server's clock, not ours, decides. Unreadable or negative: undefined.
 */
export function parseRetryAfterMs(headers: HeaderReader | null | undefined, nowMs: () => number = Date.now): number | undefined {
  if (!headers) return undefined;
  const millis = headers.get('retry-after-ms');
  if (millis !== null && millis.trim() !== '') {
    const value = Number(millis.trim());
    if (Number.isFinite(value) && value >= 0) return Math.ceil(value);
  }
  const after = headers.get('retry-after')?.trim();
  if (!after) return undefined;
  if (/^\d+(\.\d+)?$/.test(after)) return Math.ceil(Number(after) * 1000);
  const atMs = Date.parse(after);
  if (Number.isNaN(atMs)) return undefined;
  const serverNowMs = Date.parse(headers.get('date') ?? '');
  const waitMs = atMs - (Number.isNaN(serverNowMs) ? nowMs() : serverNowMs);
  return waitMs >= 0 ? Math.ceil(waitMs) : undefined;
}

/**
 * Turns whatever one attempt threw into a ProviderFault. The adapter's own timer and the caller's
 * signal are consulted first for anything that is not an HTTP answer, because the SDK reports both as
 * a plain abort. The message never contains a secret and never carries the SDK error as a cause.
 */
export function toProviderFault(error: unknown, context: AttemptContext): ProviderFault {
  if (error instanceof ProviderFault) return error;

  if (error instanceof APIError && typeof error.status === 'number') {
    return httpFault(error, context);
  }

  if (context.attemptTimedOut) {
    return fault('timeout', 'anthropic: the attempt ran out of time', context, { timedOut: true });
  }
  if (context.callerSignal.aborted) {
    // A signal aborted with a TimeoutError (AbortSignal.timeout, a deadline) is the conversation
    // running out of time, not a person cancelling.
    return isTimeoutReason(context.callerSignal.reason)
      ? fault('timeout', 'anthropic: the conversation deadline ended the attempt', context, { timedOut: true })
      : fault('cancelled', 'anthropic: the attempt was cancelled by the caller', context);
  }
  if (error instanceof APIConnectionTimeoutError) {
    return fault('timeout', 'anthropic: the attempt ran out of time', context, { timedOut: true });
  }
  if (error instanceof APIUserAbortError) {
    return fault('cancelled', 'anthropic: the attempt was aborted', context);
  }

  const code = networkErrorCode(error);
  if (error instanceof APIConnectionError || code !== undefined || isBodyTerminated(error)) {
    return fault('connection', `anthropic: connection failed${code ? ` (${code})` : ''}`, context);
  }
  if (error instanceof SyntaxError) {
    // A 2xx body that is not JSON: the provider's fault, and another attempt may well succeed.
    return fault('server_error', 'anthropic: the response body was not valid JSON', context);
  }
  // Anything else is a client-side surprise (e.g. the SDK refusing its options). Retrying the same
  // request cannot help, so it is classified as a request the provider cannot take.
  const detail = error instanceof AnthropicError ? error.message : 'unexpected error';
  return fault('malformed_request', `anthropic: ${detail}`, context);
}

/** What an Anthropic error answer says: its status and its body's `error.type`, `message` and `details.error_code`. */
export interface AnthropicErrorEvidence {
  readonly status: number;
  readonly errorType?: string;
  readonly message?: string;
  readonly errorCode?: string;
}

/**
 * The fault class of an Anthropic error answer, whether the SDK read it (an attempt of an operation)
 * or the gateway relayed it: a spend-limit error code first, then the status and the error type.
 */
export function classifyAnthropicFault({ status, errorType, message, errorCode }: AnthropicErrorEvidence): FaultClass {
  if (errorCode !== undefined && SPEND_LIMIT_ERROR_CODE.test(errorCode)) return 'credit_exhausted';
  return classifyHttpFault({ status, errorType, message });
}

/**
 * The evidence in an error body as Anthropic sends it,
 * `{ "type": "error", "error": { "type", "message", "details": { "error_code" } } }`; a body of
 * another shape (a proxy's page) leaves only the status.
 */
export function anthropicErrorEvidence(status: number, body: unknown): AnthropicErrorEvidence {
  const error = objectField(body, 'error');
  const details = objectField(error, 'details');
  const errorType = error?.type;
  const message = error?.message;
  const errorCode = details?.error_code;
  return {
    status,
    ...(typeof errorType === 'string' ? { errorType } : {}),
    ...(typeof message === 'string' ? { message } : {}),
    ...(typeof errorCode === 'string' ? { errorCode } : {}),
  };
}

function objectField(value: unknown, name: string): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const field = (value as Record<string, unknown>)[name];
  return typeof field === 'object' && field !== null ? (field as Record<string, unknown>) : undefined;
}

function httpFault(error: APIError, context: AttemptContext): ProviderFault {
  const status = error.status as number;
  const errorType = error.type ?? undefined;
  const apiMessage = error.apiMessage ?? undefined;
  const classification = classifyAnthropicFault({ status, errorType, message: apiMessage, ...(error.errorCode === null ? {} : { errorCode: error.errorCode }) });
  const label = [errorType, error.errorCode].filter((part) => part).join('/');
  const text = `anthropic ${status}${label ? ` ${label}` : ''}${apiMessage ? `: ${apiMessage}` : ''}`;
  return fault(classification, text, context, {
    httpStatus: status,
    providerRequestId: error.requestID ?? undefined,
    retryAfterMs: parseRetryAfterMs(error.headers),
  });
}

function fault(
  classification: FaultClass,
  message: string,
  context: AttemptContext,
  details: ConstructorParameters<typeof ProviderFault>[2] = {},
): ProviderFault {
  return new ProviderFault(classification, redact(message, context.secrets), withoutUndefined(details));
}

/** Removes every secret, then bounds the length (the cut happens after redaction so no partial key survives). */
export function redact(text: string, secrets: readonly string[]): string {
  let clean = text;
  for (const secret of secrets) {
    if (secret !== '') clean = clean.split(secret).join('[redacted]');
  }
  return clean.length > MAX_FAULT_MESSAGE_CHARS ? `${clean.slice(0, MAX_FAULT_MESSAGE_CHARS - 1)}…` : clean;
}

function withoutUndefined<T extends object>(details: T): T {
  return Object.fromEntries(Object.entries(details).filter(([, value]) => value !== undefined)) as T;
}

function isTimeoutReason(reason: unknown): boolean {
  return typeof reason === 'object' && reason !== null && (reason as { name?: unknown }).name === 'TimeoutError';
}

function networkErrorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** undici's `TypeError: terminated`: the socket closed while the body was being read. */
function isBodyTerminated(error: unknown): boolean {
  return error instanceof TypeError && error.message === 'terminated';
}
