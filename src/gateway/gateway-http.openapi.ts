/**
 * The gateway's routes in the OpenAPI document: a pass-through of Anthropic's API, so the request and
 * answer schemas are Anthropic's own (free-form objects here), and every error is in Anthropic's
 * shape rather than the ledger API's.
 */
import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiHeader, ApiOperation, ApiProperty, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import { STATUS_OF_ANTHROPIC_ERROR_TYPE } from './anthropic-error.body';
import { MAX_GATEWAY_BODY_BYTES } from './anthropic-body.reader';
import type { AnthropicErrorType } from './gateway-call.port';

export const GATEWAY_API_TAG = 'Anthropic gateway';

/** The gateway's controllers, under a tag of their own in the document. */
export const ApiGatewayTag = (): ClassDecorator => ApiTags(GATEWAY_API_TAG);
/** The gateway key, as Anthropic's SDKs send an API key (or, for an auth token, as `Authorization: Bearer`). */
const ApiGatewayKey = (): MethodDecorator =>
  ApiHeader({ name: 'x-api-key', required: false, description: 'A gateway key (`llk_…`); or send it as `Authorization: Bearer <key>`. One of the two is required.' });

class AnthropicErrorDetailDto {
  @ApiProperty({ enum: Object.keys(STATUS_OF_ANTHROPIC_ERROR_TYPE) })
  readonly type!: AnthropicErrorType;

  @ApiProperty()
  readonly message!: string;
}

/** Anthropic's error shape, which every error under `/anthropic` has. */
export class AnthropicErrorBodyDto {
  @ApiProperty({ enum: ['error'] })
  readonly type!: 'error';

  @ApiProperty({ type: AnthropicErrorDetailDto })
  readonly error!: AnthropicErrorDetailDto;

  @ApiProperty({ description: 'The request id (also in the `request-id` header): the gateway’s own for its own answers, Anthropic’s for relayed ones.' })
  readonly request_id!: string;
}

const PASS_THROUGH = 'Anthropic’s own schema, passed through unchanged; see Anthropic’s API reference for its fields.';

const anthropicShaped = (status: number, description: string): MethodDecorator =>
  ApiResponse({ status, description, content: { 'application/json': { schema: { $ref: getSchemaPath(AnthropicErrorBodyDto) } } } });

/** The errors every gateway route can give, in Anthropic's shape. */
function ApiGatewayErrors(): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(AnthropicErrorBodyDto),
    anthropicShaped(401, 'No key, a malformed key, or one that is unknown or revoked (`authentication_error`).'),
    anthropicShaped(431, 'The request’s headers (or its URL) are too large.'),
    anthropicShaped(500, 'The gateway failed, or has no Anthropic key of its own (`api_error`).'),
    anthropicShaped(503, 'The ledger is not available, the service is shutting down, or (a batch route) the batch’s create answer was lost and the gateway is still looking for it upstream (`api_error`, with `retry-after`).'),
  );
}

/** A POST that Anthropic's API defines: the body and answer are Anthropic's, passed through; upstream's errors are relayed. */
export function ApiGatewayPassThrough(summary: string, description: string): MethodDecorator {
  return applyDecorators(
    ApiGatewayKey(),
    ApiOperation({ summary, description: `${description} Request and answer: ${PASS_THROUGH}` }),
    ApiBody({ required: true, schema: { type: 'object', additionalProperties: true, description: `The request, as Anthropic defines it. ${PASS_THROUGH}` } }),
    ApiResponse({
      status: 200,
      description: `Anthropic’s answer, relayed as it arrives: JSON, or Server-Sent Events when the request streams. ${PASS_THROUGH}`,
      content: {
        'application/json': { schema: { type: 'object', additionalProperties: true } },
        'text/event-stream': { schema: { type: 'string' } },
      },
    }),
    ApiGatewayErrors(),
    anthropicShaped(
      400,
      'The body is not JSON, or lacks `model`, `max_tokens` or `messages`, or asks more than a cap allows, or uses a server tool the hold cannot bound (an unknown tool type; code execution or MCP servers the rate card gives no allowance) (`invalid_request_error`, naming the field).',
    ),
    anthropicShaped(402, 'The organization’s credits, or the key’s spend limit, cannot cover the call’s worst case (`billing_error`).'),
    anthropicShaped(403, 'The key may not use the model, or the organization’s AI is off (`permission_error`).'),
    anthropicShaped(404, 'The model is not on the rate card (`not_found_error`).'),
    anthropicShaped(413, `The body is larger than ${MAX_GATEWAY_BODY_BYTES} bytes (\`request_too_large\`).`),
    anthropicShaped(415, 'The body is not JSON, or has a content-encoding (`invalid_request_error`).'),
    anthropicShaped(429, 'The organization runs as many calls as it may (`rate_limit_error`, with `retry-after`); Anthropic’s own, relayed.'),
    anthropicShaped(502, 'The connection to Anthropic failed before its answer began (`api_error`).'),
    anthropicShaped(504, 'Anthropic did not answer within the call’s time bound (`timeout_error`).'),
    anthropicShaped(529, 'Anthropic is overloaded (`overloaded_error`), relayed.'),
  );
}

/** A GET the gateway answers itself from the rate card, in Anthropic's shape. */
export function ApiGatewayRead(summary: string, description: string, errors: readonly (readonly [number, string])[]): MethodDecorator {
  return applyDecorators(
    ApiGatewayKey(),
    ApiOperation({ summary, description }),
    ApiResponse({ status: 200, description: `Anthropic’s shape. ${PASS_THROUGH}`, content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } } }),
    ApiGatewayErrors(),
    ...errors.map(([status, text]) => anthropicShaped(status, text)),
  );
}
