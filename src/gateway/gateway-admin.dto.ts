/**
 * Bodies of the gateway's administration routes (docs/gateway.md). The DTOs check each field's form
 * and document it; the domain checks every field again and names the bad one by its path.
 */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { Allow, IsArray, ValidateNested } from 'class-validator';
import { MAX_LEDGER_ENTRY_CREDITS } from '../accounts/account.bounds';
import { MAX_BUDGET_ALERT_PERCENT, MAX_BUDGET_ALERTS } from '../accounts/budget-alerts';
import {
  GATEWAY_REJECTION_REASONS,
  MAX_GATEWAY_KEY_CONCURRENT_CALLS,
  MAX_GATEWAY_KEY_NAME_CHARS,
  MAX_GATEWAY_KEY_OUTPUT_TOKENS,
  MAX_GATEWAY_KEY_REQUESTS_PER_MINUTE,
  MAX_GATEWAY_KEY_ROTATION_GRACE_SECONDS,
  MAX_GATEWAY_KEY_TOKENS_PER_MINUTE,
  SPEND_PERIODS,
  type GatewayRejectionReason,
  type SpendLimit,
  type SpendPeriod,
} from '../accounts/gateway-keys';
import { MAX_ID_CHARS } from '../domain/field-checks';
import { Bool, JsonObject, OneOf, Optional, Text, WholeNumber } from '../http-kit/dto/field-rules';
import {
  MAX_GATEWAY_ATTEMPT_TIMEOUT_MS,
  MAX_GATEWAY_OUTPUT_TOKENS,
  MAX_SERVER_TOOL_ALLOWANCE_TOKENS,
  MAX_SERVER_TOOL_ALLOWANCE_USES,
  type ServerToolAllowance,
  type ServerToolAllowances,
} from './rate-card';

/** What `alertAt` means, on a key or a team (docs/gateway.md "Budget alerts"). */
export const ALERT_AT_DESCRIPTION =
  `Percentages (whole, 1–${MAX_BUDGET_ALERT_PERCENT}, at most ${MAX_BUDGET_ALERTS}) of \`spendLimit\`: once per period, the settlement that takes the credits charged in the period to one of them ` +
  'records a `GatewayBudgetThresholdCrossed`, delivered to the webhooks subscribed to it. Needs a `spendLimit`.';

/** One `alertAt` percentage, as the OpenAPI document states it. */
export const ALERT_AT_ITEMS = { type: 'integer', minimum: 1, maximum: MAX_BUDGET_ALERT_PERCENT } as const;

export class SpendLimitDto implements SpendLimit {
  @ApiProperty({ description: 'Integer credits the key may spend (charged plus held) in one period.' })
  @WholeNumber({ min: 0, max: MAX_LEDGER_ENTRY_CREDITS, unit: 'credits' })
  readonly credits!: number;

  @ApiProperty({ enum: SPEND_PERIODS, description: 'A UTC calendar `day`, an ISO `week` (from Monday 00:00 UTC), a UTC calendar `month`, or the whole life (`total`).' })
  @OneOf(SPEND_PERIODS)
  readonly period!: SpendPeriod;
}

/** `POST …/gateway-keys` and `PATCH …/gateway-keys/:keyId`: the key's settings, whole. */
export class GatewayKeySettingsDto {
  @ApiProperty({ example: 'ci-bot' })
  @Text(MAX_GATEWAY_KEY_NAME_CHARS)
  readonly name!: string;

  @ApiPropertyOptional({ type: [String], description: 'The models the key may call; absent: every model on the rate card.' })
  @Optional()
  @IsArray({ message: 'must be an array of model names' })
  readonly models?: string[];

  @ApiPropertyOptional({ description: 'The largest `max_tokens` a call with this key may ask for.' })
  @Optional()
  @WholeNumber({ min: 1, max: MAX_GATEWAY_KEY_OUTPUT_TOKENS, unit: 'tokens' })
  readonly maxOutputTokens?: number;

  @ApiPropertyOptional({ type: SpendLimitDto, description: 'What the key may spend per UTC day, ISO week, month, or in total; absent: no limit but the organization’s credits.' })
  @Optional()
  @JsonObject()
  @ValidateNested()
  @Type(() => SpendLimitDto)
  readonly spendLimit?: SpendLimitDto;

