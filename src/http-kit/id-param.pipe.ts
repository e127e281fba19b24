import { Injectable, Param, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';
import { ID_SCHEMA, idProblem } from './dto/field-rules';
import { InvalidRequestException } from './http-error.body';

/**
 * Checks an id taken from the path exactly as the same id in a body is checked (charset, length),
 * before anything reads or writes with it: `POST /v1/organizations/%00/grants` is a 400 naming
 * `organizationId`, never a write to `account-\u0000`.
 */
@Injectable()
export class IdParamPipe implements PipeTransform<unknown, string> {
  transform(value: unknown, metadata: ArgumentMetadata): string {
    const problem = idProblem(value);
    if (problem !== undefined) throw InvalidRequestException.of(metadata.data ?? 'path', problem);
    return value as string;
  }
}

/**
 * A path id, checked by IdParamPipe and documented with the same charset and length (ID_SCHEMA), so
 * the OpenAPI document states exactly the rule the route enforces.
 */
export function IdParam(name: string): ParameterDecorator {
  return (target: object, method: string | symbol | undefined, index: number) => {
    Param(name, IdParamPipe)(target, method, index);
    const descriptor = method === undefined ? undefined : Object.getOwnPropertyDescriptor(target, method);
    if (descriptor !== undefined) ApiParam({ name, required: true, schema: { ...ID_SCHEMA } })(target, method!, descriptor);
  };
}
