import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ValidateNested } from 'class-validator';
import { PROVIDERS, type ProviderName } from '../../catalog/operation.events';
import {
  DEFAULT_MAX_ATTEMPTS_PER_TURN,
  MAX_ATTEMPT_TIMEOUT_MS,
  MAX_ATTEMPTS_PER_TURN_LIMIT,
  MAX_CREDIT_HOLD_CREDITS,
  MAX_MODEL_NAME_CHARS,
  MAX_OUTPUT_TOKENS_LIMIT,
  MAX_LONG_CONTEXT_THRESHOLD_TOKENS,
  MAX_TOOL_CALLS_LIMIT,
  MAX_TOTAL_TIME_MS,
  MAX_TURNS_LIMIT,
} from '../../catalog/publication.validation';
import type { PublicationRequest } from '../../catalog/publish-operation.command';
import type { LongContextRates, Prices } from '../../runtime/conversation.types';
import { Bool, JsonObject, OneOf, Optional, Text, WholeNumber } from '../../http-kit/dto/field-rules';
import { declareRateFields } from './price-kind.fields';

/** Where an operation's model requests go. There is no fallback to another provider or model. */
export class RoutingDto {
  @ApiProperty({ enum: PROVIDERS, description: 'The provider; `scripted` is the built-in offline model.' })
  @OneOf(PROVIDERS)
  readonly provider!: ProviderName;

  @ApiProperty({ example: 'claude-sonnet-5-5' })
  @Text(MAX_MODEL_NAME_CHARS)
  readonly model!: string;
}

/** The bounds of each conversation run under the publication (docs/rules.md). */
export class LimitsDto {
  @ApiProperty({ description: 'Model requests per conversation.' })
  @WholeNumber({ min: 1, max: MAX_TURNS_LIMIT, unit: 'turns' })
  readonly maxTurns!: number;

  @ApiProperty({ description: 'Answered tool calls per conversation.' })
  @WholeNumber({ min: 0, max: MAX_TOOL_CALLS_LIMIT, unit: 'tool calls' })
  readonly maxToolCalls!: number;

  @ApiProperty({ description: 'The whole conversation’s time budget, in ms.' })
  @WholeNumber({ min: 1, max: MAX_TOTAL_TIME_MS, unit: 'ms' })
  readonly totalTimeMs!: number;

  @ApiProperty({ description: 'One provider attempt’s timeout, in ms.' })
  @WholeNumber({ min: 1, max: MAX_ATTEMPT_TIMEOUT_MS, unit: 'ms' })
  readonly attemptTimeoutMs!: number;

  @ApiProperty({ description: 'Output tokens one model response may use.' })
  @WholeNumber({ min: 1, max: MAX_OUTPUT_TOKENS_LIMIT, unit: 'tokens' })
  readonly maxOutputTokens!: number;

  @ApiPropertyOptional({
    default: DEFAULT_MAX_ATTEMPTS_PER_TURN,
    description: 'Provider attempts per turn, retries included.',
  })
  @Optional()
  @WholeNumber({ min: 1, max: MAX_ATTEMPTS_PER_TURN_LIMIT, unit: 'attempts' })
  readonly maxAttemptsPerTurn?: number;
}

/** Rates for an attempt whose input (uncached + cache writes + cache reads) exceeds the threshold. */
export class LongContextRatesDto {
  @ApiProperty({
    description: 'Input tokens past which the whole attempt is priced at these rates (e.g. 200000).',
  })
  @WholeNumber({ min: 1, max: MAX_LONG_CONTEXT_THRESHOLD_TOKENS, unit: 'tokens' })
  readonly thresholdInputTokens!: number;
}
// One required rate per replaceable kind of the price-kind table.
export interface LongContextRatesDto extends Omit<LongContextRates, 'thresholdInputTokens'> {}
declareRateFields(LongContextRatesDto, { fallbacks: false, replaceableOnly: true });

/** The rate version: integer credits per million tokens of each kind (web searches: per thousand). */
export class PricesDto {
  @ApiPropertyOptional({ type: LongContextRatesDto, description: 'Rates past a long-context threshold; absent: none.' })
  @Optional()
  @JsonObject()
  @ValidateNested()
  @Type(() => LongContextRatesDto)
  readonly longContext?: LongContextRatesDto;
}
// One rate per kind of the price-kind table; a kind with a fallback may be left out.
export interface PricesDto extends Omit<Prices, 'longContext'> {}
declareRateFields(PricesDto, { fallbacks: true, replaceableOnly: false });

/** Body of `PUT /v1/operations/:operationId/publications`: the next immutable version of an operation. */
export class PublishOperationDto implements PublicationRequest {
  @ApiProperty({ type: RoutingDto })
  @JsonObject()
  @ValidateNested()
  @Type(() => RoutingDto)
  readonly routing!: RoutingDto;

  @ApiProperty({ type: LimitsDto })
  @JsonObject()
  @ValidateNested()
  @Type(() => LimitsDto)
  readonly limits!: LimitsDto;

  @ApiProperty({ type: PricesDto })
  @JsonObject()
  @ValidateNested()
  @Type(() => PricesDto)
  readonly prices!: PricesDto;

  @ApiProperty({
    description: 'Integer credits reserved at admission: the conversation’s credit budget and its estimate.',
  })
  @WholeNumber({ min: 0, max: MAX_CREDIT_HOLD_CREDITS, unit: 'credits' })
  readonly creditHold!: number;

  @ApiProperty({ description: 'The operation switch: a disabled operation refuses admission (`operation_disabled`).' })
  @Bool()
  readonly enabled!: boolean;
}

/** The version a publication was given. */
export class PublishedVersionDto {
  @ApiProperty({ example: 'demo.arithmetic' })
  readonly operationId!: string;

  @ApiProperty({ type: 'integer', minimum: 1, description: '1-based; each publication is the previous version plus one.' })
  readonly version!: number;
}
