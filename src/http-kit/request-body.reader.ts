import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { MAX_JSON_NESTING_LEVELS, MAX_REQUEST_BODY_BYTES } from './http.bounds';
import { duplicateMember, nestsTooDeep, prototypeNamedKeys } from './json-body.checks';
import type { BodyProblem } from './request-context';

/** What reading a request's body gave: the parsed JSON, or the problem to raise once the caller is known. */
export type ReadBody = { readonly body: unknown; readonly problem?: undefined } | { readonly body?: undefined; readonly problem: BodyProblem };

/** The encodings a body may arrive in (`Content-Encoding`); `identity` is the bytes as they are. */
const DECOMPRESSORS: Readonly<Record<string, () => NodeJS.ReadWriteStream>> = {
  gzip: createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** Methods whose body is a command: it must be a JSON object. */
const METHODS_WITH_BODY: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

const NOT_JSON: BodyProblem = { status: 415, message: 'the request body must be JSON (Content-Type: application/json)' };
const UNSUPPORTED_ENCODING: BodyProblem = {
  status: 415,
  message: 'the request body’s encoding or charset is not supported (Content-Encoding: gzip, deflate or br)',
};
const BODY_ON_DELETE: BodyProblem = { status: 400, message: 'must be empty: a DELETE takes no body' };
const TOO_LARGE: BodyProblem = { status: 413, message: `the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes` };

/**
 * Reads a request body as the API's commands need it: JSON in UTF-8, possibly compressed, at most
 * MAX_REQUEST_BODY_BYTES once decompressed, nested at most MAX_JSON_NESTING_LEVELS deep (checked on
 * the bytes, before the parse), no member named twice in one object (issue 31, finding 3), an object,
 * with no key named like an `Object.prototype` member.
 * Never rejects: what is wrong comes back as a problem, which the body-error guard raises after the
 * bearer-token guard, so a caller without a valid token learns nothing about its body.
 */
export async function readRequestBody(method: string, headers: IncomingHttpHeaders, payload: Readable): Promise<ReadBody> {
  // A Content-Type with no body (`Content-Length: 0`) is no body at all, as for any other request.
  if (!hasBody(headers)) {
    payload.resume();
    return { body: undefined };
  }
  // A DELETE names everything in its path; a body (of any length or type) is a client's mistake.
  if (method === 'DELETE') {
    payload.resume();
    return { problem: BODY_ON_DELETE };
  }
  const command = METHODS_WITH_BODY.has(method);
  const mediaType = mediaTypeOf(headers['content-type']);
  if (mediaType.type !== 'application/json') {
    payload.resume();
    return command ? { problem: NOT_JSON } : { body: undefined };
  }
  const charset = mediaType.charset;
  const encoding = (headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const decompressor = encoding === 'identity' ? undefined : DECOMPRESSORS[encoding];
  if ((charset !== undefined && charset !== 'utf-8') || (encoding !== 'identity' && decompressor === undefined)) {
    payload.resume();
    return { problem: UNSUPPORTED_ENCODING };
  }
  if (decompressor === undefined && Number(headers['content-length']) > MAX_REQUEST_BODY_BYTES) {
    payload.resume();
    return { problem: TOO_LARGE };
  }
  const bytes = await collect(payload, decompressor?.());
  if (bytes === 'too large') return { problem: TOO_LARGE };
  if (bytes === 'unreadable') {
    return { problem: { status: 400, message: decompressor === undefined ? 'could not be read' : `could not be decompressed as ${encoding}` } };
  }
  return parsed(bytes, command);
}

function parsed(bytes: Buffer, command: boolean): ReadBody {
  if (nestsTooDeep(bytes)) return { problem: { status: 400, message: `is nested deeper than ${MAX_JSON_NESTING_LEVELS} levels` } };
  const text = bytes.toString('utf8');
  // Only an object or an array is a JSON body (a bare string or number is a client's mistake).
  const first = text.trimStart().charAt(0);
  let body: unknown;
  try {
    if (first !== '{' && first !== '[') throw new SyntaxError('not an object or an array');
    body = JSON.parse(text);
  } catch {
    return { problem: { status: 400, message: 'is not valid JSON' } };
  }
  // A member named twice would be read as its last value here and as its first by another reader.
  const duplicate = duplicateMember(text, MAX_JSON_NESTING_LEVELS);
  if (duplicate !== undefined && duplicate !== 'too deep') {
    return { problem: { status: 400, message: 'names a member twice', fields: { [duplicate.path]: ['is named more than once in its object'] } } };
  }
  if (!command) return { body };
  if (Array.isArray(body)) return { problem: { status: 400, message: 'must be a JSON object' } };
  const keys = prototypeNamedKeys(body);
  if (keys.length > 0) {
    return { problem: { status: 400, message: 'has keys named like Object.prototype members', fields: Object.fromEntries(keys.map((key) => [key, ['is not a known field']])) } };
  }
  return { body };
}

/** The body's bytes, decompressed when a decompressor is given, or why there are none. */
function collect(payload: Readable, decompressor: NodeJS.ReadWriteStream | undefined): Promise<Buffer | 'too large' | 'unreadable'> {
  return new Promise((resolve) => {
    const source: NodeJS.ReadableStream = decompressor === undefined ? payload : payload.pipe(decompressor);
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const settle = (outcome: Buffer | 'too large' | 'unreadable'): void => {
      if (settled) return;
      settled = true;
      source.removeListener('data', onData);
      if (outcome !== 'too large' && outcome !== 'unreadable') {
        resolve(outcome);
        return;
      }
      if (decompressor !== undefined) payload.unpipe(decompressor as NodeJS.WritableStream);
      // What the client still sends is read and dropped, so the answer can follow on the same connection.
      payload.resume();
      resolve(outcome);
    };
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length > MAX_REQUEST_BODY_BYTES) settle('too large');
      else chunks.push(chunk);
    };
    source.on('data', onData);
    source.once('end', () => settle(Buffer.concat(chunks, length)));
    source.once('error', () => settle('unreadable'));
    payload.once('error', () => settle('unreadable'));
    // A client that goes away mid-body may close the request without an error.
    payload.once('close', () => {
      if (!payload.readableEnded) settle('unreadable');
    });
  });
}

/** A request carries a body when it is chunked or declares a non-zero length. */
function hasBody(headers: IncomingHttpHeaders): boolean {
  const length = Number(headers['content-length']);
  return headers['transfer-encoding'] !== undefined || (Number.isFinite(length) && length > 0);
}

/** `application/json; charset=UTF-8` → its type and charset, lower-cased. */
function mediaTypeOf(header: string | undefined): { readonly type: string | undefined; readonly charset: string | undefined } {
  if (header === undefined) return { type: undefined, charset: undefined };
  const [type, ...parameters] = header.split(';');
  let charset: string | undefined;
  for (const parameter of parameters) {
    const equals = parameter.indexOf('=');
    if (equals !== -1 && parameter.slice(0, equals).trim().toLowerCase() === 'charset') {
      charset = parameter.slice(equals + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    }
  }
  return { type: type!.trim().toLowerCase(), charset };
}
