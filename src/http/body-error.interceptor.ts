import {
  CallHandler,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { InvalidRequestException } from './http-error.body';
import { contextOf, type LedgerRequest } from './request-context';

/**
 * Raises a body the parser refused (malformed JSON, too large, not JSON). The parser runs before
 * routing, so its error is only noted there and raised here, after the guard: a caller without a
 * valid token learns nothing about its body, only that it is not authenticated (401).
 */
@Injectable()
export class BodyErrorInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const problem = contextOf(context.switchToHttp().getRequest<LedgerRequest>()).bodyError;
    switch (problem?.status) {
      case undefined:
        return next.handle();
      case 413:
        throw new PayloadTooLargeException(problem.message);
      case 415:
        throw new UnsupportedMediaTypeException(problem.message);
      case 400:
        throw problem.fields === undefined ? InvalidRequestException.of('body', problem.message) : new InvalidRequestException(problem.fields);
    }
  }
}
