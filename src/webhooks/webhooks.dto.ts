import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, ValidateBy } from 'class-validator';
import { DELIVERABLE_EVENT_TYPES, MAX_DELIVERY_ATTEMPTS, MAX_WEBHOOK_URL_CHARS, type DeliverableEventType } from './webhook.bounds';
import { OneOf } from '../http-kit/dto/field-rules';
import { hasControlCharacter } from './webhook-address.policy';

/**
 * An http(s) URL without control characters, at most MAX_WEBHOOK_URL_CHARS long. URL parsing drops a
 * CR, LF or TAB silently, so the text is checked before it is parsed (and stored as it was sent).
 */
function urlProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0) return 'must be an http or https URL';
  if (value.length > MAX_WEBHOOK_URL_CHARS) return `must be at most ${MAX_WEBHOOK_URL_CHARS} characters`;
  if (hasControlCharacter(value)) return 'must not contain control characters (such as CR, LF or TAB)';
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? undefined : 'must be an http or https URL';
  } catch {
    return 'must be an http or https URL';
  }
}

function WebhookUrl(): PropertyDecorator {
  return ValidateBy({
    name: 'webhookUrl',
    validator: { validate: (value: unknown) => urlProblem(value) === undefined, defaultMessage: (args) => urlProblem(args?.value) ?? 'is not valid' },
  });
}

/** Body of `POST /v1/organizations/:organizationId/webhooks`. */
export class RegisterWebhookDto {
  @ApiProperty({ maxLength: MAX_WEBHOOK_URL_CHARS, example: 'https://example.com/hooks/ledger', description: 'Where each delivery is POSTed.' })
  @WebhookUrl()
  readonly url!: string;

  @ApiProperty({ enum: DELIVERABLE_EVENT_TYPES, isArray: true, description: 'The event types to deliver.' })
  @IsArray({ message: 'must be an array' })
  @ArrayMinSize(1, { message: 'must name at least one event type' })
  @ArrayMaxSize(DELIVERABLE_EVENT_TYPES.length, { message: `must hold at most ${DELIVERABLE_EVENT_TYPES.length} event types` })
  @ArrayUnique({ message: 'must not repeat an event type' })
  @OneOf(DELIVERABLE_EVENT_TYPES, { each: true })
  readonly events!: DeliverableEventType[];
}

export class RegisteredWebhookDto {
  @ApiProperty()
  readonly webhookId!: string;

  @ApiProperty({ description: 'Signs every delivery (Ledger-Signature). Shown here only: keep it.' })
  readonly secret!: string;
}

export class WebhookDto {
  @ApiProperty()
  readonly webhookId!: string;

  @ApiProperty()
  readonly organizationId!: string;

  @ApiProperty()
  readonly url!: string;

  @ApiProperty({ enum: DELIVERABLE_EVENT_TYPES, isArray: true })
  readonly events!: string[];

  @ApiProperty()
  readonly createdAt!: string;
}

export class WebhookListDto {
  @ApiProperty({ type: [WebhookDto] })
  readonly webhooks!: WebhookDto[];
}

export class DeliveryAttemptDto {
  @ApiProperty({ type: 'integer', description: `1 to ${MAX_DELIVERY_ATTEMPTS}.` })
  readonly attempt!: number;

  @ApiProperty()
  readonly at!: string;

  @ApiPropertyOptional({ type: 'integer', description: 'The receiver’s HTTP status, when it answered.' })
  readonly statusCode?: number;

  @ApiPropertyOptional({ description: 'Why there was no answer (timeout, connection error code).' })
  readonly error?: string;

  @ApiProperty({ type: 'integer' })
  readonly durationMs!: number;
}

export class DeliveryDto {
  @ApiProperty({ description: 'The Ledger-Delivery header: the same on every attempt and re-send.' })
  readonly deliveryId!: string;

  @ApiProperty({ enum: DELIVERABLE_EVENT_TYPES })
  readonly type!: string;

  @ApiProperty()
  readonly occurredAt!: string;

  @ApiProperty({ enum: ['pending', 'delivered', 'dead_lettered', 'cancelled'] })
  readonly status!: string;

  @ApiProperty({ type: [DeliveryAttemptDto] })
  readonly attempts!: DeliveryAttemptDto[];

  @ApiPropertyOptional({ description: 'When the next attempt is due, while pending.' })
  readonly nextAttemptAt?: string;
}

export class DeliveryListDto {
  @ApiProperty({ type: [DeliveryDto] })
  readonly deliveries!: DeliveryDto[];
}
