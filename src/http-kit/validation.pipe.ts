import { ValidationPipe, type ArgumentMetadata, type ValidationError } from '@nestjs/common';
import { InvalidRequestException, type FieldProblems } from './http-error.body';
import { PROTOTYPE_NAMES } from './json-body.checks';

/**
 * The global pipe: every body and query is checked against its class-validator DTO. Unknown fields are
 * refused (not silently dropped), nothing is coerced (`"5"` is not a number of credits), and every
 * problem is reported at once under its dotted field path.
 */
export function ledgerValidationPipe(): ValidationPipe {
  return new LedgerValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    // One problem per field is enough to fix it; the DTO rules order them from "missing" to "out of range".
    stopAtFirstError: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new InvalidRequestException(fieldProblems(errors)),
  });
}

/**
 * A query parameter named like an Object.prototype member (`?constructor=1`) would slip past the
 * whitelist (the DTO instance "has" it); it is refused as unknown, as the same key in a body is.
 */
class LedgerValidationPipe extends ValidationPipe {
  override transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'query' && typeof value === 'object' && value !== null) {
      const named = Object.keys(value).filter((key) => PROTOTYPE_NAMES.has(key));
      if (named.length > 0) return Promise.reject(new InvalidRequestException(Object.fromEntries(named.map((key) => [key, ['is not a known field']]))));
    }
    return super.transform(value, metadata) as Promise<unknown>;
  }
}

/** Flattens class-validator's tree into `{ 'limits.maxTurns': ['must be at least 1 turns'] }`. */
export function fieldProblems(errors: readonly ValidationError[], parent = ''): FieldProblems {
  const problems: FieldProblems = {};
  const visit = (list: readonly ValidationError[], prefix: string): void => {
    for (const error of list) {
      const path = prefix === '' ? error.property : `${prefix}.${error.property}`;
      for (const [constraint, message] of Object.entries(error.constraints ?? {})) {
        (problems[path] ??= []).push(readable(constraint, message));
      }
      if (error.children !== undefined && error.children.length > 0) visit(error.children, path);
    }
  };
  visit(errors, parent);
  if (Object.keys(problems).length === 0) problems['body'] = ['is not valid'];
  return problems;
}

/** class-validator's built-in texts repeat the property name; ours name the field once, in the key. */
function readable(constraint: string, message: string): string {
  switch (constraint) {
    case 'whitelistValidation':
      return 'is not a known field';
    case 'nestedValidation':
      return 'must be an object';
    case 'unknownValue':
      return 'must be a JSON object';
    default:
      return message;
  }
}
