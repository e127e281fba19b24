import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorBodyOf } from './http-error.filter';
import { REQUEST_ID_HEADER } from './request-context';

interface ClientError {
  readonly status: number;
  /** The part of the request at fault, as the error's `fields` names it. */
  readonly field: string;
  readonly problem: string;
}

/** Node's parser errors (llhttp's codes) → what the client is told, by the part of the request at fault. */
function clientErrorOf(code: string | undefined): ClientError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, field: 'headers', problem: 'are too large (the URL included)' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, field: 'request', problem: 'took too long to arrive' };
    case 'HPE_INVALID_METHOD':
      return { status: 400, field: 'method', problem: 'is not an HTTP method' };
    case 'HPE_INVALID_URL':
      return { status: 400, field: 'path', problem: 'is not a valid request target' };
    case 'HPE_INVALID_VERSION':
      return { status: 400, field: 'version', problem: 'is not HTTP/1.0 or HTTP/1.1' };
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_INVALID_EOF_STATE':
      return { status: 400, field: 'body', problem: 'is not valid chunked encoding' };
    case 'HPE_INVALID_HEADER_TOKEN':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_CR_EXPECTED':
    case 'HPE_LF_EXPECTED':
      return { status: 400, field: 'headers', problem: 'are not valid HTTP (a control character such as NUL in a value, a malformed name or length)' };
    default:
      return { status: 400, field: 'request', problem: 'is not valid HTTP' };
  }
}

/**
 * Answers a request Node could not parse (a NUL byte in a header value, headers past its 16 KiB, a
 * malformed request line, one that took too long: docs/http.md "Errors") in the API's one error shape,
 * with its request id, on every listener and every path (`/health/*` and `/metrics` too), so a client
 * parses every error the same way. Fastify's `clientErrorHandler`, or a node:http server's `clientError`.
 */
export function answerClientErrorInTheErrorShape(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection, or one already answered, has nobody left to read an answer.
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  const { status, field, problem } = clientErrorOf(error.code);
  const requestId = randomUUID();
  const body = JSON.stringify(errorBodyOf(status, `the request’s ${field} ${problem}`, { [field]: [problem] }, requestId));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Bad Request'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\n${REQUEST_ID_HEADER}: ${requestId}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
