import { ApiProperty } from '@nestjs/swagger';
import { MAX_LEDGER_ENTRY_CREDITS } from '../../accounts/account.bounds';
import { MAX_REASON_CHARS } from '../../domain/field-checks';
import { BalanceDto } from './balance.dto';
import { IdempotencyKey, Text, WholeNumber } from '../../http-kit/dto/field-rules';

/** Body of `POST /v1/organizations/:organizationId/grants`. */
export class GrantCreditsDto {
  @ApiProperty({ description: 'Integer credits to add.' })
  @WholeNumber({ min: 1, max: MAX_LEDGER_ENTRY_CREDITS, unit: 'credits' })
  readonly credits!: number;

  @ApiProperty({ example: 'monthly plan' })
  @Text(MAX_REASON_CHARS)
  readonly reason!: string;

  @ApiProperty({
    example: 'grant-2025-01',
    description: 'Required. Repeating the key with the same entry returns the first result and writes nothing.',
  })
  @IdempotencyKey()
  readonly idempotencyKey!: string;
}

/** Body of `POST /v1/organizations/:organizationId/adjustments`. */
export class AdjustCreditsDto {
  @ApiProperty({
    description: 'Integer credits, non-zero; negative takes credits away.',
  })
  @WholeNumber({ min: -MAX_LEDGER_ENTRY_CREDITS, max: MAX_LEDGER_ENTRY_CREDITS, unit: 'credits' })
  readonly credits!: number;

  @ApiProperty({ example: 'refund for an outage' })
  @Text(MAX_REASON_CHARS)
  readonly reason!: string;

  @ApiProperty({ example: 'adjust-2025-01-17' })
  @IdempotencyKey()
  readonly idempotencyKey!: string;
}

/** What a grant or adjustment did, and the balance after it. */
export class LedgerEntryResultDto {
  @ApiProperty()
  readonly organizationId!: string;

  @ApiProperty({ enum: ['grant', 'adjustment'] })
  readonly kind!: 'grant' | 'adjustment';

  @ApiProperty({ type: 'integer', description: 'Integer credits of the entry.' })
  readonly credits!: number;

  @ApiProperty()
  readonly reason!: string;

  @ApiProperty()
  readonly idempotencyKey!: string;

  @ApiProperty({ description: 'True when the key had been used before for this same entry: nothing new was written.' })
  readonly repeated!: boolean;

  @ApiProperty({ type: BalanceDto })
  readonly balance!: BalanceDto;
}