  @ApiPropertyOptional({ type: 'array', items: ALERT_AT_ITEMS, maxItems: MAX_BUDGET_ALERTS, description: ALERT_AT_DESCRIPTION })
  @Optional()
  @IsArray({ message: 'must be an array of percentages' })
  readonly alertAt?: number[];

  @ApiPropertyOptional({ description: 'A team of the organization whose spend limit the key’s calls also count against (docs/gateway.md "Teams"); an unknown one is 400 naming `teamId`.' })
  @Optional()
  @Text(MAX_ID_CHARS)
  readonly teamId?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'ISO-8601, in the future: from this instant the key is refused (401 `authentication_error`, saying it expired); absent: it never expires.' })
  // Checked by the domain (readKeySettings), which names `expiresAt` and compares it with the ledger's clock.
  @Allow()
  readonly expiresAt?: string;

  @ApiPropertyOptional({ description: 'Calls the key may have in flight at once; one more is refused (429 `rate_limit_error`, `key_rate_limit`).' })
  @Optional()
  @WholeNumber({ min: 1, max: MAX_GATEWAY_KEY_CONCURRENT_CALLS, unit: 'calls in flight' })
  readonly maxConcurrent?: number;

  @ApiPropertyOptional({ description: 'Calls the key may have admitted in one UTC minute.' })
  @Optional()
  @WholeNumber({ min: 1, max: MAX_GATEWAY_KEY_REQUESTS_PER_MINUTE, unit: 'calls per minute' })
  readonly requestsPerMinute?: number;

  @ApiPropertyOptional({ description: 'Tokens the key’s calls admitted in one UTC minute may count: each holds its worst case (input bound + `max_tokens`) until its settlement trues it up to its reported usage.' })
  @Optional()
  @WholeNumber({ min: 1, max: MAX_GATEWAY_KEY_TOKENS_PER_MINUTE, unit: 'tokens per minute' })
  readonly tokensPerMinute?: number;
}

/** `POST …/gateway-keys/:keyId/rotate`: how long the old secret keeps working. */
export class RotateGatewayKeyDto {
  @ApiProperty({ description: 'Seconds the secret before this rotation keeps working (0: it stops now); then it is refused (401).' })
  @WholeNumber({ min: 0, max: MAX_GATEWAY_KEY_ROTATION_GRACE_SECONDS, unit: 'seconds' })
  readonly graceSeconds!: number;
}

/** A key's latest UTC minute with a call. */
export class KeyMinuteDto {
  @ApiProperty({ description: '`2026-12-03T20:44`' }) readonly minute!: string;
  @ApiProperty({ type: 'integer', description: 'Calls admitted in the minute.' }) readonly requests!: number;
  @ApiProperty({ type: 'integer', description: 'Their tokens: the worst case of those in flight, the reported usage of those settled.' }) readonly tokens!: number;
}

/** A key as listed: settings and figures, never the key. */
export class GatewayKeyDto extends GatewayKeySettingsDto {
  @ApiProperty() readonly keyId!: string;
  @ApiProperty() readonly issuedAt!: string;
  @ApiPropertyOptional() readonly revokedAt?: string;
  @ApiProperty({ description: 'The period counted now: `2026-12-01`, `2026-W49`, `2026-12` or `total`.' }) readonly period!: string;
  @ApiProperty({ type: 'integer', description: 'Credits charged for the key’s calls admitted in the period.' }) readonly spentCredits!: number;
  @ApiProperty({ type: 'integer', description: 'Credits the key’s calls in flight hold in the period.' }) readonly heldCredits!: number;
  @ApiPropertyOptional({ description: 'With LEDGER_CREDIT_VALUE set: `{ currency, spentCredits, heldCredits }` in money, exact decimal strings (docs/http.md "Money beside credits").' })
  readonly money?: Readonly<Record<string, string>>;
  @ApiProperty({
    type: 'object',
    properties: Object.fromEntries(GATEWAY_REJECTION_REASONS.map((reason) => [reason, { type: 'integer', minimum: 1 }])),
    additionalProperties: false,
    description:
      'Calls by the key refused before anything was held, since it was issued, by reason (a reason never seen is absent). Recorded at most a minute after the refusal (docs/gateway.md "Rejections before admission").',
  })
  readonly rejections!: Partial<Record<GatewayRejectionReason, number>>;
  @ApiPropertyOptional({ format: 'date-time', description: 'The latest rotation.' }) readonly rotatedAt?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'Until when the secret before the latest rotation works; absent once its grace has ended.' })
  readonly previousSecretValidUntil?: string;
  @ApiProperty({ type: 'integer', description: 'The key’s calls in flight now.' }) readonly inFlight!: number;
  @ApiPropertyOptional({ type: KeyMinuteDto, description: 'The key’s latest UTC minute with a call; absent before its first.' }) readonly currentMinute?: KeyMinuteDto;
}

