import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { HTTP_ERROR_CODES, type HttpErrorBody } from '../http-error.body';

/** The body of every error response (see http-error.body.ts). */
export class ErrorBodyDto implements HttpErrorBody {
  @ApiProperty({ type: 'integer', example: 400 })
  readonly statusCode!: number;

  @ApiProperty({ example: 'Bad Request' })
  readonly error!: string;

  @ApiProperty({ enum: HTTP_ERROR_CODES, example: 'invalid_request' })
  readonly code!: (typeof HTTP_ERROR_CODES)[number];

  @ApiProperty({ example: 'Invalid request: limits.maxTurns' })
  readonly message!: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string' } },
    example: { 'limits.maxTurns': ['must be at least 1 turns'] },
    description: 'For 400: each bad field by its dotted path, with what is wrong with it.',
  })
  readonly fields?: Record<string, string[]>;

  @ApiProperty({ description: 'The id the request’s log line carries (also in the X-Request-Id header).' })
  readonly requestId!: string;
}
