import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, ValidateIf, ValidateNested } from 'class-validator';
import { MAX_LEDGER_ENTRY_CREDITS } from '../accounts/account.bounds';
import { ALERT_THRESHOLD_KINDS, MAX_ALERT_THRESHOLDS, MAX_USED_SHARE_PERCENT, type AlertThreshold } from '../accounts/credit-alerts';
import { JsonObject, OneOf, WholeNumber } from '../http-kit/dto/field-rules';

/** One threshold: `available_below` with `credits`, or `used_share_above` with `percent`. */
export class AlertThresholdDto {
  @ApiProperty({ enum: ALERT_THRESHOLD_KINDS })
  @OneOf(ALERT_THRESHOLD_KINDS)
  readonly kind!: AlertThreshold['kind'];

  @ApiPropertyOptional({
    description: '`available_below`: alert when available credits go below this many.',
  })
  @ValidateIf((threshold: AlertThresholdDto) => threshold.kind === 'available_below' || threshold.credits !== undefined)
  @WholeNumber({ min: 0, max: MAX_LEDGER_ENTRY_CREDITS, unit: 'credits' })
  readonly credits?: number;

  @ApiPropertyOptional({
    description: '`used_share_above`: alert when more than this percent of the granted credits has been charged.',
  })
  @ValidateIf((threshold: AlertThresholdDto) => threshold.kind === 'used_share_above' || threshold.percent !== undefined)
  @WholeNumber({ min: 1, max: MAX_USED_SHARE_PERCENT, unit: 'percent' })
  readonly percent?: number;
}

/** Body of `PUT /v1/organizations/:organizationId/alerts`: the thresholds in force from now on. */
export class AlertThresholdsDto {
  @ApiProperty({ type: [AlertThresholdDto], maxItems: MAX_ALERT_THRESHOLDS, description: 'Replaces every threshold; [] removes them.' })
  @IsArray({ message: 'must be an array' })
  @ArrayMaxSize(MAX_ALERT_THRESHOLDS, { message: `must hold at most ${MAX_ALERT_THRESHOLDS} thresholds` })
  @JsonObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => AlertThresholdDto)
  readonly thresholds!: AlertThresholdDto[];
}

/** The thresholds in force after the change. */
export class AlertThresholdsResultDto {
  @ApiProperty()
  readonly organizationId!: string;

  @ApiProperty({ type: [AlertThresholdDto] })
  readonly thresholds!: AlertThresholdDto[];
}
