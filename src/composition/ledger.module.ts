import { ConfigurableModuleBuilder, Module, type DynamicModule } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { LEDGER_CONFIG } from '../config/ledger.config';
import { DemoModule } from '../demo/demo.module';
import { DemoArithmeticModule } from '../features/demo-arithmetic/demo-arithmetic.module';
import { HTTP_ROUTE_PREFIX, routePrefixPath } from '../http-kit/http-route-prefix';
import { ObservabilityModule } from '../observability/observability.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { WEBHOOKS_CONFIG, webhooksConfigProvider } from '../webhooks/webhooks.config';
import { OBSERVABILITY_CONFIG, observabilityConfigProvider } from '../observability/observability.config';
import { EventStoreModule } from './event-store.module';
import { ledgerConfigProvider } from './ledger-config.provider';
import { LedgerCoreModule } from './ledger-core.module';
import type { LedgerModuleExtras, LedgerModuleOptions } from './ledger-module.options';
import { ReadSideModule } from './read-side.module';
import { HttpApiModule } from './http-api.module';

const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<LedgerModuleOptions>({ moduleName: 'Ledger' })
  .setClassMethodName('forRoot')
  .setExtras<LedgerModuleExtras>({ http: false, demo: false }, compose)
  .build();

/** The token LedgerModule's options are provided under. */
export const LEDGER_MODULE_OPTIONS = MODULE_OPTIONS_TOKEN;

/**
 * The ledger, as one module: configuration, the event store, the read side, the accounting core (the
 * command handlers, the feature and provider registries, the clock) and, when asked for, the HTTP API
 * and the demo. Import it once, in the application's root module:
 *
 *     LedgerModule.forRoot({ store: 'sqlite:./var/ledger.sqlite' })
 *     LedgerModule.forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (c) => ({ store: c.get('STORE') }) })
 *
 * Global, so a feature module anywhere registers operations (LedgerFeaturesModule.register) and
 * dispatches commands without importing it again. The service's own main.ts is built from it too.
 */
@Module({})
export class LedgerModule extends ConfigurableModuleClass {}

function compose(definition: DynamicModule, extras: LedgerModuleExtras): DynamicModule {
  const http = extras.http === undefined ? false : extras.http;
  const demo = extras.demo === true;
  const httpModules: NonNullable<DynamicModule['imports']> =
    http === false
      ? []
      : [HttpApiModule, ...(http.prefix === undefined ? [] : [RouterModule.register([{ path: http.prefix, module: HttpApiModule }])])];
  return {
    ...definition,
    global: true,
    imports: [
      ...(definition.imports ?? []),
      CqrsModule.forRoot(),
      EventStoreModule,
      ReadSideModule,
      LedgerCoreModule,
      ObservabilityModule,
      WebhooksModule,
      ...httpModules,
      // The demo's seeding adds tokens to the API, so without HTTP only its operation is registered.
      ...(demo ? [DemoArithmeticModule, ...(http === false ? [] : [DemoModule])] : []),
    ],
    providers: [
      ...(definition.providers ?? []),
      ledgerConfigProvider(MODULE_OPTIONS_TOKEN, extras),
      observabilityConfigProvider(MODULE_OPTIONS_TOKEN),
      webhooksConfigProvider(MODULE_OPTIONS_TOKEN),
      ...(http === false ? [] : [{ provide: HTTP_ROUTE_PREFIX, useValue: routePrefixPath(http.prefix) }]),
    ],
    exports: [...(definition.exports ?? []), LEDGER_CONFIG, OBSERVABILITY_CONFIG, WEBHOOKS_CONFIG, ...(http === false ? [] : [HTTP_ROUTE_PREFIX])],
  };
}
