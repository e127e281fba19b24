import { EXCEPTION_FILTERS_METADATA, GUARDS_METADATA, MODULE_METADATA, PIPES_METADATA } from '@nestjs/common/constants';
import { ValidationPipe } from '@nestjs/common';
import { BearerTokenGuard } from '../../src/http-kit/auth/bearer-token.guard';
import { BodyErrorGuard } from '../../src/http-kit/body-error.guard';
import { HttpErrorFilter } from '../../src/http-kit/http-error.filter';
import { HttpApiModule, LEDGER_CONTROLLERS, LEDGER_HTTP_MODULES } from '../../src/composition/http-api.module';

/**
 * The API's guards, pipe and filter are bound per controller (@LedgerApi), not application-wide, so
 * an embedding application's routes keep their own. The price is that a controller without them would
 * be open to anyone: every controller the HTTP module mounts must carry them.
 */
describe('every controller of the HTTP API is a @LedgerApi()', () => {
  const controllers = LEDGER_HTTP_MODULES.flatMap(({ module }) => Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, module) as Function[]);

  it('mounts the features\' HTTP modules, each with its own controllers, and lists no controller of its own', () => {
    const imports = Reflect.getMetadata(MODULE_METADATA.IMPORTS, HttpApiModule) as unknown[];
    expect(imports.slice(0, LEDGER_HTTP_MODULES.length)).toEqual(LEDGER_HTTP_MODULES);
    expect(Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, HttpApiModule)).toBeUndefined();
    expect(controllers.length).toBeGreaterThan(LEDGER_HTTP_MODULES.length);
    expect(LEDGER_CONTROLLERS).toEqual(controllers);
  });

  it.each(controllers.map((controller) => [controller.name, controller] as const))('%s: bearer token, then refused body; the validation pipe; the error filter', (_name, controller) => {
    expect(Reflect.getMetadata(GUARDS_METADATA, controller)).toEqual([BearerTokenGuard, BodyErrorGuard]);
    const pipes = Reflect.getMetadata(PIPES_METADATA, controller) as unknown[];
    expect(pipes).toHaveLength(1);
    expect(pipes[0]).toBeInstanceOf(ValidationPipe);
    expect(Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, controller)).toEqual([HttpErrorFilter]);
  });
});
