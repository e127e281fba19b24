import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { registerDecorator } from 'class-validator';
import { Optional } from '../../http-kit/dto/field-rules';

/** Most events one `GET /v1/streams/:streamName` returns; follow `nextFrom` for the rest. */
export const MAX_STREAM_PAGE_EVENTS = 1_000;
/** Longest `from` accepted, in digits: a revision is a 64-bit unsigned integer (20 digits). */
const MAX_REVISION_DIGITS = 20;
const REVISION_DIGITS = new RegExp(`^\\d{1,${MAX_REVISION_DIGITS}}$`);

function Revision(): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    // Documented as the integer it spells (a 64-bit revision: no maximum a JSON number could state exactly).
    ApiProperty({ type: 'integer', minimum: 0 })(target, propertyName);
    registerDecorator({
      name: 'revision',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (value: unknown) => typeof value === 'string' && REVISION_DIGITS.test(value),
        defaultMessage: () => 'must be a stream revision: a whole number from 0',
      },
    });
  };
}

/** Query of `GET /v1/streams/:streamName`. */
export class StreamQueryDto {
  @ApiPropertyOptional({ description: `First revision to return (0-based, inclusive, at most ${MAX_REVISION_DIGITS} digits); default 0.`, example: 0 })
  @Optional()
  @Revision()
  readonly from?: string;
}

/** One recorded event. Revisions and positions are 64-bit integers, sent as decimal strings. */
export class RecordedEventDto {
  @ApiProperty({ format: 'uuid' })
  readonly id!: string;

  @ApiProperty({ example: 'InvocationEstimated' })
  readonly type!: string;

  @ApiProperty({ description: '0-based position within the stream (decimal string).', example: '0' })
  readonly revision!: string;

  @ApiProperty({ description: 'Position in the global log (decimal string).', example: '42' })
  readonly position!: string;

  @ApiProperty({ format: 'date-time' })
  readonly recordedAt!: string;

  @ApiProperty({ type: 'object', additionalProperties: true })
  readonly data!: unknown;

  @ApiProperty({ type: 'object', additionalProperties: true })
  readonly metadata!: unknown;
}

/** A page of a stream's events, in order. */
export class StreamPageDto {
  @ApiProperty({ example: 'account-demo-org' })
  readonly streamName!: string;

  @ApiProperty({ description: 'The first revision asked for.' })
  readonly from!: string;

  @ApiProperty({ type: [RecordedEventDto] })
  readonly events!: RecordedEventDto[];

  @ApiPropertyOptional({ description: 'Present when more events follow: pass it as `from` for the next page.' })
  readonly nextFrom?: string;
}
