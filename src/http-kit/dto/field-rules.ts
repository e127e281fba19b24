/**
 * class-validator rules shared by the DTOs, each with one message that names the unit. The messages
 * match the domain's own checks (src/domain/field-checks.ts), which re-check every command anyway.
 */
import { ApiProperty } from '@nestjs/swagger';
import { registerDecorator, ValidateIf, type ValidationArguments, type ValidationOptions } from 'class-validator';
import { ID_PATTERN, ID_PATTERN_TEXT, IDEMPOTENCY_KEY_PATTERN_TEXT, idempotencyKeyProblem, MAX_ID_CHARS, MAX_IDEMPOTENCY_KEY_CHARS } from '../../domain/field-checks';

/**
 * What the OpenAPI document says of a field a rule checks: each rule states its own type and bounds
 * from the constants it checks against, so the document cannot drift from the validation. A DTO's
 * `@ApiProperty` adds the description and example (and `required: false` with `@ApiPropertyOptional`).
 */
export interface FieldSchema {
  readonly type: 'string' | 'integer' | 'boolean';
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
}

/** An id's schema, in a body, a query or a path: the same charset and length as idProblem checks. */
export const ID_SCHEMA = { type: 'string', minLength: 1, maxLength: MAX_ID_CHARS, pattern: ID_PATTERN_TEXT } as const;
/** An idempotency key's schema (docs/http.md "Idempotency keys"), as idempotencyKeyProblem checks it. */
export const IDEMPOTENCY_KEY_SCHEMA = { type: 'string', minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_CHARS, pattern: IDEMPOTENCY_KEY_PATTERN_TEXT } as const;

export interface WholeNumberBounds {
  readonly min: number;
  readonly max: number;
  /** Unit for the message: `turns`, `credits`, `ms`… */
  readonly unit: string;
}

/** A required safe integer within bounds: money, counts and durations are never fractional. */
export function WholeNumber(bounds: WholeNumberBounds, options?: ValidationOptions): PropertyDecorator {
  return fieldRule('wholeNumber', options, (value) => wholeNumberProblem(value, bounds), { type: 'integer', minimum: bounds.min, maximum: bounds.max });
}

export function wholeNumberProblem(value: unknown, { min, max, unit }: WholeNumberBounds): string | undefined {
  if (value === undefined || value === null) return absent(value);
  // 1e30 is a whole number, only too large: say the bound (every bound lies within the safe range).
  if (typeof value !== 'number' || !Number.isInteger(value)) return `must be a whole number of ${unit}`;
  if (value < min) return min === 0 ? 'must not be negative' : `must be at least ${min} ${unit}`;
  if (value > max) return `must be at most ${max} ${unit}`;
  return undefined;
}

/** Longest whole number a query string may spell, in digits: every query bound is far below 10^15. */
const MAX_QUERY_NUMBER_DIGITS = 15;
const QUERY_WHOLE_NUMBER = new RegExp(`^\\d{1,${MAX_QUERY_NUMBER_DIGITS}}$`);

/**
 * A query-string parameter that must spell a whole number within bounds (`?limit=50`): query values
 * arrive as text, and `5.0`, `1e3`, `-1` or a repeated parameter are refused, not coerced.
 */
export function QueryWholeNumber(bounds: WholeNumberBounds, options?: ValidationOptions): PropertyDecorator {
  return fieldRule(
    'queryWholeNumber',
    options,
    (value) => {
      if (value === undefined || value === null) return absent(value);
      if (typeof value !== 'string' || !QUERY_WHOLE_NUMBER.test(value)) return `must be a whole number of ${bounds.unit}`;
      return wholeNumberProblem(Number(value), bounds);
    },
    { type: 'integer', minimum: bounds.min, maximum: bounds.max },
  );
}

/** A required non-blank string of at most `maxChars` characters. */
export function Text(maxChars: number, options?: ValidationOptions): PropertyDecorator {
  return fieldRule(
    'text',
    options,
    (value) => {
      if (value === undefined || value === null) return absent(value);
      if (typeof value !== 'string' || value.trim() === '') return 'must be a non-empty string';
      if (value.length > maxChars) return `must be at most ${maxChars} characters`;
      return undefined;
    },
    { type: 'string', minLength: 1, maxLength: maxChars },
  );
}

