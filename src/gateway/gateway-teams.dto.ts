/**
 * Bodies of the team routes (docs/gateway.md "Teams"). The DTOs check each field's form and document
 * it; the domain checks every field again and names the bad one by its path.
 */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, ValidateNested } from 'class-validator';
import { MAX_GATEWAY_TEAM_NAME_CHARS } from '../accounts/gateway-teams';
import { JsonObject, Optional, Text } from '../http-kit/dto/field-rules';
import { MAX_BUDGET_ALERTS } from '../accounts/budget-alerts';
import { ALERT_AT_DESCRIPTION, ALERT_AT_ITEMS, SpendLimitDto } from './gateway-admin.dto';

/** `POST …/teams` and `PATCH …/teams/:teamId`: the team's settings, whole. */
export class GatewayTeamSettingsDto {
  @ApiProperty({ example: 'platform' })
  @Text(MAX_GATEWAY_TEAM_NAME_CHARS)
  readonly name!: string;

  @ApiPropertyOptional({ type: SpendLimitDto, description: 'What the team’s keys together may spend (charged plus held) per UTC day, ISO week, month, or in total; absent: no team limit.' })
  @Optional()
  @JsonObject()
  @ValidateNested()
  @Type(() => SpendLimitDto)
  readonly spendLimit?: SpendLimitDto;

  @ApiPropertyOptional({ type: 'array', items: ALERT_AT_ITEMS, maxItems: MAX_BUDGET_ALERTS, description: ALERT_AT_DESCRIPTION })
  @Optional()
  @IsArray({ message: 'must be an array of percentages' })
  readonly alertAt?: number[];
}

/** A team as listed: settings, live keys and figures in the period counted now. */
export class GatewayTeamDto extends GatewayTeamSettingsDto {
  @ApiProperty() readonly teamId!: string;
  @ApiProperty() readonly createdAt!: string;
  @ApiProperty({ type: [String], description: 'The live keys that name the team.' }) readonly keyIds!: string[];
  @ApiProperty({ description: 'The period counted now: `2026-12-01`, `2026-W49`, `2026-12` or `total`.' }) readonly period!: string;
  @ApiProperty({ type: 'integer', description: 'Credits charged for the team’s calls admitted in the period.' }) readonly spentCredits!: number;
  @ApiProperty({ type: 'integer', description: 'Credits the team’s calls in flight hold in the period.' }) readonly heldCredits!: number;
  @ApiPropertyOptional({ description: 'With LEDGER_CREDIT_VALUE set: `{ currency, spentCredits, heldCredits }` in money, exact decimal strings (docs/http.md "Money beside credits").' })
  readonly money?: Readonly<Record<string, string>>;
}

export class GatewayTeamListDto {
  @ApiProperty({ type: [GatewayTeamDto] }) readonly teams!: GatewayTeamDto[];
}
