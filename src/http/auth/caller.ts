import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Role } from '../../config/ledger.config';
import { contextOf, type LedgerRequest } from '../request-context';

/** Who is calling, as the bearer token says. The token itself is never kept beside it. */
export interface Caller {
  readonly role: Role;
  /** The one organization an `org_admin` or `org_member` acts for. */
  readonly organizationId?: string;
}

/** The authenticated caller of the route (set by BearerTokenGuard). */
export const CurrentCaller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  const caller = contextOf(context.switchToHttp().getRequest<LedgerRequest>()).caller;
  // Every route but the public ones runs behind the guard, so a missing caller is a wiring bug.
  if (caller === undefined) throw new Error('CurrentCaller used on a route without authentication');
  return caller;
});

/**
 * Whether the caller may see or act on the organization's resources: operators and auditors see every
 * organization (their routes are limited by role), a customer's tokens only their own.
 */
export function mayAccessOrganization(caller: Caller, organizationId: string): boolean {
  if (caller.role === 'system' || caller.role === 'auditor') return true;
  return caller.organizationId === organizationId;
}
