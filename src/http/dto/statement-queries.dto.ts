import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Allow, type ValidationOptions } from 'class-validator';
import { INVOCATION_STATUSES } from '../../invocations/invocation.events';
import { DEFAULT_INVOCATIONS_PAGE, MAX_INVOCATIONS_PAGE } from '../../queries/list-invocations.query';
import { DEFAULT_LEDGER_PAGE, LEDGER_ORDERS, MAX_LEDGER_PAGE } from '../../queries/list-ledger-entries.query';
import { USAGE_GROUP_BY } from '../../queries/get-usage.query';
import { absent, fieldRule, Id, OneOf, Optional, QueryWholeNumber, Text } from '../../http-kit/dto/field-rules';
import { MAX_CALL_TAG_CHARS, MAX_CALL_USER_ID_CHARS } from '../../invocations/call-attribution';
import { CURSOR_PATTERN, MAX_CURSOR_CHARS } from '../../queries/list-cursor';

// Query strings arrive as text. The rules here refuse what is malformed, naming the field; the queries
// check the rest (instants, periods, cursors) and name the field too. Unknown parameters are refused.

/**
 * A list's opaque cursor, as far as its form goes (base64url, at most MAX_CURSOR_CHARS): the query
 * then decodes it. Checked beside `limit`, so a bad limit and a bad cursor are named together.
 */
function Cursor(options?: ValidationOptions): PropertyDecorator {
  return fieldRule(
    'cursor',
    options,
    (value) => {
      if (value === undefined || value === null) return absent(value);
      const wellFormed = typeof value === 'string' && value.length <= MAX_CURSOR_CHARS && CURSOR_PATTERN.test(value);
      return wellFormed ? undefined : 'is not a cursor this list returned';
    },
    { type: 'string', minLength: 1, maxLength: MAX_CURSOR_CHARS, pattern: CURSOR_PATTERN.source },
  );
}

/** Query of `GET /v1/organizations/:organizationId/invocations`. */
export class ListInvocationsQueryDto {
  @ApiPropertyOptional({ description: 'Only this operation’s invocations.', example: 'demo.arithmetic' })
  @Optional()
  @Id()
  readonly operationId?: string;

  @ApiPropertyOptional({ enum: INVOCATION_STATUSES, description: 'Only invocations in this lifecycle state.' })
  @Optional()
  @OneOf(INVOCATION_STATUSES)
  readonly state?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'ISO-8601: only invocations estimated at or after it.', example: '2026-12-01T00:00:00Z' })
  @Allow()
  readonly from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'ISO-8601: only invocations estimated before it.', example: '2026-12-02T00:00:00Z' })
  @Allow()
  readonly to?: string;

  @ApiPropertyOptional({ description: 'Only gateway calls whose `metadata.user_id` was this.', example: 'user-42' })
  @Optional()
  @Text(MAX_CALL_USER_ID_CHARS)
  readonly user?: string;

  @ApiPropertyOptional({ description: 'Only gateway calls tagged with this in `x-ledger-tags`.', example: 'nightly' })
  @Optional()
  @Text(MAX_CALL_TAG_CHARS)
  readonly tag?: string;

  @ApiPropertyOptional({ description: 'Only gateway calls whose key was this team’s when they were made.', example: 'team-1' })
  @Optional()
  @Id()
  readonly team?: string;

  @ApiPropertyOptional({ default: DEFAULT_INVOCATIONS_PAGE, description: 'Invocations per page.' })
  @Optional()
  @QueryWholeNumber({ min: 1, max: MAX_INVOCATIONS_PAGE, unit: 'invocations' })
  readonly limit?: string;

  @ApiPropertyOptional({ description: 'The `nextCursor` of the previous page (opaque).' })
  @Optional()
  @Cursor()
  readonly cursor?: string;
}

/** Query of `GET /v1/organizations/:organizationId/ledger`. */
export class LedgerQueryDto {
  @ApiPropertyOptional({ default: DEFAULT_LEDGER_PAGE, description: 'Entries per page.' })
  @Optional()
  @QueryWholeNumber({ min: 1, max: MAX_LEDGER_PAGE, unit: 'entries' })
  readonly limit?: string;

  @ApiPropertyOptional({ description: 'The `nextCursor` of the previous page (opaque), with the same `order`.' })
  @Optional()
  @Cursor()
  readonly cursor?: string;

  @ApiPropertyOptional({ enum: LEDGER_ORDERS, default: 'oldest', description: 'The account’s order (`oldest` first) or `newest` first.' })
  @Optional()
  @OneOf(LEDGER_ORDERS)
  readonly order?: string;
}

/** Query of `GET /v1/organizations/:organizationId/usage`. */
export class UsageQueryDto {
  @ApiProperty({ format: 'date', description: 'First UTC day, included (YYYY-MM-DD).', example: '2026-12-01' })
  // Required, but checked by the query with the period's other rules (at most MAX_STATEMENT_DAYS).
  @Allow()
  readonly from?: string;

  @ApiProperty({ format: 'date', description: 'Last UTC day, included (YYYY-MM-DD).', example: '2026-12-03' })
  @Allow()
  readonly to?: string;

  @ApiPropertyOptional({
    enum: USAGE_GROUP_BY,
    isArray: true,
    description:
      'Group rows by any of operation, model, day, key (the gateway key: `keyId` and `keyName`), team (`teamId`: the team of the calls’ key), user (`userId`: the calls’ `metadata.user_id`), tag (`tag`: each of the calls’ `x-ledger-tags`; a call with several counts in each): repeated (`groupBy=day&groupBy=model`) or comma-separated. None: one row of totals.',
  })
  @Allow()
  readonly groupBy?: string | string[];
}
