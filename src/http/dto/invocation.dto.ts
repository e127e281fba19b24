import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ADMISSION_REFUSAL_REASONS } from '../../accounts/admission.policy';
import { INVOCATION_EVENT_TYPES, INVOCATION_STATUSES } from '../../invocations/invocation.events';
import { OUTCOMES } from '../../runtime/conversation.types';
import { Id, IdempotencyKey, Optional, Present } from '../../http-kit/dto/field-rules';

/** Body of `POST /v1/invocations`. */
export class RunInvocationDto {
  @ApiProperty({ example: 'demo.arithmetic', description: 'A published operation with a registered feature.' })
  @Id()
  readonly operationId!: string;

  @ApiProperty({ example: 'demo-org', description: 'The organization whose credits pay for it.' })
  @Id()
  readonly organizationId!: string;

  @ApiProperty({
    description: 'The feature’s input, validated by the feature and never stored; for `demo.arithmetic`: `{ question }`.',
    type: 'object',
    additionalProperties: true,
    example: { question: 'What is 6*7?' },
  })
  @Present()
  readonly input!: unknown;

  @ApiPropertyOptional({
    example: 'order#123',
    description:
      'Printable ASCII, scoped to the organization (or the `Idempotency-Key` header). Repeating a key with the same ' +
      'operation and input returns the first request’s result and writes nothing new (waiting for it if it still ' +
      'runs); with another operation or input it is refused with 422 `idempotency_key_reused`.',
  })
  @Optional()
  @IdempotencyKey()
  readonly idempotencyKey?: string;
}

/** Result of `POST /v1/invocations` (docs/http.md), once the invocation is settled or refused. */
export class InvocationResultDto {
  @ApiProperty({ format: 'uuid' })
  readonly invocationId!: string;

  @ApiProperty({ enum: INVOCATION_STATUSES, description: '`settled` or `refused` when the request returns.' })
  readonly state!: string;

  @ApiPropertyOptional({ enum: OUTCOMES, description: 'How the conversation ended; absent for a refusal.' })
  readonly outcome?: string;

  @ApiPropertyOptional({ enum: ADMISSION_REFUSAL_REASONS, description: 'Why admission refused it.' })
  readonly refusalReason?: string;

  @ApiPropertyOptional({ type: 'integer', description: 'The publication version the request was resolved against.' })
  readonly publicationVersion?: number;

  @ApiProperty({ type: 'integer', description: 'Integer credits estimated (the publication’s creditHold).' })
  readonly estimate!: number;

  @ApiProperty({ type: 'integer', description: 'Integer credits charged at settlement.' })
  readonly charge!: number;

  @ApiProperty({ type: 'integer' })
  readonly turnsUsed!: number;

  @ApiProperty({ type: 'integer' })
  readonly toolCallsUsed!: number;
}

/** Result of `POST /v1/invocations`: the settled (or refused) invocation and, when completed, its answer. */
export class RunInvocationResultDto extends InvocationResultDto {
  @ApiPropertyOptional({
    description:
      'The accepted answer of a `completed` invocation: the answer tool’s input (e.g. `{ "value": 42 }`), or the ' +
      'accepted final text. Never stored in the log. A keyed repeat gets it while the first request still runs, ' +
      'and after settlement only if the operation’s feature keeps answers for a retention period.',
  })
  readonly answer?: unknown;

  @ApiPropertyOptional({
    enum: ['not_retained', 'expired'],
    description:
      'Present instead of `answer` when a completed invocation’s answer is no longer available to a keyed repeat: ' +
      'the feature keeps no answers (`not_retained`) or its retention period has passed (`expired`).',
  })
  readonly answerUnavailable?: string;
}

/** A gateway call's key and model (docs/gateway.md), in the invocation's status and in the list. */
export class InvocationGatewayDto {
  @ApiProperty({ description: 'The gateway key that made the call.' })
  readonly keyId!: string;

  @ApiProperty({ example: 'ci-bot', description: 'The key’s name when the call was made.' })
  readonly keyName!: string;

  @ApiProperty({ example: 'claude-sonnet-5-5', description: 'The model asked for, as the rate card names it.' })
  readonly model!: string;

  @ApiPropertyOptional({ description: 'The key’s team when the call was made (docs/gateway.md "Teams"); absent: none.' })
  readonly teamId?: string;
}

/** Result of `GET /v1/invocations/:id`: where the invocation is in its lifecycle. */
export class InvocationStatusDto extends InvocationResultDto {
  @ApiProperty()
  readonly organizationId!: string;

  @ApiProperty({ description: '`gateway.anthropic-messages` for a gateway call.' })
  readonly operationId!: string;

  @ApiPropertyOptional({ type: InvocationGatewayDto, description: 'Present for a gateway call only: its key and model.' })
  readonly gateway?: InvocationGatewayDto;

  @ApiPropertyOptional({ description: 'The published bound that ended the conversation, e.g. `maxTurns`.' })
  readonly endingLimit?: string;

  @ApiPropertyOptional({ description: 'The fault classification of a failed conversation (docs/rules.md rules 05–06).' })
  readonly fault?: string;

  @ApiProperty({ type: 'integer', description: 'Integer credits the conversation’s attempts cost.' })
  readonly spentCredits!: number;

