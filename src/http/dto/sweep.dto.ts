import { ApiProperty } from '@nestjs/swagger';
import { WholeNumber } from '../../http-kit/dto/field-rules';

/**
 * Smallest staleness threshold a sweep accepts, in ms. A live request sits between two steps of its
 * own run for milliseconds; a threshold under a second could settle it from under its runner.
 */
export const MIN_SWEEP_OLDER_THAN_MS = 1_000;
/** Largest threshold, in ms: 30 days. Beyond it nothing is left to find. */
export const MAX_SWEEP_OLDER_THAN_MS = 30 * 24 * 3_600_000;

/** Body of `POST /v1/settlements/sweep`. */
export class SweepDto {
  @ApiProperty({
    example: 600_000,
    description: 'Settle requests that have shown no activity for longer than this many ms.',
  })
  @WholeNumber({ min: MIN_SWEEP_OLDER_THAN_MS, max: MAX_SWEEP_OLDER_THAN_MS, unit: 'ms' })
  readonly olderThanMs!: number;
}

export class SweptInvocationDto {
  @ApiProperty()
  readonly invocationId!: string;

  @ApiProperty()
  readonly organizationId!: string;

  @ApiProperty({ description: 'The state it was left in.' })
  readonly from!: string;

  @ApiProperty({ type: 'integer', description: 'The docs/lifecycle.md transition that settled it.' })
  readonly transition!: number;

  @ApiProperty({ type: 'integer', description: 'Integer credits charged.' })
  readonly chargeCredits!: number;
}

export class ReleasedHoldDto {
  @ApiProperty()
  readonly invocationId!: string;

  @ApiProperty()
  readonly organizationId!: string;

  @ApiProperty({ type: 'integer' })
  readonly chargeCredits!: number;
}

/** What a sweep settled. */
export class SweepReportDto {
  @ApiProperty({ type: 'integer' })
  readonly olderThanMs!: number;

  @ApiProperty({ type: [SweptInvocationDto] })
  readonly settled!: SweptInvocationDto[];

  @ApiProperty({ type: [ReleasedHoldDto], description: 'Holds of settled invocations that a crash had left open on the account.' })
  readonly releasedHolds!: ReleasedHoldDto[];
}
