/**
 * OpenAPI descriptions of the read models the API returns as the projections write them
 * (projections/attempts, explanations, routing-budgets). Documentation only: nothing is validated here.
 */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { HOLD_SETTLERS } from '../../accounts/account.events';
import { ADMISSION_REFUSAL_REASONS } from '../../accounts/admission.policy';
import { INVOCATION_STATUSES } from '../../invocations/invocation.events';
import { ENDING_LIMITS, OUTCOMES } from '../../runtime/conversation.types';
import type { UsageCounts } from '../../runtime/provider.port';
import { declareUsageFields } from './price-kind.fields';

/** Usage of one attempt or of a total, each priced kind apart (one count per row of the price-kind table). */
export class UsageDto {
  @ApiPropertyOptional({ description: 'The provider’s service tier, on an attempt where it said.' }) readonly serviceTier?: string;
  @ApiPropertyOptional({ description: 'The inference speed the provider says it served the attempt at (`standard`, `fast`).' }) readonly speed?: string;
  @ApiPropertyOptional({ description: 'Where the provider says it ran the attempt (e.g. `us`).' }) readonly inferenceGeo?: string;
}
export interface UsageDto extends UsageCounts {}
declareUsageFields(UsageDto);

/** One provider attempt (docs/rules.md rule 07). */
export class AttemptRowDto {
  @ApiProperty({ type: 'integer', description: '1-based turn number.' })
  readonly turn!: number;

  @ApiProperty({ type: 'integer', description: '0 for the first try of the turn; a retry is never a new turn.' })
  readonly retry!: number;

  @ApiProperty({ type: 'integer', description: 'When the attempt was sent, ms since the epoch.' })
  readonly startedAtMs!: number;

  @ApiProperty({ type: 'integer' })
  readonly durationMs!: number;

  @ApiProperty({ type: 'integer', description: 'The wait before this attempt, in ms (0 for a first try).' })
  readonly waitBeforeMs!: number;

  @ApiProperty({ description: '`ok` or the fault classification of docs/rules.md rules 05–06, e.g. `overloaded`.' })
  readonly classification!: string;

  @ApiProperty({ description: 'The attempt ran out of its own time.' })
  readonly timedOut!: boolean;

  @ApiPropertyOptional({ type: 'integer' })
  readonly httpStatus?: number;

  @ApiPropertyOptional()
  readonly providerRequestId?: string;

  @ApiProperty()
  readonly model!: string;

  @ApiPropertyOptional({ type: UsageDto, description: 'Absent when the attempt reported none, or reported it malformed (it then costs 0).' })
  readonly usage?: UsageDto;

  @ApiPropertyOptional({
    example: 'output_tokens',
    description: 'The provider’s usage field that was malformed (not a non-negative safe integer, or pricing past the exact-integer range): the usage is unknown. Its name only, never its value.',
  })
  readonly malformedUsage?: string;

  @ApiProperty({ type: 'integer', description: 'Integer credits, rounded up, at the invocation’s rate version.' })
  readonly priceCredits!: number;
}

/** Result of `GET /v1/invocations/:id/attempts`. */
export class AttemptHistoryDto {
  @ApiProperty() readonly invocationId!: string;
  @ApiProperty() readonly organizationId!: string;
  @ApiProperty() readonly operationId!: string;

  @ApiProperty({ type: [AttemptRowDto], description: 'In order; at most 64 are retained.' })
  readonly attempts!: AttemptRowDto[];

  @ApiProperty({ type: 'integer', description: 'Every attempt made, retained or not.' })
  readonly attemptCount!: number;

  @ApiProperty({ description: 'True when more attempts were made than retained; the totals stay exact.' })
  readonly attemptsTruncated!: boolean;

  @ApiProperty({ type: UsageDto })
  readonly usageTotals!: UsageDto;

  @ApiProperty({ type: 'integer', description: 'Integer credits over every attempt.' })
  readonly priceTotalCredits!: number;
}

/** The bound that ended a conversation and the publication it came from (ATS-PFM-LLM-002-13). */
export class EndingLimitDto {
  @ApiProperty({ enum: ENDING_LIMITS })
  readonly name!: string;

  @ApiProperty({ type: 'integer', description: 'The published value: turns, tool calls, credits or ms.' })
  readonly value!: number;

  @ApiProperty()
  readonly operationId!: string;

  @ApiProperty({ type: 'integer', description: 'The version the invocation was admitted under, not the one in force now.' })
  readonly publicationVersion!: number;
}

export class RefusalDto {
  @ApiProperty({ enum: ADMISSION_REFUSAL_REASONS })
  readonly reason!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, example: { available: 120, creditHold: 500 } })
  readonly figures!: Record<string, unknown>;

  @ApiProperty({ type: 'integer', description: 'docs/lifecycle.md transition 1 (access) or 2 (capacity).' })
  readonly transition!: number;
}

export class UsedOfLimitDto {
  @ApiProperty({ type: 'integer' }) readonly used!: number;
  @ApiPropertyOptional({ type: 'integer' }) readonly limit?: number;
}

