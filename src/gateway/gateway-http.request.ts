/**
 * What the gateway's routes share: Node's own request and response under the platform's, and how a
 * refusal is answered. The routes write Node's response themselves (an answer is relayed as it
 * arrives), on Fastify and on Express alike.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpRequest } from '../http-kit/http.types';
import { repeatedSingleValuedHeader } from '../http-kit/single-valued-headers';
import { sendAnthropicError } from './anthropic-error.body';
import type { GatewayRefusal } from './gateway-call.port';

/** Fastify's request wraps Node's (`raw`); Express's request is one. */
export function incomingOf(request: HttpRequest): IncomingMessage {
  const raw = (request as { raw?: IncomingMessage }).raw;
  return raw ?? (request as unknown as IncomingMessage);
}

/** The query string of the request's URL, `?` included, or `''`: passed upstream as sent. */
export function queryOf(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? '' : url.slice(at);
}

/** A refusal of the accounting's, in Anthropic's shape, with the invocation it was recorded as. */
export function sendRefusal(response: ServerResponse, refusal: GatewayRefusal, requestId: string): void {
  sendAnthropicError(response, refusal.status, refusal.errorType, refusal.message, requestId, {
    ...(refusal.invocationId === undefined ? {} : { invocationId: refusal.invocationId }),
    ...(refusal.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: refusal.retryAfterSeconds }),
  });
}

/** The accounting's answer to a key or a models list is a refusal (its success carries `ok`). */
export function isRefusal<T extends object>(answer: T | GatewayRefusal): answer is GatewayRefusal {
  return (answer as Partial<GatewayRefusal>).admitted === false;
}

/**
 * A header the service reads as one value (`Content-Type`, `Authorization`, …) sent more than once:
 * the 400's message, as the API refuses it (src/http-kit/single-valued-headers.ts); else undefined.
 */
export function repeatedHeaderProblem(request: HttpRequest): string | undefined {
  const repeated = repeatedSingleValuedHeader(request);
  return repeated === undefined ? undefined : `${repeated}: must be sent once (it was sent more than once)`;
}
