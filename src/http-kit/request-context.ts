import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { headerOf, type HttpRequest } from './http.types';
import type { Caller } from './auth/caller';

/** Longest request id accepted from a client's `X-Request-Id`, in characters. */
export const MAX_REQUEST_ID_CHARS = 128;
// A client's id lands in log lines, so only a conservative alphabet is taken over; else we mint one.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]+$/;

export const REQUEST_ID_HEADER = 'x-request-id';

/** What the HTTP layer attaches to a request while serving it. */
export interface LedgerRequestContext {
  requestId: string;
  /** `performance.now()` when the request arrived (its first hook ran), for timings measured from there. */
  readonly arrivedAt: number;
  /** Set by the bearer-token guard once the token is known. */
  caller?: Caller;
  /** A body the parser refused; raised after authentication (see body-error.guard.ts). */
  bodyError?: BodyProblem;
}

export interface BodyProblem {
  readonly status: 400 | 413 | 415;
  readonly message: string;
  /** For a 400 about fields inside the body (a key named like `__proto__`): field path → problems. */
  readonly fields?: Readonly<Record<string, string[]>>;
}

export type LedgerRequest = HttpRequest & { ledger?: LedgerRequestContext };

/** The request's context, created on first use (a request that skipped the middleware still gets an id). */
export function contextOf(request: LedgerRequest): LedgerRequestContext {
  request.ledger ??= { requestId: randomUUID(), arrivedAt: performance.now() };
  return request.ledger;
}

/**
 * Gives each request an id (echoed in `X-Request-Id`) and writes ONE structured log line when the
 * response ends: method, path (no query string), status, duration, request id and the caller's role.
 * Never a body, a header value or a token. Runs first on every request, on Node's own request and
 * response (the platform's request object is where the context lives).
 */
export function startRequestContext(
  logger: Logger,
  request: LedgerRequest,
  incoming: IncomingMessage,
  response: ServerResponse,
): void {
  const offered = headerOf(request, REQUEST_ID_HEADER);
  const requestId =
    offered !== undefined && offered.length <= MAX_REQUEST_ID_CHARS && CLIENT_REQUEST_ID.test(offered) ? offered : randomUUID();
  const context: LedgerRequestContext = { requestId, arrivedAt: performance.now() };
  request.ledger = context;
  response.setHeader(REQUEST_ID_HEADER, requestId);
  const startedAt = process.hrtime.bigint();
  response.once('close', () => {
    const durationMs = Number((process.hrtime.bigint() - startedAt) / 1_000n) / 1_000;
    // The address as the client sent it, before a malformed escape was rewritten for routing.
    const url = (incoming as IncomingMessage & { originalUrl?: string }).originalUrl ?? incoming.url ?? '';
    const queryAt = url.indexOf('?');
    logger.log({
      message: 'request',
      method: incoming.method,
      path: queryAt === -1 ? url : url.slice(0, queryAt),
      status: response.statusCode,
      durationMs,
      requestId,
      ...(context.caller === undefined ? {} : { role: context.caller.role }),
      // The client went away before the answer was complete.
      ...(response.writableFinished ? {} : { aborted: true }),
    });
  });
}
