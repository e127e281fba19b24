import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/**
 * An organization's credits (docs/lifecycle.md "Settlement and the account"): `available = granted +
 * adjustments − charged − held`. All integers.
 */
export class BalanceDto {
  @ApiProperty({ type: 'integer', description: 'Credits granted, in total.' })
  readonly granted!: number;

  @ApiProperty({ type: 'integer', description: 'Sum of adjustments (may be negative).' })
  readonly adjustments!: number;

  @ApiProperty({ type: 'integer', description: 'Credits held by invocations in flight.' })
  readonly held!: number;

  @ApiProperty({ type: 'integer', description: 'Credits charged by settled invocations.' })
  readonly charged!: number;

  @ApiProperty({ type: 'integer', description: 'Derived; below zero only after a settlement charged more than its hold.' })
  readonly available!: number;

  @ApiProperty({ type: 'integer', description: 'Invocations holding a running slot.' })
  readonly running!: number;

  @ApiPropertyOptional({
    description: 'With LEDGER_CREDIT_VALUE set: `{ currency, granted, adjustments, held, charged, available }`, each an exact decimal string of the credits × the credit’s value.',
    example: { currency: 'USD', granted: '100', adjustments: '0', held: '2.5446', charged: '0.4542', available: '97.0012' },
  })
  readonly money?: Readonly<Record<string, string>>;
}

/** Result of `GET /v1/organizations/:organizationId/balance`. */
export class OrganizationBalanceDto extends BalanceDto {
  @ApiProperty({ example: 'demo-org' })
  readonly organizationId!: string;
}
