/** The answers and queries of the Message Batches' explanation routes (docs/gateway.md "Message Batches"). */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { absent, fieldRule, Optional, QueryWholeNumber } from '../../http-kit/dto/field-rules';
import { CUSTOM_ID_PATTERN } from './batch-requests.reader';

/** Batches, or a batch's requests, on one page of the explanation lists, when the query names no `limit`. */
export const DEFAULT_BATCH_PAGE = 50;
/** The most batches, or requests of a batch, on one page (each is read from its batch's stream). */
export const MAX_BATCH_PAGE = 100;
/** Longest `after`, in characters: a batch id or a custom_id (both at most 64). */
const MAX_AFTER_CHARS = 64;

/** Query of the lists of batches and of a batch's requests. */
export class BatchPageQueryDto {
  @ApiPropertyOptional({ default: DEFAULT_BATCH_PAGE, description: 'Entries per page.' })
  @Optional()
  @QueryWholeNumber({ min: 1, max: MAX_BATCH_PAGE, unit: 'entries' })
  readonly limit?: string;

  @ApiPropertyOptional({ description: 'The `nextAfter` of the previous page: the list resumes after this batch id (or custom_id).' })
  @Optional()
  @AfterId()
  readonly after?: string;
}

/** `after`: a batch id or a custom_id, in the form both take. */
function AfterId(): PropertyDecorator {
  return fieldRule(
    'after',
    undefined,
    (value) => {
      if (value === undefined || value === null) return absent(value);
      return typeof value === 'string' && CUSTOM_ID_PATTERN.test(value) ? undefined : `must match ${CUSTOM_ID_PATTERN.source}`;
    },
    { type: 'string', minLength: 1, maxLength: MAX_AFTER_CHARS, pattern: CUSTOM_ID_PATTERN.source },
  );
}
import { BATCH_STATUSES } from './batch-explanation';

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

class BatchAnswerLostDto {
  @ApiProperty() readonly reason!: string;
  @ApiProperty({ format: 'date-time' }) readonly at!: string;
}

export class BatchExplanationDto {
  @ApiProperty() readonly batchId!: string;
  @ApiProperty() readonly organizationId!: string;
  @ApiProperty() readonly keyId!: string;
  @ApiProperty() readonly keyName!: string;
  @ApiProperty({ enum: BATCH_STATUSES }) readonly status!: string;
  @ApiProperty({ type: 'integer' }) readonly requestCount!: number;
  @ApiProperty({ type: 'integer', description: 'Every request’s worst case at batch rates, held as one hold.' }) readonly holdCredits!: number;
  @ApiProperty({ type: [BatchRateCardDto] }) readonly rateCards!: BatchRateCardDto[];
  @ApiProperty({ type: BatchResultCountsDto, description: 'Results recorded so far, by type.' }) readonly results!: BatchResultCountsDto;
  @ApiPropertyOptional({ type: 'integer', description: 'Once settled: what the account charged, the sum of the results’ charges.' }) readonly chargeCredits?: number;
  @ApiPropertyOptional() readonly refusedReason?: string;
  @ApiPropertyOptional({ type: BatchAnswerLostDto, description: 'Its create’s answer was lost: held until found upstream or certain not to run.' }) readonly answerLost?: BatchAnswerLostDto;
  @ApiPropertyOptional({ format: 'date-time', description: 'When a batch whose create answer was lost was found in upstream’s list.' }) readonly foundUpstreamAt?: string;
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

export class BatchListDto {
  @ApiProperty({ type: [BatchExplanationDto], description: 'The organization’s batches, newest first (refused and deleted ones too).' }) readonly batches!: BatchExplanationDto[];
  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `after` for the next page; null on the last.' }) readonly nextAfter!: string | null;
}

export class BatchRequestListDto {
  @ApiProperty({ type: [BatchRequestExplanationDto], description: 'The batch’s requests in the order they were sent.' }) readonly requests!: BatchRequestExplanationDto[];
  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `after` for the next page; null on the last.' }) readonly nextAfter!: string | null;
}
