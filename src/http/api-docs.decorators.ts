import { applyDecorators } from '@nestjs/common';
import { ApiBadRequestResponse, ApiForbiddenResponse, ApiNotFoundResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorBodyDto } from './dto/error-body.dto';

/** The error answers every authenticated route shares, documented once. */
export function ApiAuthenticatedErrors(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiUnauthorizedResponse({ type: ErrorBodyDto, description: 'No token, a malformed header, or an unknown token.' }),
    ApiForbiddenResponse({ type: ErrorBodyDto, description: 'The token’s role may not use this route.' }),
  );
}

export function ApiInvalidRequest(): MethodDecorator {
  return applyDecorators(ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Invalid input; `fields` names each bad field.' }));
}

export function ApiNotFound(description: string): MethodDecorator {
  return applyDecorators(ApiNotFoundResponse({ type: ErrorBodyDto, description }));
}
