import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, NextFunction } from './http.types';
import type { Caller } from './auth/caller';

/** Longest request id accepted from a client's `X-Request-Id`, in characters. */
export const MAX_REQUEST_ID_CHARS = 128;
// A client's id lands in log lines, so only a conservative alphabet is taken over; else we mint one.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]+$/;

export const REQUEST_ID_HEADER = 'x-request-id';

/** What the HTTP layer attaches to a request while serving it. */
export interface LedgerRequestContext {
  requestId: string;
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
  request.ledger ??= { requestId: randomUUID() };
  return request.ledger;
}

/**
 * Gives each request an id (echoed in `X-Request-Id`) and writes ONE structured log line when the
 * response ends: method, path (no query string), status, duration, request id and the caller's role.
 * Never a body, a header value or a token.
 */
export function requestContextMiddleware(logger: Logger) {
  return (request: LedgerRequest, response: HttpResponse, next: NextFunction): void => {
    const offered = request.header(REQUEST_ID_HEADER);
    const requestId =
      offered !== undefined && offered.length <= MAX_REQUEST_ID_CHARS && CLIENT_REQUEST_ID.test(offered) ? offered : randomUUID();
    request.ledger = { requestId };
    response.setHeader(REQUEST_ID_HEADER, requestId);
    const startedAt = process.hrtime.bigint();
    response.once('close', () => {
      const durationMs = Number((process.hrtime.bigint() - startedAt) / 1_000n) / 1_000;
      logger.log({
        message: 'request',
        method: request.method,
        path: (request.originalUrl ?? request.url).split('?')[0],
        status: response.statusCode,
        durationMs,
        requestId,
        ...(request.ledger?.caller === undefined ? {} : { role: request.ledger.caller.role }),
        // The client went away before the answer was complete.
        ...(response.writableFinished ? {} : { aborted: true }),
      });
    });
    next();
  };
}
