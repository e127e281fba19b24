import type { IncomingHttpHeaders, ServerResponse } from 'node:http';

/**
 * The HTTP API runs on whichever Nest platform the application uses: the standalone service serves
 * it on Fastify, an embedding product mounts it on its own application (Express or Fastify). These are the
 * parts of a request and a response its routes, guards and filter use, which Express's `Request` and
 * `Response` and Fastify's `FastifyRequest` and `FastifyReply` all have.
 */
export interface HttpRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body?: unknown;
}

export interface HttpResponse {
  status(statusCode: number): unknown;
  header(name: string, value: string): unknown;
  /** Sends a body already serialised (both platforms send a string as it is). */
  send(body: string): unknown;
}

/** Fastify's reply wraps Node's response (`raw`); Express's response is one. */
interface WrappedResponse {
  readonly raw: ServerResponse;
  hijack(): unknown;
}

function isWrapped(response: HttpResponse): response is HttpResponse & WrappedResponse {
  return 'raw' in response && typeof (response as Partial<WrappedResponse>).hijack === 'function';
}

/** Node's response under the platform's, for what only Node's has (`headersSent`, `end`). */
export function nodeResponseOf(response: HttpResponse): ServerResponse {
  return isWrapped(response) ? response.raw : (response as unknown as ServerResponse);
}

/**
 * Node's response for a route that writes it itself (an event stream): Fastify is told to leave the
 * reply alone, so it neither sends one of its own nor reports a reply sent twice.
 */
export function takeOverResponse(response: HttpResponse): ServerResponse {
  if (isWrapped(response)) {
    response.hijack();
    return response.raw;
  }
  return response as unknown as ServerResponse;
}

/** One header's value as a string: a repeated header (which Node keeps as a list) is not one value. */
export function headerOf(request: HttpRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}
