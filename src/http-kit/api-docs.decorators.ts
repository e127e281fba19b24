import { applyDecorators } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiPayloadTooLargeResponse,
  ApiResponse,
  ApiServiceUnavailableResponse,
  ApiUnauthorizedResponse,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import { ErrorBodyDto } from './dto/error-body.dto';
import { MAX_REQUEST_ARRIVAL_MS, MAX_REQUEST_BODY_BYTES } from './http.bounds';

/*
 * The error answers of the routes, each documented once with the one error shape. A route declares
 * every answer it can really give; test/http/openapi-document.spec.ts walks the document and checks it.
 */

/**
 * What every route can answer before it sees the request, in the error shape: a request Node cannot
 * parse or one that sends a single-valued header twice (400), one too slow to arrive (408), headers or
 * a URL past Node's limit (431). docs/http.md "Errors".
 */
export function ApiRequestErrors(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Not valid HTTP (a control character in a header, a malformed header or request line), or a single-valued header sent twice; `fields` names the part.' }),
    ApiResponse({ status: 408, type: ErrorBodyDto, description: `The request took longer than ${MAX_REQUEST_ARRIVAL_MS} ms to arrive.` }),
    ApiResponse({ status: 431, type: ErrorBodyDto, description: 'The request’s headers (or its URL) are too large.' }),
  );
}

/** The error answers every authenticated route shares. */
export function ApiAuthenticatedErrors(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiUnauthorizedResponse({ type: ErrorBodyDto, description: 'No token, a malformed header, or an unknown token.' }),
    ApiForbiddenResponse({ type: ErrorBodyDto, description: 'The token’s role may not use this route.' }),
    ApiRequestErrors(),
  );
}

/** A route that reads or writes the event log or the read models: either may be unavailable for a while. */
export function ApiUnavailable(): MethodDecorator & ClassDecorator {
  return ApiServiceUnavailableResponse({
    type: ErrorBodyDto,
    description: 'The event store or the read models are not available (with `Retry-After`); a keyed request is safe to repeat.',
  });
}

export function ApiInvalidRequest(): MethodDecorator {
  return applyDecorators(ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Invalid input; `fields` names each bad field.' }));
}

export function ApiNotFound(description: string): MethodDecorator {
  return applyDecorators(ApiNotFoundResponse({ type: ErrorBodyDto, description }));
}

/**
 * A route that takes a JSON body and writes: bad input (400), a body too large or not JSON (413, 415),
 * and a conflict (409: by default a concurrent change that won every retry, or the route's own reason).
 */
export function ApiWrite(conflict = 'A concurrent change to the same record won every retry; the request may be repeated.'): MethodDecorator {
  return applyDecorators(
    ApiInvalidRequest(),
    ApiConflictResponse({ type: ErrorBodyDto, description: conflict }),
    ApiPayloadTooLargeResponse({ type: ErrorBodyDto, description: `The body is larger than ${MAX_REQUEST_BODY_BYTES} bytes.` }),
    ApiUnsupportedMediaTypeResponse({ type: ErrorBodyDto, description: 'The body is not JSON, or its Content-Encoding is not gzip, deflate or br.' }),
  );
}

/** A route that deletes: bad input (400: a path id, or a body, which a DELETE never takes) and a conflicting state (409). */
export function ApiDeleteWrite(conflict: string): MethodDecorator {
  return applyDecorators(ApiInvalidRequest(), ApiConflictResponse({ type: ErrorBodyDto, description: conflict }));
}