  @ApiPropertyOptional({
    type: 'integer',
    description: 'A gateway call whose attempt was priced above its hold: charged its hold, and the rest recorded here as its overrun (docs/gateway.md "Settlement"). Absent when none.',
  })
  readonly overrunCredits?: number;

  @ApiProperty({ type: 'integer', description: 'Provider attempts made, retries included.' })
  readonly attemptCount!: number;

  @ApiProperty({ format: 'date-time' })
  readonly estimatedAt!: string;

  @ApiPropertyOptional({ format: 'date-time' })
  readonly settledAt?: string;
}

/** Result of `POST /v1/invocations/:id/cancel`: the request as recorded. */
export class CancellationRequestedDto {
  @ApiProperty()
  readonly invocationId!: string;

  @ApiProperty({ enum: ['estimated', 'reserved', 'dispatched'], description: 'The state when the request was recorded.' })
  readonly state!: string;

  @ApiProperty({ example: 'org_member of demo-org', description: 'Who asked: the role and organization of the token (never the token).' })
  readonly requestedBy!: string;

  @ApiProperty({ format: 'date-time', description: 'When the first request was recorded.' })
  readonly requestedAt!: string;
}

/** Result of `POST /v1/invocations` with `Prefer: respond-async` (202): the invocation is under way. */
export class InvocationAcceptedDto {
  @ApiProperty()
  readonly invocationId!: string;

  @ApiProperty({ enum: INVOCATION_STATUSES, description: 'Where it is now; `GET /v1/invocations/:id` is the poll.' })
  readonly state!: string;
}

/** One provider attempt in an event-stream message. */
export class AttemptProgressDto {
  @ApiProperty({ type: 'integer', minimum: 1, description: '1-based turn number.' })
  readonly turn!: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: '0 for the first try of the turn.' })
  readonly retry!: number;

  @ApiProperty({ description: '`ok` or the fault classification of docs/rules.md rules 05–06.' })
  readonly classification!: string;

  @ApiProperty()
  readonly model!: string;

  @ApiProperty({ type: 'integer', minimum: 0 })
  readonly durationMs!: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Integer credits, rounded up.' })
  readonly priceCredits!: number;
}

/**
 * The `data` of each message of `GET /v1/invocations/:id/events`: a public view of one event of the
 * invocation's stream, never the stored event (no idempotency key, no fingerprint, no conversation text).
 */
export class InvocationProgressDto {
  @ApiProperty({ enum: INVOCATION_EVENT_TYPES, description: 'The event type; also the SSE `event`.' })
  readonly type!: string;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'The event’s revision in the invocation’s stream; also the SSE `id`.' })
  readonly revision!: number;

  @ApiProperty({ format: 'date-time', description: 'When it happened, by the ledger’s clock.' })
  readonly time!: string;

  @ApiProperty()
  readonly invocationId!: string;

  @ApiProperty({ enum: INVOCATION_STATUSES, description: 'The lifecycle state after this event (a cancellation request changes none).' })
  readonly state!: string;

  @ApiPropertyOptional({ description: '`InvocationEstimated`.' })
  readonly operationId?: string;

  @ApiPropertyOptional({ description: '`InvocationEstimated`.' })
  readonly organizationId?: string;

  @ApiPropertyOptional({ type: InvocationGatewayDto, description: '`InvocationEstimated` of a gateway call: its key and model.' })
  readonly gateway?: InvocationGatewayDto;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: '`InvocationEstimated`: the publication version in force (a gateway call’s rate card version).' })
  readonly publicationVersion?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`InvocationEstimated`: integer credits estimated.' })
  readonly estimate?: number;

  @ApiPropertyOptional({ enum: ADMISSION_REFUSAL_REASONS, description: '`InvocationRefused`.' })
  readonly refusalReason?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`InvocationReserved`: integer credits held.' })
  readonly creditHold?: number;

  @ApiPropertyOptional({ type: AttemptProgressDto, description: '`AttemptRecorded`.' })
  readonly attempt?: AttemptProgressDto;

  @ApiPropertyOptional({ enum: OUTCOMES, description: '`InvocationCompleted`, `InvocationFailed`.' })
  readonly outcome?: string;

  @ApiPropertyOptional({ description: '`InvocationCompleted`: the published bound that ended it.' })
  readonly endingLimit?: string;

  @ApiPropertyOptional({ description: '`InvocationFailed`: the fault classification (docs/rules.md rules 05–06).' })
  readonly fault?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`InvocationCompleted`, `InvocationFailed`.' })
  readonly turnsUsed?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`InvocationCompleted`, `InvocationFailed`.' })
  readonly toolCallsUsed?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`InvocationCompleted`, `InvocationFailed`: integer credits.' })
  readonly spentCredits?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`InvocationCompleted`, `InvocationFailed`.' })
  readonly attemptCount?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`InvocationSettled`: integer credits charged.' })
  readonly charge?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 8, maximum: 14, description: '`InvocationSettled`: the lifecycle transition that settled it (docs/lifecycle.md).' })
  readonly settlementTransition?: number;

  @ApiPropertyOptional({ description: '`InvocationCancellationRequested`: the role and organization that asked.' })
  readonly requestedBy?: string;
}
