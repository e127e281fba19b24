import { Logger } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { EMPTY_PATH_SEGMENT, MALFORMED_PERCENT_ENCODING } from './dto/field-rules';
import { answerClientErrorInTheErrorShape } from './client-error.answer';
import { HttpErrorFilter } from './http-error.filter';
import { MAX_REQUEST_ARRIVAL_MS, MAX_REQUEST_BODY_BYTES } from './http.bounds';
import { setupOpenApi } from './openapi';
import { readsOwnBody } from './reads-own-body.decorator';
import { readRequestBody } from './request-body.reader';
import { GATEWAY_ROUTE_PREFIX } from './http-route-prefix';
import { contextOf, startRequestContext, type LedgerRequest } from './request-context';

export { MAX_REQUEST_ARRIVAL_MS, MAX_REQUEST_BODY_BYTES };

/**
 * Longest path parameter the router matches, in characters: as long as a request line may be, so an
 * over-long id reaches its validation (400 naming the field) instead of matching no route (404).
 */
const MAX_ROUTED_PARAMETER_CHARS = 16 * 1024;

/**
 * The platform the standalone service runs on: Fastify, whose request handling costs about half of
 * Express's per request (bench/README.md). Its router matches paths as Express's did (trailing slash
 * and case ignored); bodies are read by readRequestBody, not by Fastify's parsers.
 */
export function ledgerHttpAdapter(): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: MAX_REQUEST_BODY_BYTES,
    requestTimeout: MAX_REQUEST_ARRIVAL_MS,
    rewriteUrl: rewriteForRouting,
    clientErrorHandler: answerClientErrorInTheErrorShape,
    // No Nest middleware runs on the service: every step below is a Fastify hook.
    skipMiddie: true,
    routerOptions: { ignoreTrailingSlash: true, caseSensitive: false, maxParamLength: MAX_ROUTED_PARAMETER_CHARS },
  });
}

/**
 * The HTTP setup that lives outside Nest's module graph, shared by main.ts and the tests so both
 * serve the same application: request ids and the one-line request log, the bounded JSON body
 * reader and its errors, the error shape for routes no controller answers, and OpenAPI at /docs.
 * Call it on an application made with ledgerHttpAdapter() and `bodyParser: false`, before
 * `init()`/`listen()`. (The guards, pipe and filter of the ledger's own routes are bound to its
 * controllers by @LedgerApi, and work on any platform.)
 */
export function configureHttp(app: NestFastifyApplication): void {
  const fastify = app.getHttpAdapter().getInstance();
  const logger = new Logger('Http');
  // Declared, so every request object has the same shape from the start.
  fastify.decorateRequest('ledger', undefined);
  fastify.addHook('onRequest', (request, reply, done) => {
    startRequestContext(logger, request as unknown as LedgerRequest, request.raw, reply.raw);
    done();
  });
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (request, payload, done) => {
    // The gateway's routes forward the body's bytes as they came, and read them themselves.
    if (readsOwnBody(request)) {
      done(null, undefined);
      return;
    }
    readRequestBody(request.method, request.headers, payload).then(
      (read) => {
        if (read.problem !== undefined) contextOf(request as unknown as LedgerRequest).bodyError = read.problem;
        done(null, read.body);
      },
      (error: Error) => done(error, undefined),
    );
  });
  // The ledger's controllers carry their own filter (@LedgerApi); this one gives everything else the
  // standalone service answers (an unknown route's 404, a wrong method) the same error shape.
  app.useGlobalFilters(new HttpErrorFilter());
  setupOpenApi(app);
}

/** The gateway's routes, which answer in Anthropic's shape and keep their own paths as sent. */
const GATEWAY_PATH = new RegExp(`^/${GATEWAY_ROUTE_PREFIX}(/|$)`, 'i');

/**
 * What the router matches: the path with malformed percent-encoding read as U+FFFD, then empty
 * segments filled in when that alone lets a route match. `this` is the Fastify instance.
 */
function rewriteForRouting(this: FastifyInstance, request: IncomingMessage): string {
  return fillEmptySegments(this, request.method ?? 'GET', readMalformedPercentEncodingAsReplacement(request));
}

/**
 * An empty path segment matches no route (`PUT /v1/operations//publications`; `GET /v1/invocations/`,
 * whose trailing slash is ignored and whose `GET /v1/invocations` does not exist), so its answer would
 * be an unknown route's 404. When the path matches no route as sent, but does with a parameter in each
 * empty segment (a trailing one included), each is read as EMPTY_PATH_SEGMENT: the route matches and
 * its parameter's check answers 400 naming it (docs/http.md "Requests").
 */
function fillEmptySegments(fastify: FastifyInstance, method: string, url: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  if (path.length <= 1 || (!path.endsWith('/') && !path.includes('//')) || GATEWAY_PATH.test(path)) return url;
  const segments = path.split('/');
  const fill = (upTo: number): string => segments.map((segment, index) => (segment === '' && index > 0 && index < upTo ? EMPTY_SEGMENT_TEXT : segment)).join('/');
  // The router would give an interior empty segment to its parameter, then answer 404: fill those always.
  const interior = fill(segments.length - 1);
  const matches = (candidate: string): boolean => fastify.findRoute({ method: method as 'GET', url: candidate }) !== null;
  const routed = matches(interior) ? interior : matches(fill(segments.length)) ? fill(segments.length) : undefined;
  if (routed === undefined || routed === path) return url;
  return routed + (queryAt === -1 ? '' : url.slice(queryAt));
}

const EMPTY_SEGMENT_TEXT = encodeURIComponent(EMPTY_PATH_SEGMENT);

/**
 * A router refuses a path whose percent-encoding is malformed (`%E0%A4%A`) before any route matches,
 * so its answer could not name the field. Each such segment is read as U+FFFD instead, the route
 * matches, and the id check names the path parameter (400, `fields.organizationId`).
 */
function readMalformedPercentEncodingAsReplacement(request: IncomingMessage): string {
  const url = request.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  if (!path.includes('%')) return url;
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
  return changed ? segments.join('/') + (queryAt === -1 ? '' : url.slice(queryAt)) : url;
}

