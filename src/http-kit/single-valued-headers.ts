import type { IncomingMessage } from 'node:http';
import type { HttpRequest } from './http.types';

/**
 * Headers the API reads as one value, by their lower-case name → the name a refusal gives. Node joins a
 * repeated `Idempotency-Key` into `a, b` and keeps only the first `Authorization` or `Content-Type`;
 * either way the request would be read as something its sender did not write, so it is refused
 * (docs/http.md "Requests"). `Prefer` and `Accept` are lists by definition, and stay joined.
 */
const SINGLE_VALUED_HEADERS: ReadonlyMap<string, string> = new Map([
  ['authorization', 'Authorization'],
  ['idempotency-key', 'Idempotency-Key'],
  ['last-event-id', 'Last-Event-ID'],
  ['content-type', 'Content-Type'],
]);

/** The first single-valued header the request carries more than once, by the name a refusal gives; else undefined. */
export function repeatedSingleValuedHeader(request: HttpRequest): string | undefined {
  // Fastify's request wraps Node's (`raw`); Express's request is Node's.
  const rawHeaders = (request as { raw?: IncomingMessage }).raw?.rawHeaders ?? (request as Partial<IncomingMessage>).rawHeaders ?? [];
  let seen: Set<string> | undefined;
  // rawHeaders alternates names and values, as the client sent them.
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index]!.toLowerCase();
    if (!SINGLE_VALUED_HEADERS.has(name)) continue;
    seen ??= new Set();
    if (seen.has(name)) return SINGLE_VALUED_HEADERS.get(name);
    seen.add(name);
  }
  return undefined;
}
