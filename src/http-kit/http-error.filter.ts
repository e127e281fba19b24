import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { STATUS_CODES } from 'node:http';
import { nodeResponseOf, type HttpResponse as Response } from './http.types';
import type { DomainErrorCode, FieldIssue } from '../domain/domain.errors';
import type { ConcurrencyError, DeletedStreamError, EventStoreUnavailableError } from '../event-store/event-store.port';
import type { ProjectionRunnerStoppedError } from '../projection-runner/projection-runner.errors';
import { InvalidRequestException, type FieldProblems, type HttpErrorBody, type HttpErrorCode } from './http-error.body';
import { contextOf, type LedgerRequest } from './request-context';

/** The message of every 5xx we did not anticipate: the log line with the same request id says more. */
export const INTERNAL_ERROR_MESSAGE = 'internal error';

interface Rendered {
  readonly status: number;
  readonly message: string;
  readonly fields?: FieldProblems;
  readonly code?: HttpErrorCode;
}

/** The codes of the store's and the read side's errors, beside the domain's own. */
export type InfrastructureErrorCode =
  | ConcurrencyError['code']
  | DeletedStreamError['code']
  | EventStoreUnavailableError['code']
  // The read side's own errors (ReadModelsUnavailableError among them) share the runner's code.
  | ProjectionRunnerStoppedError['code'];

interface StatusOfCode {
  readonly status: number;
  /** When the status alone does not say it (422 idempotency_key_reused). */
  readonly code?: HttpErrorCode;
  /** What the client reads instead of the error's own message. */
  readonly message?: (error: Error) => string;
}

/**
 * Every error code the ledger throws → the HTTP answer it becomes. Keyed by the error's `code`, never
 * by its class or text; a `Record` over the codes, so a new code without a status does not compile.
 */
export const HTTP_STATUS_OF_ERROR_CODE: Readonly<Record<DomainErrorCode | InfrastructureErrorCode, StatusOfCode>> = {
  validation_failed: { status: 400 },
  invalid_feature_input: { status: 400 },
  unknown_operation: { status: 404 },
  unknown_invocation: { status: 404 },
  unknown_organization: { status: 404 },
  unknown_gateway_key: { status: 404 },
  unknown_gateway_model: { status: 404 },
  unknown_gateway_team: { status: 404 },
  illegal_transition: { status: 409 },
  admission_refused: { status: 409 },
  // The same key with another request is not a conflict of state but a misused key.
  idempotency_conflict: { status: 422, code: 'idempotency_key_reused' },
  idempotency_key_reused: { status: 422, code: 'idempotency_key_reused' },
  // The key's first request still runs (in another process) past the repeat's wait: repeat it later.
  keyed_request_in_progress: { status: 409 },
  // Retries inside the command were exhausted by concurrent writers: the change may be tried again.
  concurrency_conflict: { status: 409, message: () => 'a concurrent change to the same record won; try again' },
  stream_deleted: { status: 409, message: () => 'a record this change needs was deleted in the event store' },
  // Includes an append whose outcome stayed unknown: the same request (same idempotency key) is safe to repeat.
  event_store_unavailable: {
    status: 503,
    message: () => 'the event store is not available; repeat the request (with the same idempotency key) later',
  },
  read_models_unavailable: { status: 503, message: (error) => `the read models are not available: ${error.message}` },
};

/**
 * Turns every error into one HttpErrorBody. The ledger's errors are mapped by their `code` through
 * HTTP_STATUS_OF_ERROR_CODE: bad input → 400 naming the field; unknown operation, invocation or
 * organization → 404; a conflicting change → 409; a reused idempotency key → 422; the read side or the
 * event store not answering → 503. Anything else is a 500 that says only "internal error" and the
 * request id; its details go to the log, never to the client.
 */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpErrors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<LedgerRequest>();
    const response = http.getResponse<Response>();
    const { requestId } = contextOf(request);
    let rendered = render(exception);
    if (rendered.status >= 500 && rendered.status !== HttpStatus.SERVICE_UNAVAILABLE) {
      this.logger.error({
        message: 'request failed',
        requestId,
        error: exception instanceof Error ? exception.name : typeof exception,
        detail: exception instanceof Error ? exception.message : undefined,
        stack: exception instanceof Error ? exception.stack : undefined,
      });
      rendered = { status: rendered.status, message: INTERNAL_ERROR_MESSAGE };
    } else if (rendered.status === HttpStatus.SERVICE_UNAVAILABLE) {
      this.logger.warn({ message: 'read side unavailable', requestId, detail: rendered.message });
    }
    const nodeResponse = nodeResponseOf(response);
    if (nodeResponse.headersSent) {
      // Part of an answer is out already: all we can do is end it.
      nodeResponse.end();
      return;
    }
    const body = { ...errorBodyOf(rendered.status, rendered.message, rendered.fields, requestId), ...(rendered.code === undefined ? {} : { code: rendered.code }) };
    if (rendered.status === HttpStatus.SERVICE_UNAVAILABLE) response.header('Retry-After', '1');
    response.header('Content-Type', 'application/json; charset=utf-8');
    response.status(rendered.status);
    response.send(JSON.stringify(body));
  }
}

