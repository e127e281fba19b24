import {
  CanActivate,
  ExecutionContext,
  Injectable,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { InvalidRequestException } from './http-error.body';
import { contextOf, type LedgerRequest } from './request-context';

/**
 * Raises a body the parser refused (malformed JSON, too large, not JSON). The parser runs before
 * routing, so its error is only noted there and raised here, in the guard registered after the
 * bearer-token guard: a caller without a valid token learns nothing about its body, only that it is
 * not authenticated (401).
 *
 * A guard rather than an interceptor: with any interceptor registered, Nest runs every request's
 * handler through an rxjs pipeline and binds it to an async resource, which showed in the service's
 * CPU profile under HTTP load; a guard that only looks at the request costs a function call.
 */
@Injectable()
export class BodyErrorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const problem = contextOf(context.switchToHttp().getRequest<LedgerRequest>()).bodyError;
    switch (problem?.status) {
      case undefined:
        return true;
      case 413:
        throw new PayloadTooLargeException(problem.message);
      case 415:
        throw new UnsupportedMediaTypeException(problem.message);
      case 400:
        throw problem.fields === undefined ? InvalidRequestException.of('body', problem.message) : new InvalidRequestException(problem.fields);
    }
  }
}