export class ExplanationCreditsDto {
  @ApiProperty({ type: 'integer' }) readonly spent!: number;
  @ApiProperty({ type: 'integer' }) readonly hold!: number;
  @ApiPropertyOptional({ type: 'integer' }) readonly charge?: number;
  @ApiPropertyOptional({ type: 'integer', description: 'A gateway call’s attempt price above its hold, recorded as its overrun (docs/gateway.md "Settlement"); absent when none.' }) readonly overrun?: number;
}

/** A gateway call's facts in its explanation (docs/gateway.md). */
export class ExplanationGatewayDto {
  @ApiProperty({ description: 'The gateway key that made the call.' }) readonly keyId!: string;
  @ApiProperty({ example: 'ci-bot', description: 'The key’s name when the call was made.' }) readonly keyName!: string;
  @ApiProperty({ example: 'claude-sonnet-5-5', description: 'The model asked for, as the rate card names it.' }) readonly model!: string;
  @ApiProperty({ type: 'integer', minimum: 1, description: 'The rate card version the call was held and priced at.' }) readonly rateCardVersion!: number;
  @ApiProperty({ description: 'The caller asked for a streamed answer.' }) readonly stream!: boolean;
  @ApiPropertyOptional({ description: 'The key’s team when the call was made (docs/gateway.md "Teams"); absent: none.' }) readonly teamId?: string;
  @ApiPropertyOptional({ description: 'The upstream attempt’s classification, once recorded: `ok` or a fault (docs/rules.md rules 05–06).' }) readonly classification?: string;
  @ApiPropertyOptional({ type: 'integer', description: 'The upstream answer’s HTTP status, once recorded.' }) readonly httpStatus?: number;
  @ApiPropertyOptional({ description: 'The call ran out of its time bound, once recorded.' }) readonly timedOut?: boolean;
  @ApiPropertyOptional({ type: UsageDto, description: 'Anthropic’s usage report; absent until recorded, and when it reported none or reported it malformed.' }) readonly usage?: UsageDto;
  @ApiPropertyOptional({ example: 'output_tokens', description: 'The usage field Anthropic reported malformed: the call was charged its hold.' }) readonly malformedUsage?: string;
}

/** Result of `GET /v1/invocations/:id/explanation` (docs/http.md). */
export class ExplanationDto {
  @ApiProperty() readonly invocationId!: string;
  @ApiProperty() readonly organizationId!: string;
  @ApiProperty() readonly operationId!: string;
  @ApiPropertyOptional({ type: 'integer', description: 'The publication version; a gateway call’s rate card version.' }) readonly publicationVersion?: number;
  @ApiPropertyOptional({ type: ExplanationGatewayDto, description: 'Present for a gateway call only.' }) readonly gateway?: ExplanationGatewayDto;
  @ApiProperty({ enum: INVOCATION_STATUSES }) readonly state!: string;
  @ApiPropertyOptional({ enum: OUTCOMES }) readonly outcome?: string;
  @ApiPropertyOptional({ type: RefusalDto }) readonly refusal?: RefusalDto;
  @ApiPropertyOptional({ type: EndingLimitDto }) readonly endingLimit?: EndingLimitDto;
  @ApiPropertyOptional({ description: 'The provider fault of a `failed` outcome.' }) readonly fault?: string;
  @ApiProperty({ type: UsedOfLimitDto }) readonly turns!: UsedOfLimitDto;
  @ApiProperty({ type: UsedOfLimitDto }) readonly toolCalls!: UsedOfLimitDto;
  @ApiProperty({ type: ExplanationCreditsDto }) readonly credits!: ExplanationCreditsDto;
  @ApiProperty({ type: 'integer', description: 'Attempts that were retries (retry > 0).' }) readonly retries!: number;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  readonly settlement?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    properties: { requestedBy: { type: 'string' }, requestedAt: { type: 'string', format: 'date-time' } },
    description: 'Who asked the conversation to stop, and when (the first request).',
  })
  readonly cancellation?: { readonly requestedBy: string; readonly requestedAt: string };

  @ApiPropertyOptional({
    type: 'object',
    properties: { by: { type: 'string', enum: [...HOLD_SETTLERS] }, heldCredits: { type: 'integer' } },
    description: 'Set when the sweep or recovery released the hold of an invocation its own run had settled (a crash in between).',
  })
  readonly holdRelease?: { readonly by: string; readonly heldCredits: number };

  @ApiProperty({ example: 'Refused: insufficient_credits — available 120 < hold 500.' })
  readonly sentence!: string;
}

/** One published version with its window. */
export class PublicationWindowDto {
  @ApiProperty({ type: 'integer' }) readonly version!: number;
  @ApiProperty({ type: 'object', additionalProperties: true }) readonly routing!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true }) readonly limits!: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true }) readonly prices!: Record<string, unknown>;
  @ApiProperty({ type: 'integer' }) readonly creditHold!: number;
  @ApiProperty() readonly enabled!: boolean;

  @ApiProperty({ format: 'date-time', description: 'When this version came into force.' })
  readonly from!: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'When the next version replaced it; absent for the version in force.' })
  readonly until?: string;
}

/** Result of `GET /v1/operations/:operationId/publications`. */
export class RoutingBudgetsDto {
  @ApiProperty() readonly operationId!: string;

  @ApiProperty({ type: [PublicationWindowDto], description: 'Oldest first.' })
  readonly versions!: PublicationWindowDto[];
}
