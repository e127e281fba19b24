import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ROLES, type Role } from '../../config/ledger.config';
import { ID_PATTERN, MAX_ID_CHARS } from '../../domain/field-checks';

/** Result of `GET /v1/me`: what the bearer token grants, never the token itself. */
export class MeDto {
  @ApiProperty({ enum: ROLES, description: 'The token’s role: `system` (operator), `auditor`, `org_admin` or `org_member`.' })
  readonly role!: Role;

  @ApiPropertyOptional({
    pattern: ID_PATTERN.source,
    maxLength: MAX_ID_CHARS,
    example: 'demo-org',
    description: 'The one organization an `org_admin` or `org_member` token acts for; absent for `system` and `auditor`, which read every organization.',
  })
  readonly organizationId?: string;
}
