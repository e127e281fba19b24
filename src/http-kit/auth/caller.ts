import type { Role } from '../../config/ledger.config';

/** Who is calling, as the bearer token says. The token itself is never kept beside it. */
export interface Caller {
  readonly role: Role;
  /** The one organization an `org_admin` or `org_member` acts for. */
  readonly organizationId?: string;
}

/**
 * Whether the caller may see or act on the organization's resources: operators and auditors see every
 * organization (their routes are limited by role), a customer's tokens only their own.
 */
export function mayAccessOrganization(caller: Caller, organizationId: string): boolean {
  if (caller.role === 'system' || caller.role === 'auditor') return true;
  return caller.organizationId === organizationId;
}
