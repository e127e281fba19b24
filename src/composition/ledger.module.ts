import { ConfigurableModuleBuilder, Module, type DynamicModule } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { LEDGER_CONFIG } from '../config/ledger.config';
import { DemoModule } from '../demo/demo.module';
import { DemoArithmeticModule } from '../features/demo-arithmetic/demo-arithmetic.module';
import { HTTP_ROUTE_PREFIX, routePrefixPath } from '../http-kit/http-route-prefix';
import { AccountsModule } from '../accounts/accounts.module';
import { AlertsModule } from '../alerts/alerts.module';
import { CatalogModule } from '../catalog/catalog.module';
import { InvocationsModule } from '../invocations/invocations.module';
import { LedgerEventsModule } from '../ledger-events/ledger-events.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { WEBHOOKS_CONFIG, webhooksConfigProvider } from '../webhooks/webhooks.config';
import { OBSERVABILITY_CONFIG, observabilityConfigProvider } from '../observability/observability.config';
import { InvocationPortsModule } from './invocation-ports.module';
import { ledgerConfigProvider } from './ledger-config.provider';
import { LedgerFoundationsModule } from './ledger-foundations.module';
import { OBSERVABILITY, QUERIES } from './read-side.features';
import type { LedgerModuleExtras, LedgerModuleOptions } from './ledger-module.options';
import { ReadSideModule } from './read-side.module';
import { HttpApiModule, LEDGER_HTTP_MODULES } from './http-api.module';

const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<LedgerModuleOptions>({ moduleName: 'Ledger' })
  .setClassMethodName('forRoot')
  .setExtras<LedgerModuleExtras>({ http: false, demo: false }, compose)
  .build();

/** The token LedgerModule's options are provided under. */
export const LEDGER_MODULE_OPTIONS = MODULE_OPTIONS_TOKEN;

/**
 * The ledger, as one module: it composes the feature modules (catalog, accounts, invocations, the
 * read side, committed events, alerts, observability, webhooks and, when asked for, the HTTP API and
 * the demo) over the foundations (configuration, event store, clock). Import it once, in the
 * application's root module:
 *
 *     LedgerModule.forRoot({ store: 'sqlite:./var/ledger.sqlite' })
 *     LedgerModule.forRootAsync({ imports: [ConfigModule], inject: [ConfigService], useFactory: (c) => ({ store: c.get('STORE') }) })
 *
 * Global, because a module configured once by forRoot cannot be imported again: the feature modules
 * read its configuration (LEDGER_CONFIG, OBSERVABILITY_CONFIG, WEBHOOKS_CONFIG) through it, and a
 * feature module anywhere registers operations (LedgerFeaturesModule.register) and dispatches
 * commands without importing it. The service's own main.ts is built from it too.
 */
@Module({})
export class LedgerModule extends ConfigurableModuleClass {}

function compose(definition: DynamicModule, extras: LedgerModuleExtras): DynamicModule {
  const http = extras.http === undefined ? false : extras.http;
  const demo = extras.demo === true;
  const prefix = http === false ? undefined : http.prefix;
  const prefixed = prefix === undefined ? [] : [RouterModule.register(LEDGER_HTTP_MODULES.map(({ module }) => ({ path: prefix, module })))];
  const httpModules: NonNullable<DynamicModule['imports']> = http === false ? [] : [HttpApiModule, ...prefixed];
  return {
    ...definition,
    global: true,
    imports: [
      ...(definition.imports ?? []),
      CqrsModule.forRoot(),
      LedgerFoundationsModule,
      ReadSideModule,
      QUERIES,
      CatalogModule,
      AccountsModule,
      InvocationsModule.register({ ports: [InvocationPortsModule] }),
      LedgerEventsModule,
      AlertsModule,
      OBSERVABILITY,
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
