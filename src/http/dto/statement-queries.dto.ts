import { ApiPropertyOptional } from '@nestjs/swagger';
import { Allow } from 'class-validator';
import { INVOCATION_STATUSES } from '../../invocations/invocation.events';
import { MAX_INVOCATIONS_PAGE } from '../../queries/list-invocations.query';
import { MAX_LEDGER_PAGE } from '../../queries/list-ledger-entries.query';
import { USAGE_GROUP_BY } from '../../queries/get-usage.query';

// Query strings arrive as text; the queries check each field and name it in a 400 (limit, cursor…).

/** Query of `GET /v1/organizations/:organizationId/invocations`. */
export class ListInvocationsQueryDto {
  @ApiPropertyOptional({ description: 'Only this operation’s invocations.', example: 'demo.arithmetic' })
  @Allow()
  readonly operationId?: string;

  @ApiPropertyOptional({ enum: INVOCATION_STATUSES, description: 'Only invocations in this lifecycle state.' })
  @Allow()
  readonly state?: string;

  @ApiPropertyOptional({ description: 'ISO-8601: only invocations estimated at or after it.', example: '2026-12-01T00:00:00Z' })
  @Allow()
  readonly from?: string;

  @ApiPropertyOptional({ description: 'ISO-8601: only invocations estimated before it.', example: '2026-12-02T00:00:00Z' })
  @Allow()
  readonly to?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_INVOCATIONS_PAGE, default: 100, description: 'Invocations per page.' })
  @Allow()
  readonly limit?: string;

  @ApiPropertyOptional({ description: 'The `nextCursor` of the previous page (opaque).' })
  @Allow()
  readonly cursor?: string;
}

/** Query of `GET /v1/organizations/:organizationId/ledger`. */
export class LedgerQueryDto {
  @ApiPropertyOptional({ minimum: 1, maximum: MAX_LEDGER_PAGE, default: 100, description: 'Entries per page.' })
  @Allow()
  readonly limit?: string;

  @ApiPropertyOptional({ description: 'The `nextCursor` of the previous page (opaque).' })
  @Allow()
  readonly cursor?: string;
}

/** Query of `GET /v1/organizations/:organizationId/usage`. */
export class UsageQueryDto {
  @ApiPropertyOptional({ description: 'First UTC day, included (YYYY-MM-DD). Required.', example: '2026-12-01' })
  @Allow()
  readonly from?: string;

  @ApiPropertyOptional({ description: 'Last UTC day, included (YYYY-MM-DD). Required.', example: '2026-12-03' })
  @Allow()
  readonly to?: string;

  @ApiPropertyOptional({
    enum: USAGE_GROUP_BY,
    isArray: true,
    description: 'Group rows by any of operation, model, day: repeated (`groupBy=day&groupBy=model`) or comma-separated. None: one row of totals.',
  })
  @Allow()
  readonly groupBy?: string | string[];
}
