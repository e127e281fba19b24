import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { MAX_RUNNING_LIMIT } from '../../accounts/account.bounds';
import { Bool, Optional, WholeNumber } from '../../http-kit/dto/field-rules';

/** Body of `PUT /v1/organizations/:organizationId/settings`: name either setting, or both. */
export class OrganizationSettingsDto {
  @ApiPropertyOptional({ description: 'The organization switch; off refuses every request with `ai_disabled`.' })
  @Optional()
  @Bool()
  readonly aiEnabled?: boolean;

  @ApiPropertyOptional({ description: 'Invocations that may run at once.' })
  @Optional()
  @WholeNumber({ min: 1, max: MAX_RUNNING_LIMIT, unit: 'running invocations' })
  readonly maxRunning?: number;
}

/** The organization's settings after the change. */
export class OrganizationSettingsResultDto {
  @ApiProperty()
  readonly organizationId!: string;

  @ApiProperty()
  readonly aiEnabled!: boolean;

  @ApiProperty({ type: 'integer' })
  readonly maxRunning!: number;
}
