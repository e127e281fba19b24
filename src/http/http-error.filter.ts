import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { HttpResponse as Response } from './http.types';
import { IdempotencyConflictError, IllegalTransitionError, ValidationError } from '../domain/domain.errors';
import { ConcurrencyError, DeletedStreamError, EventStoreUnavailableError } from '../event-store/event-store.port';
import { InvalidFeatureInputError } from '../features/operation-feature';
import {
  IdempotencyKeyReusedError,
  UnknownInvocationError,
  UnknownOperationError,
  UnknownOrganizationError,
} from '../invocations/invocation-errors';
import { ProjectionFaultedError, ProjectionRunnerStoppedError } from '../projection-runner';
import { ReadModelsUnavailableError } from '../queries/read-model-catch-up';
import { InvalidRequestException, type FieldProblems, type HttpErrorBody, type HttpErrorCode } from './http-error.body';
import { contextOf, type LedgerRequest } from './request-context';

/** The message of every 5xx we did not anticipate: the log line with the same request id says more. */
export const INTERNAL_ERROR_MESSAGE = 'internal error';

interface Rendered {
  readonly status: number;
  readonly message: string;
  readonly fields?: FieldProblems;
  /** When the status alone does not say it (422 idempotency_key_reused). */
  readonly code?: HttpErrorCode;
}

/**
 * Turns every error into one HttpErrorBody. Domain errors are mapped by their class, never by their
 * text: bad input → 400 naming the field; unknown operation or organization → 404; a conflicting
 * change → 409; the read side or the event store not answering → 503. Anything else is a 500 that says only "internal
 * error" and the request id; its details go to the log, never to the client.
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
    if (response.headersSent) {
      // Part of an answer is out already: all we can do is end it.
      response.end();
      return;
    }
    const body = { ...errorBodyOf(rendered.status, rendered.message, rendered.fields, requestId), ...(rendered.code === undefined ? {} : { code: rendered.code }) };
    if (rendered.status === HttpStatus.SERVICE_UNAVAILABLE) response.setHeader('Retry-After', '1');
    response.status(rendered.status).json(body);
  }
}

/** The one error shape (SPEC §10), also for the answers Node gives before Express sees a request. */
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
  if (exception instanceof ValidationError) {
    const fields: FieldProblems = {};
    for (const issue of exception.issues) (fields[issue.field] ??= []).push(issue.message);
    return { status: 400, message: `Invalid request: ${Object.keys(fields).join(', ')}`, fields };
  }
  if (exception instanceof InvalidFeatureInputError) {
    // Its message is "<field>: <problem>"; the field goes in `fields`, the problem beside it.
    const problem = exception.message.startsWith(`${exception.field}: `)
      ? exception.message.slice(exception.field.length + 2)
      : exception.message;
    return { status: 400, message: `Invalid request: ${exception.field}`, fields: { [exception.field]: [problem] } };
  }
  if (exception instanceof UnknownOperationError) return { status: 404, message: `operation "${exception.operationId}" was not found` };
  if (exception instanceof UnknownInvocationError) return { status: 404, message: `invocation "${exception.invocationId}" was not found` };
  if (exception instanceof UnknownOrganizationError) {
    return { status: 404, message: `organization "${exception.organizationId}" was not found` };
  }
  if (exception instanceof IdempotencyKeyReusedError || exception instanceof IdempotencyConflictError) {
    // SPEC §10: the same key with another request is not a conflict of state but a misused key.
    return { status: 422, code: 'idempotency_key_reused', message: exception.message, fields: { idempotencyKey: ['was used for another request'] } };
  }
  if (exception instanceof IllegalTransitionError) return { status: 409, message: exception.message };
  if (exception instanceof ConcurrencyError) {
    // Retries inside the command were exhausted by concurrent writers: the change may be tried again.
    return { status: 409, message: 'a concurrent change to the same record won; try again' };
  }
  if (exception instanceof ProjectionFaultedError || exception instanceof ProjectionRunnerStoppedError) {
    return { status: 503, message: 'the read models are not available' };
  }
  if (exception instanceof EventStoreUnavailableError) {
    // Includes an append whose outcome stayed unknown: the same request (same idempotency key) is safe to repeat.
    return { status: 503, message: 'the event store is not available; repeat the request (with the same idempotency key) later' };
  }
  if (exception instanceof DeletedStreamError) {
    return { status: 409, message: 'a record this change needs was deleted in the event store' };
  }
  if (exception instanceof ReadModelsUnavailableError) return { status: 503, message: `the read models are not available: ${exception.message}` };
  if (exception instanceof HttpException) {
    return { status: exception.getStatus(), message: messageOf(exception) };
  }
  return { status: 500, message: INTERNAL_ERROR_MESSAGE };
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
  if (typeof name !== 'string') return status < 500 ? 'Bad Request' : 'Internal Server Error';
  // HttpStatus.PAYLOAD_TOO_LARGE → "Payload Too Large".
  return name
    .toLowerCase()
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(' ');
}
