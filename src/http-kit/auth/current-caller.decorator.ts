import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { contextOf, type LedgerRequest } from '../request-context';
import type { Caller } from './caller';

/** The authenticated caller of the route (set by BearerTokenGuard). */
export const CurrentCaller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  const caller = contextOf(context.switchToHttp().getRequest<LedgerRequest>()).caller;
  // Every route but the public ones runs behind the guard, so a missing caller is a wiring bug.
  if (caller === undefined) throw new Error('CurrentCaller used on a route without authentication');
  return caller;
});
