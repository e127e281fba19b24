import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { MALFORMED_PERCENT_ENCODING } from './dto/field-rules';
import { errorBodyOf, HttpErrorFilter } from './http-error.filter';
import { MAX_JSON_NESTING_LEVELS, MAX_REQUEST_BODY_BYTES } from './http.bounds';
import type { HttpRequest, HttpResponse as Response, NextFunction } from './http.types';
import { nestsTooDeep, prototypeNamedKeys } from './json-body.checks';
import { setupOpenApi } from './openapi';
import { contextOf, requestContextMiddleware, type BodyProblem, type LedgerRequest } from './request-context';

export { MAX_REQUEST_BODY_BYTES };

// body-parser's error types (`entity.parse.failed`, `entity.too.large`, `encoding.unsupported`…).
const BODY_PARSER_ERROR_TYPE = /^(entity|encoding|charset|request)\./;
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * The HTTP setup that lives outside Nest's module graph, shared by main.ts and the tests so both
 * serve the same application: request ids and the one-line request log, the bounded JSON body
 * parser and its errors, the error shape for routes no controller answers, and OpenAPI at /docs.
 * Call it before `init()`/`listen()`. (The guards, pipe and filter of the ledger's own routes are
 * bound to its controllers by @LedgerApi.)
 */
export function configureHttp(app: NestExpressApplication): void {
  app.disable('x-powered-by');
  answerClientErrorsInTheErrorShape(app.getHttpServer() as Server);
  app.use(requestContextMiddleware(new Logger('Http')));
  app.use(markMalformedPercentEncoding);
  // Registered before init, so Nest does not add its own 100 KB JSON parser after it.
  app.useBodyParser('json', { limit: MAX_REQUEST_BODY_BYTES, verify: refuseDeepNesting });
  app.use(noteBodyParserError);
  app.use(requireJsonObjectBody);
  // The ledger's controllers carry their own filter (@LedgerApi); this one gives everything else the
  // standalone service answers (an unknown route's 404, a wrong method) the same error shape.
  app.useGlobalFilters(new HttpErrorFilter());
  setupOpenApi(app);
}

/**
 * Node answers a request it cannot parse (headers past its 16 KiB limit: 431; a malformed request
 * line: 400) itself, with no body. A `clientError` listener replaces that answer with the API's one
 * error shape, so a client parses every error the same way.
 */
function answerClientErrorsInTheErrorShape(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A reset connection, or one already answered, has nobody left to read an answer.
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const message =
      status === 431 ? 'the request’s headers (the URL included) are too large' : status === 408 ? 'the request took too long to arrive' : 'the request is not valid HTTP';
    const body = JSON.stringify(errorBodyOf(status, message, undefined, randomUUID()));
    socket.end(
      `HTTP/1.1 ${status} ${errorBodyOf(status, '', undefined, '').error}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

/**
 * Express refuses a path whose percent-encoding is malformed (`%E0%A4%A`) before any route matches,
 * so its answer could not name the field. Each such segment is read as U+FFFD instead, the route
 * matches, and the id check names the path parameter (400, `fields.organizationId`).
 */
function markMalformedPercentEncoding(request: HttpRequest, _response: Response, next: NextFunction): void {
  const queryAt = request.url.indexOf('?');
  const path = queryAt === -1 ? request.url : request.url.slice(0, queryAt);
  if (path.includes('%')) {
    let changed = false;
    const segments = path.split('/').map((segment) => {
      try {
        decodeURIComponent(segment);
        return segment;
      } catch {
        changed = true;
        return encodeURIComponent(MALFORMED_PERCENT_ENCODING);
      }
    });
    if (changed) request.url = segments.join('/') + (queryAt === -1 ? '' : request.url.slice(queryAt));
  }
  next();
}

/** body-parser's `verify`: runs on the raw (decompressed) bytes, before JSON.parse and any walk. */
function refuseDeepNesting(_request: unknown, _response: unknown, body: Buffer): void {
  if (nestsTooDeep(body)) {
    throw Object.assign(new Error('nested too deep'), { status: 400, type: 'entity.too.deep' });
  }
}

interface BodyParserError {
  readonly type?: unknown;
  readonly status?: unknown;
}

/** Express error middleware: keeps a body-parser error for BodyErrorGuard (raised after auth). */
function noteBodyParserError(error: unknown, request: LedgerRequest, _response: Response, next: NextFunction): void {
  const { type, status } = (error ?? {}) as BodyParserError;
  const encoding = request.headers['content-encoding'];
  // A body that fails to decompress reaches here as the decompressor's own error with status 400.
  const undecompressable = status === 400 && encoding !== undefined && encoding.toLowerCase() !== 'identity';
  if (!undecompressable && (typeof type !== 'string' || !BODY_PARSER_ERROR_TYPE.test(type))) {
    next(error);
    return;
  }
  let problem: BodyProblem;
  if (status === 413) problem = { status: 413, message: `the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes` };
  else if (status === 415) problem = { status: 415, message: 'the request body’s encoding or charset is not supported (Content-Encoding: gzip, deflate or br)' };
  else if (type === 'entity.too.deep') problem = { status: 400, message: `is nested deeper than ${MAX_JSON_NESTING_LEVELS} levels` };
  else if (type === 'entity.parse.failed') problem = { status: 400, message: 'is not valid JSON' };
  else if (undecompressable) problem = { status: 400, message: `could not be decompressed as ${encoding}` };
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
    } else {
      const keys = prototypeNamedKeys(request.body);
      if (keys.length > 0) {
        context.bodyError = { status: 400, message: 'has keys named like Object.prototype members', fields: Object.fromEntries(keys.map((key) => [key, ['is not a known field']])) };
      }
    }
  }
  next();
}

/** A request carries a body when it is chunked or declares a non-zero length. */
function hasBody(request: LedgerRequest): boolean {
  const length = Number(request.headers['content-length']);
  return request.headers['transfer-encoding'] !== undefined || (Number.isFinite(length) && length > 0);
}
