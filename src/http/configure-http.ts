import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { MAX_REQUEST_BODY_BYTES } from './http.bounds';
import type { HttpResponse as Response, NextFunction } from './http.types';
import { setupOpenApi } from './openapi';
import { contextOf, requestContextMiddleware, type BodyProblem, type LedgerRequest } from './request-context';

export { MAX_REQUEST_BODY_BYTES };

// body-parser's error types (`entity.parse.failed`, `entity.too.large`, `encoding.unsupported`…).
const BODY_PARSER_ERROR_TYPE = /^(entity|encoding|charset|request)\./;
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * The HTTP setup that lives outside Nest's module graph, shared by main.ts and the tests so both
 * serve the same application: request ids and the one-line request log, the bounded JSON body
 * parser and its errors, and OpenAPI at /docs. Call it before `init()`/`listen()`. (The guard, pipe,
 * interceptor and filter are registered by HttpModule itself.)
 */
export function configureHttp(app: NestExpressApplication): void {
  app.disable('x-powered-by');
  app.use(requestContextMiddleware(new Logger('Http')));
  // Registered before init, so Nest does not add its own 100 KB JSON parser after it.
  app.useBodyParser('json', { limit: MAX_REQUEST_BODY_BYTES });
  app.use(noteBodyParserError);
  app.use(requireJsonObjectBody);
  setupOpenApi(app);
}

interface BodyParserError {
  readonly type?: unknown;
  readonly status?: unknown;
}

/** Express error middleware: keeps a body-parser error for BodyErrorInterceptor (raised after auth). */
function noteBodyParserError(error: unknown, request: LedgerRequest, _response: Response, next: NextFunction): void {
  const { type, status } = (error ?? {}) as BodyParserError;
  if (typeof type !== 'string' || !BODY_PARSER_ERROR_TYPE.test(type)) {
    next(error);
    return;
  }
  let problem: BodyProblem;
  if (status === 413) problem = { status: 413, message: `the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes` };
  else if (status === 415) problem = { status: 415, message: 'the request body’s encoding or charset is not supported' };
  else if (type === 'entity.parse.failed') problem = { status: 400, message: 'is not valid JSON' };
  else problem = { status: 400, message: 'could not be read' };
  contextOf(request).bodyError = problem;
  next();
}

/**
 * A body must be a JSON object: any other media type is 415 rather than a confusing list of missing
 * fields, and a JSON array (which the parser accepts) is a 400 naming the body.
 */
function requireJsonObjectBody(request: LedgerRequest & { body?: unknown }, _response: Response, next: NextFunction): void {
  const context = contextOf(request);
  if (context.bodyError === undefined && METHODS_WITH_BODY.has(request.method) && hasBody(request)) {
    if (request.is('application/json') === false) {
      context.bodyError = { status: 415, message: 'the request body must be JSON (Content-Type: application/json)' };
    } else if (Array.isArray(request.body)) {
      context.bodyError = { status: 400, message: 'must be a JSON object' };
    }
  }
  next();
}

/** A request carries a body when it is chunked or declares a non-zero length. */
function hasBody(request: LedgerRequest): boolean {
  const length = Number(request.headers['content-length']);
  return request.headers['transfer-encoding'] !== undefined || (Number.isFinite(length) && length > 0);
}