/** The answer of `POST …/gateway-keys`: the key, shown this once. */
export class IssuedGatewayKeyDto extends GatewayKeyDto {
  @ApiProperty({ description: '`llk_…`: shown only in this answer; only its SHA-256 is kept.' }) readonly key!: string;
}

/** What the hold assumes of one call's code execution or MCP tool calls (docs/gateway.md, "How the hold is bounded"). */
export class ServerToolAllowanceDto implements ServerToolAllowance {
  @ApiProperty({ description: 'Uses in one call, all of this kind together; each may start one more sampling step that reads the context again.' })
  @WholeNumber({ min: 1, max: MAX_SERVER_TOOL_ALLOWANCE_USES, unit: 'uses' })
  readonly maxUses!: number;

  @ApiProperty({ description: 'Input tokens one use’s result may add to the context.' })
  @WholeNumber({ min: 0, max: MAX_SERVER_TOOL_ALLOWANCE_TOKENS, unit: 'tokens' })
  readonly resultTokensPerUse!: number;

  @ApiProperty({ description: 'Input tokens the definitions add beyond the body’s bytes: per code-execution tool, or per MCP server (the tools it lists).' })
  @WholeNumber({ min: 0, max: MAX_SERVER_TOOL_ALLOWANCE_TOKENS, unit: 'tokens' })
  readonly definitionTokens!: number;
}

/** The server tools a call may use only with an allowance: no field of the request bounds their uses. */
export class ServerToolAllowancesDto implements ServerToolAllowances {
  @ApiPropertyOptional({ type: ServerToolAllowanceDto, description: 'Code execution (`code_execution_*` tools); absent: such a call is refused (400).' })
  @Optional()
  @JsonObject()
  @ValidateNested()
  @Type(() => ServerToolAllowanceDto)
  readonly codeExecution?: ServerToolAllowanceDto;

  @ApiPropertyOptional({ type: ServerToolAllowanceDto, description: 'MCP servers (`mcp_servers`, `mcp_toolset` tools); absent: such a call is refused (400).' })
  @Optional()
  @JsonObject()
  @ValidateNested()
  @Type(() => ServerToolAllowanceDto)
  readonly mcpServers?: ServerToolAllowanceDto;
}

/** `PUT /v1/gateway/models/:model`: the model's next rate card version. */
export class PriceGatewayModelDto {
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'The rate version (the same fields as a publication’s `prices`), plus, optionally: `fast` (a whole rate version for `speed: "fast"`), ' +
      '`inferenceGeo` (`{ "<geo>": basisPoints }`, at least 10000, applied to the whole price), `webSearchMaxUsesDefault` (searches a web-search tool without `max_uses` may make) ' +
      'and `batchBasisPoints` (1 to 10000, the Message Batches multiplier on the whole price: 5000 is half price).',
  })
  @JsonObject()
  readonly prices!: Record<string, unknown>;

  @ApiProperty({ description: 'The largest `max_tokens` a call may ask for.' })
  @WholeNumber({ min: 1, max: MAX_GATEWAY_OUTPUT_TOKENS, unit: 'tokens' })
  readonly maxOutputTokens!: number;

  @ApiProperty({ description: 'The call’s time bound, its stream included.' })
  @WholeNumber({ min: 1, max: MAX_GATEWAY_ATTEMPT_TIMEOUT_MS, unit: 'ms' })
  readonly attemptTimeoutMs!: number;

  @ApiPropertyOptional({ type: ServerToolAllowancesDto, description: 'What the hold assumes of code execution and MCP servers; a call using one the card gives no allowance is refused (400).' })
  @Optional()
  @JsonObject()
  @ValidateNested()
  @Type(() => ServerToolAllowancesDto)
  readonly serverToolAllowances?: ServerToolAllowancesDto;

  @ApiProperty({ description: 'A disabled model is refused (404) and left out of the models list.' })
  @Bool()
  readonly enabled!: boolean;
}

export class PricedModelDto {
  @ApiProperty() readonly model!: string;
  @ApiProperty({ type: 'integer', minimum: 1 }) readonly version!: number;
}