/**
 * The one error shape (docs/http.md "Errors"), also for the answers Node gives before the platform sees
 * a request.
 */
export function errorBodyOf(status: number, message: string, fields: FieldProblems | undefined, requestId: string): HttpErrorBody {
  return {
    statusCode: status,
    error: reasonPhrase(status),
    code: codeFor(status),
    message,
    ...(fields === undefined ? {} : { fields }),
    requestId,
  };
}

function render(exception: unknown): Rendered {
  if (exception instanceof InvalidRequestException) {
    return { status: 400, message: exception.message, fields: { ...exception.fields } };
  }
  const mapped = mappedErrorOf(exception);
  if (mapped !== undefined) {
    const { error, mapping } = mapped;
    const fields = fieldsOf(error.issues);
    const message =
      mapping.message?.(error) ??
      (mapping.status === 400 && fields !== undefined ? `Invalid request: ${Object.keys(fields).join(', ')}` : error.message);
    return { status: mapping.status, message, ...(fields === undefined ? {} : { fields }), ...(mapping.code === undefined ? {} : { code: mapping.code }) };
  }
  if (exception instanceof HttpException) {
    return { status: exception.getStatus(), message: messageOf(exception) };
  }
  return { status: 500, message: INTERNAL_ERROR_MESSAGE };
}

interface CodedError extends Error {
  readonly code: string;
  readonly issues?: readonly FieldIssue[];
}

function mappedErrorOf(exception: unknown): { error: CodedError; mapping: StatusOfCode } | undefined {
  if (!(exception instanceof Error)) return undefined;
  const code = (exception as { code?: unknown }).code;
  // Own keys only: a Node error's code (ENOENT, SQLITE_BUSY…) is not one of ours and stays a 500.
  if (typeof code !== 'string' || !Object.hasOwn(HTTP_STATUS_OF_ERROR_CODE, code)) return undefined;
  return { error: exception as CodedError, mapping: HTTP_STATUS_OF_ERROR_CODE[code as keyof typeof HTTP_STATUS_OF_ERROR_CODE] };
}

function fieldsOf(issues: readonly FieldIssue[] | undefined): FieldProblems | undefined {
  if (!Array.isArray(issues) || issues.length === 0) return undefined;
  const fields: FieldProblems = {};
  for (const issue of issues) (fields[issue.field] ??= []).push(issue.message);
  return fields;
}

function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.map(String).join('; ');
  return exception.message;
}

const CODES: ReadonlyMap<number, HttpErrorCode> = new Map([
  [400, 'invalid_request'],
  [401, 'unauthorized'],
  [403, 'forbidden'],
  [404, 'not_found'],
  [409, 'conflict'],
  [413, 'payload_too_large'],
  [415, 'unsupported_media_type'],
  [431, 'headers_too_large'],
  [503, 'unavailable'],
]);

function codeFor(status: number): HttpErrorCode {
  const code = CODES.get(status);
  if (code !== undefined) return code;
  // Other 4xx (405, 408…) are the client's; other 5xx are ours.
  return status < 500 ? 'invalid_request' : 'internal_error';
}

function reasonPhrase(status: number): string {
  const name = HttpStatus[status];
  // Nest's enum lacks a few (431 Request Header Fields Too Large): Node's table has them.
  if (typeof name !== 'string') return STATUS_CODES[status] ?? (status < 500 ? 'Bad Request' : 'Internal Server Error');
  // HttpStatus.PAYLOAD_TOO_LARGE → "Payload Too Large".
  return name
    .toLowerCase()
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(' ');
}
