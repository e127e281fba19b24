import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { MODULE_METADATA } from '@nestjs/common/constants';
import { AlertsHttpModule } from '../alerts/alerts-http.module';
import { GatewayAdminHttpModule } from '../gateway/gateway-admin-http.module';
import { GatewayHttpModule } from '../gateway/gateway-http.module';
import { GatewayModule } from '../gateway/gateway.module';
import { CoreHttpModule } from '../http/core-http.module';
import { ObservabilityHttpModule } from '../observability/observability-http.module';
import { WebhooksHttpModule } from '../webhooks/webhooks-http.module';
import { OBSERVABILITY } from './read-side.features';
import { ReadSideModule } from './read-side.module';

/**
 * The HTTP modules of the features, each listing its own controllers (docs/architecture.md, "where
 * does my change go"), mounted under `http.prefix`. The order is the OpenAPI document's order.
 */
export const LEDGER_HTTP_MODULES: readonly DynamicModule[] = [
  CoreHttpModule.register({ readSide: ReadSideModule }),
  ObservabilityHttpModule.register({ observability: OBSERVABILITY }),
  { module: AlertsHttpModule },
  { module: WebhooksHttpModule },
  { module: GatewayAdminHttpModule },
];

/** Every controller those modules mount, in their order (docs/http.md). */
export const LEDGER_CONTROLLERS: readonly Type[] = LEDGER_HTTP_MODULES.flatMap(
  ({ module }) => (Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, module) as Type[] | undefined) ?? [],
);

/** The `/anthropic` routes, given the gateway's accounting side to admit and settle each call through. */
const GATEWAY_ROUTES: DynamicModule = { module: GatewayHttpModule, imports: [GatewayModule] };

/**
 * The HTTP API, mounted by LedgerModule when `http` is set. Every controller is a @LedgerApi(): each
 * route needs a bearer token unless marked @Public, every body is validated, and every error leaves
 * through HttpErrorFilter. Nothing is bound application-wide, so an embedding application's own
 * routes keep their own rules. The transport only dispatches commands and reads read models: it
 * decides nothing.
 */
@Module({
  imports: [...LEDGER_HTTP_MODULES, GATEWAY_ROUTES],
})
export class HttpApiModule {}
