import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { takeOverResponse, type HttpResponse } from '../http-kit/http.types';
import { contextOf, type LedgerRequest } from '../http-kit/request-context';
import { anthropicErrorTypeOf, sendAnthropicError } from './anthropic-error.body';

/** The ledger's errors that say "not now": the event store or the read models not answering, a lost race. */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set(['event_store_unavailable', 'read_models_unavailable', 'concurrency_conflict']);

/**
 * Every error a gateway route throws leaves in Anthropic's error shape, with the gateway's request id:
 * a client of the gateway is an Anthropic client and parses no other shape. The ledger not answering
 * is a 503 (`retry-after: 1`; Anthropic's SDKs retry it); anything unforeseen is a 500 whose message
 * says nothing more, its details in the log line with the same request id.
 */
@Catch()
export class AnthropicErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('Gateway');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const { requestId } = contextOf(http.getRequest<LedgerRequest>());
    const response = takeOverResponse(http.getResponse<HttpResponse>());
    if (exception instanceof HttpException && exception.getStatus() < 500) {
      const status = exception.getStatus();
      sendAnthropicError(response, status, anthropicErrorTypeOf(status), exception.message, requestId);
      return;
    }
    const code = exception instanceof Error ? (exception as { code?: unknown }).code : undefined;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) {
      this.logger.warn({ message: 'gateway call refused: the ledger is not available', requestId, code });
      sendAnthropicError(response, 503, 'api_error', 'The ledger is not available; retry later.', requestId, { retryAfterSeconds: 1 });
      return;
    }
    this.logger.error({
      message: 'gateway request failed',
      requestId,
      error: exception instanceof Error ? exception.name : typeof exception,
      detail: exception instanceof Error ? exception.message : undefined,
      stack: exception instanceof Error ? exception.stack : undefined,
    });
    sendAnthropicError(response, 500, 'api_error', 'Internal server error', requestId);
  }
}
