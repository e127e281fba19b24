/** The answers of the Message Batches' explanation routes (docs/gateway.md "Message Batches"). */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

class BatchRateCardDto {
  @ApiProperty() readonly model!: string;
  @ApiProperty({ type: 'integer' }) readonly version!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'The card’s `batchBasisPoints`; null: the whole price.' }) readonly batchBasisPoints!: number | null;
}

class BatchResultCountsDto {
  @ApiProperty({ type: 'integer' }) readonly succeeded!: number;
  @ApiProperty({ type: 'integer' }) readonly errored!: number;
  @ApiProperty({ type: 'integer' }) readonly canceled!: number;
  @ApiProperty({ type: 'integer' }) readonly expired!: number;
}

export class BatchExplanationDto {
  @ApiProperty() readonly batchId!: string;
  @ApiProperty() readonly organizationId!: string;
  @ApiProperty() readonly keyId!: string;
  @ApiProperty() readonly keyName!: string;
  @ApiProperty({ enum: ['recording', 'refused', 'submitted', 'settled', 'deleted'] }) readonly status!: string;
  @ApiProperty({ type: 'integer' }) readonly requestCount!: number;
  @ApiProperty({ type: 'integer', description: 'Every request’s worst case at batch rates, held as one hold.' }) readonly holdCredits!: number;
  @ApiProperty({ type: [BatchRateCardDto] }) readonly rateCards!: BatchRateCardDto[];
  @ApiProperty({ type: BatchResultCountsDto, description: 'Results recorded so far, by type.' }) readonly results!: BatchResultCountsDto;
  @ApiPropertyOptional({ type: 'integer', description: 'Once settled: what the account charged, the sum of the results’ charges.' }) readonly chargeCredits?: number;
  @ApiPropertyOptional() readonly refusedReason?: string;
  @ApiProperty({ format: 'date-time' }) readonly createdAt!: string;
  @ApiPropertyOptional({ format: 'date-time' }) readonly settledAt?: string;
  @ApiProperty() readonly sentence!: string;
}

class BatchResultDto {
  @ApiProperty() readonly customId!: string;
  @ApiProperty() readonly model!: string;
  @ApiProperty({ enum: ['succeeded', 'errored', 'canceled', 'expired'] }) readonly type!: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'The usage it was priced at: each kind’s count (`inputTokens`, `outputTokens`, …) and `serviceTier: "batch"`.' })
  readonly usage?: Record<string, unknown>;
  @ApiPropertyOptional({ description: 'The usage field upstream reported malformed, or `usage` when it reported none: charged the hold.' }) readonly unmeasured?: string;
  @ApiProperty({ type: 'integer' }) readonly priceCredits!: number;
}

export class BatchRequestExplanationDto {
  @ApiProperty() readonly batchId!: string;
  @ApiProperty() readonly customId!: string;
  @ApiProperty() readonly model!: string;
  @ApiProperty({ type: 'integer' }) readonly rateCardVersion!: number;
  @ApiProperty({ type: 'integer' }) readonly holdCredits!: number;
  @ApiPropertyOptional({ type: BatchResultDto, description: 'Absent until the batch’s results are recorded.' }) readonly result?: BatchResultDto;
  @ApiProperty() readonly sentence!: string;
}
