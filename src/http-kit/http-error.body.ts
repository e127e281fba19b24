import { HttpException, HttpStatus } from '@nestjs/common';

/**
 * The one shape of every error the HTTP API returns (docs/http.md "Errors"). Clients branch on `code`;
 * `message` is for people; `fields` names each bad input field by its dotted path in the body
 * (`limits.maxTurns`) with what is wrong with it; `requestId` is the id the request's log line carries.
 */
export interface HttpErrorBody {
  readonly statusCode: number;
  /** The HTTP reason phrase, e.g. `Bad Request`. */
  readonly error: string;
  readonly code: HttpErrorCode;
  readonly message: string;
  /** For `invalid_request` (and `idempotency_key_reused`): field path → problems with that field. */
  readonly fields?: Readonly<Record<string, readonly string[]>>;
  readonly requestId: string;
}

export const HTTP_ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'idempotency_key_reused',
  'headers_too_large',
  'unavailable',
  'internal_error',
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];

export type FieldProblems = Record<string, string[]>;

/** Bad input, with every problem found named by its field. Rendered as 400 `invalid_request`. */
export class InvalidRequestException extends HttpException {
  constructor(readonly fields: Readonly<FieldProblems>) {
    super(`Invalid request: ${Object.keys(fields).join(', ')}`, HttpStatus.BAD_REQUEST);
  }

  static of(field: string, problem: string): InvalidRequestException {
    return new InvalidRequestException({ [field]: [problem] });
  }
}

/**
 * A read-model or resource that does not exist, or that belongs to another organization: both read
 * the same, so a caller cannot tell whether another organization's resource exists (docs/http.md "Errors").
 */
export class ResourceNotFoundException extends HttpException {
  constructor(kind: string, id: string) {
    super(`${kind} "${id}" was not found`, HttpStatus.NOT_FOUND);
  }
}