/**
 * A required idempotency key: printable ASCII, 1 to MAX_IDEMPOTENCY_KEY_CHARS characters
 * (docs/http.md "Idempotency keys").
 */
export function IdempotencyKey(options?: ValidationOptions): PropertyDecorator {
  return fieldRule('idempotencyKey', options, idempotencyKeyProblem, IDEMPOTENCY_KEY_SCHEMA);
}

/** A required id: letters, digits and `. _ : -`, at most MAX_ID_CHARS characters. */
export function Id(options?: ValidationOptions): PropertyDecorator {
  return fieldRule('id', options, idProblem, ID_SCHEMA);
}

/**
 * What is wrong with an id, in a body or in a path alike: MAX_ID_CHARS keeps every stream name made
 * from one (`snapshot-account-<id>` is the longest) within the store's MAX_STREAM_NAME_LENGTH.
 */
export function idProblem(value: unknown): string | undefined {
  if (value === undefined || value === null) return absent(value);
  if (typeof value !== 'string' || value.length === 0) return 'must be a non-empty string';
  if (value === EMPTY_PATH_SEGMENT) return 'must not be empty';
  if (value.includes(MALFORMED_PERCENT_ENCODING)) return 'is not valid percent-encoded UTF-8';
  if (value.length > MAX_ID_CHARS) return `must be at most ${MAX_ID_CHARS} characters`;
  if (!ID_PATTERN.test(value)) return 'must start with a letter or digit and hold only letters, digits and . _ : -';
  return undefined;
}

/**
 * What a path segment that is not valid percent-encoding reads as (U+FFFD, the replacement
 * character), so the route still matches and the id's own check names the field.
 */
export const MALFORMED_PERCENT_ENCODING = '\uFFFD';

/**
 * What an empty path segment (`/v1/operations//publications`, `/v1/invocations/`) reads as when no
 * route matches the path as sent but one matches with a parameter there (U+FFFE, a noncharacter), so
 * the route answers 400 naming the parameter instead of an unknown route's 404.
 */
export const EMPTY_PATH_SEGMENT = '\uFFFE';

export function Bool(options?: ValidationOptions): PropertyDecorator {
  return fieldRule(
    'bool',
    options,
    (value) => {
      if (value === undefined || value === null) return absent(value);
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    },
    { type: 'boolean' },
  );
}

export function OneOf(allowed: readonly string[], options?: ValidationOptions): PropertyDecorator {
  return fieldRule('oneOf', options, (value) => {
    if (value === undefined || value === null) return absent(value);
    return typeof value === 'string' && allowed.includes(value) ? undefined : `must be one of ${allowed.join(', ')}`;
  });
}

/** A required JSON object (not an array, not null); its fields are checked by the nested DTO. */
export function JsonObject(options?: ValidationOptions): PropertyDecorator {
  return fieldRule('jsonObject', options, (value) => {
    if (value === undefined || value === null) return absent(value);
    return typeof value === 'object' && !Array.isArray(value) ? undefined : 'must be an object';
  });
}

/** Any JSON value, but present. */
export function Present(options?: ValidationOptions): PropertyDecorator {
  return fieldRule('present', options, (value) => (value === undefined || value === null ? absent(value) : undefined));
}

/**
 * The field may be left out; when it is given, it is checked (and `null` is not "left out": it is
 * refused as a wrong value rather than read as absent).
 */
export function Optional(): PropertyDecorator {
  return ValidateIf((_object: object, value: unknown) => value !== undefined);
}

/** What is wrong with a value that is not there: left out, or sent as null. */
export function absent(value: undefined | null): string {
  return value === undefined ? 'is required' : 'must not be null';
}

/**
 * A class-validator rule from one problem function (undefined: the value is fine) and the schema the
 * OpenAPI document states for it. A feature's DTO builds its own field rule from this.
 */
export function fieldRule(name: string, options: ValidationOptions | undefined, problem: (value: unknown) => string | undefined, schema?: FieldSchema): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name,
      target: target.constructor,
      propertyName: propertyName as string,
      ...(options === undefined ? {} : { options }),
      validator: {
        validate: (value: unknown) => problem(value) === undefined,
        defaultMessage: (args?: ValidationArguments) => problem(args?.value) ?? 'is not valid',
      },
    });
    // A rule over each item of an array describes the items, which the DTO's own `items` does.
    if (schema !== undefined && options?.each !== true) ApiProperty({ ...schema })(target, propertyName);
  };
}
