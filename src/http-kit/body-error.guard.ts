import {
  CanActivate,
  ExecutionContext,
  Injectable,
  PayloadTooLargeException,
  UnsupportedMediaTypeException,
} from '@nestjs/common';
import { InvalidRequestException } from './http-error.body';
import { contextOf, type LedgerRequest } from './request-context';
import { repeatedSingleValuedHeader } from './single-valued-headers';

/**
 * Raises what is wrong with a request outside its route's own parameters: a single-valued header
 * sent twice (400 naming it), then a body the parser refused (malformed JSON, too large, not JSON).
 * The parser runs before routing, so its error is only noted there and raised here, in the guard
 * registered after the bearer-token guard: a caller without a valid token learns nothing about its
 * body, only that it is not authenticated (401).
 *
 * A guard rather than an interceptor: with any interceptor registered, Nest runs every request's
 * handler through an rxjs pipeline and binds it to an async resource, which showed in the service's
 * CPU profile under HTTP load; a guard that only looks at the request costs a function call.
 */
@Injectable()
export class BodyErrorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<LedgerRequest>();
    const repeated = repeatedSingleValuedHeader(request);
    if (repeated !== undefined) throw InvalidRequestException.of(repeated, 'must be sent once (it was sent more than once)');
    const problem = contextOf(request).bodyError;
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
