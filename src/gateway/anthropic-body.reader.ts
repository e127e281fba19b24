/**
 * Reads the raw bytes of a gateway request's body, which go upstream unchanged. The service's own
 * body reader leaves these routes alone (they are marked @ReadsOwnBody); an embedding application's
 * platform parser may have read them already, and then only its `rawBody` copy (Nest's `rawBody: true`)
 * still has the bytes. See docs/gateway.md.
 */
import type { IncomingMessage } from 'node:http';
import { duplicateMember } from '../http-kit/json-body.checks';

/**
 * Largest request body the gateway accepts, in bytes: Anthropic's own bound on a Messages request
 * (32 MB) with room to spare, so Anthropic, not the gateway, refuses what lies between. Larger → 413.
 */
export const MAX_GATEWAY_BODY_BYTES = 32 * 1024 * 1024;

/**
 * Deepest nesting of objects and arrays a gateway body may have, in levels: far deeper than any
 * Messages request nests, and what bounds the memory the one reading of a body keeps per level.
 */
export const MAX_GATEWAY_JSON_NESTING_LEVELS = 1_000;

export interface GatewayBodyProblem {
  readonly status: 400 | 413 | 415 | 500;
  readonly message: string;
}

export type GatewayBody = { readonly bytes: Buffer; readonly problem?: undefined } | { readonly bytes?: undefined; readonly problem: GatewayBodyProblem };

const TOO_LARGE: GatewayBody = { problem: { status: 413, message: `Request exceeds the maximum allowed number of bytes (${MAX_GATEWAY_BODY_BYTES}).` } };
const NOT_JSON: GatewayBody = { problem: { status: 415, message: 'The request body must be JSON (content-type: application/json).' } };
const ENCODED: GatewayBody = { problem: { status: 415, message: 'A content-encoding other than identity is not supported.' } };
const UNREADABLE: GatewayBody = { problem: { status: 400, message: 'The request body could not be read.' } };
const EMPTY = Buffer.alloc(0);
/**
 * An embedding application whose body parser kept no raw copy: forwarding a re-serialised body would
 * not be forwarding the caller's bytes, so the call is not made.
 */
const PARSED_WITHOUT_RAW: GatewayBody = {
  problem: { status: 500, message: 'The gateway cannot read this request body: the application parsed it without keeping its bytes (create it with rawBody: true).' },
};

/** The platform's request as the gateway reads it (Fastify's and Express's both fit). */
export interface GatewayRequest {
  readonly headers: IncomingMessage['headers'];
  readonly body?: unknown;
  readonly rawBody?: unknown;
}

/** The body's bytes, or why there are none; `incoming` is Node's own request under the platform's. */
export function readGatewayBody(request: GatewayRequest, incoming: IncomingMessage): Promise<GatewayBody> | GatewayBody {
  const { headers } = request;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') return drained(incoming, ENCODED);
  if (!isJson(headers['content-type'])) return drained(incoming, NOT_JSON);
  if (Number(headers['content-length']) > MAX_GATEWAY_BODY_BYTES) return drained(incoming, TOO_LARGE);
  if (Buffer.isBuffer(request.rawBody)) return request.rawBody.length > MAX_GATEWAY_BODY_BYTES ? TOO_LARGE : { bytes: request.rawBody };
  if (incoming.readableDidRead || incoming.readableEnded) return request.body === undefined ? { bytes: EMPTY } : PARSED_WITHOUT_RAW;
  return collect(incoming);
}

/** What the client still sends is read and dropped, so the answer can follow on the same connection. */
function drained(incoming: IncomingMessage, answer: GatewayBody): GatewayBody {
  if (!incoming.readableEnded) incoming.resume();
  return answer;
}

function collect(incoming: IncomingMessage): Promise<GatewayBody> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let done = false;
    const finish = (answer: GatewayBody): void => {
      if (done) return;
      done = true;
      incoming.removeListener('data', onData);
      resolve(answer);
    };
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length <= MAX_GATEWAY_BODY_BYTES) chunks.push(chunk);
      else {
        chunks.length = 0;
        finish(TOO_LARGE);
        incoming.resume();
      }
    };
    incoming.on('data', onData);
    incoming.once('end', () => finish({ bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length) }));
    incoming.once('error', () => finish(UNREADABLE));
    // A client that goes away mid-body may close the request without an error.
    incoming.once('close', () => {
      if (!incoming.readableEnded) finish(UNREADABLE);
    });
  });
}

/** `application/json`, with no charset or UTF-8's. */
function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semicolon = contentType.indexOf(';');
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  if (type !== 'application/json') return false;
  if (semicolon === -1) return true;
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType.slice(semicolon));
  return charset === null || charset[1]!.toLowerCase() === 'utf-8';
}

/**
 * The one reading of a gateway body's JSON: parsed once, and refused when it names a member twice in
 * one object at any depth (names compared unescaped, issue 31, finding 3). JSON.parse keeps the last
 * of two members and the upstream's parser may keep the first: a body read one way and held, then
 * read the other way upstream, would cost what was not held. Everything the gateway reads of a body
 * (the facts the hold is sized by) reads this value, and the bytes forwarded are the bytes it read.
 */
export function readGatewayJson(bytes: Buffer): { readonly value: unknown; readonly problem?: undefined } | { readonly value?: undefined; readonly problem: string } {
  const text = bytes.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'The request body is not valid JSON.' };
  }
  const duplicate = duplicateMember(text, MAX_GATEWAY_JSON_NESTING_LEVELS);
  if (duplicate === 'too deep') return { problem: `The request body is nested deeper than ${MAX_GATEWAY_JSON_NESTING_LEVELS} levels.` };
  if (duplicate !== undefined) return { problem: `${duplicate.path}: the member ${JSON.stringify(duplicate.name)} is named more than once in its object; name each member once` };
  return { value };
}
