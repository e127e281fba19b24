import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TerminusModule } from '@nestjs/terminus';
import { AlertsController } from '../alerts/alerts.controller';
import { GatewayHttpModule } from '../gateway/gateway-http.module';
import { GATEWAY_CONTROLLERS, GatewayModule } from '../gateway/gateway.module';
import { HealthController } from '../http/health.controller';
import { InvocationsController } from '../http/invocations.controller';
import { MeController } from '../http/me.controller';
import { OperationsController } from '../http/operations.controller';
import { OrganizationReadsController } from '../http/organization-reads.controller';
import { OrganizationsController } from '../http/organizations.controller';
import { ReadModelReader } from '../http/read-model.reader';
import { SettlementsController } from '../http/settlements.controller';
import { StreamsController } from '../http/streams.controller';
import { HttpKitModule } from '../http-kit/http-kit.module';
import { MetricsController } from '../observability/metrics.controller';
import { WebhooksController } from '../webhooks/webhooks.controller';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { OBSERVABILITY } from './observability';
import { ReadSideModule } from './read-side.module';

/**
 * Every route of the HTTP API (docs/http.md), in one list: a controller is written in the room of the
 * feature it serves, from the HTTP kit's parts (src/http-kit), and mounted by adding it here
 * (docs/architecture.md, "where does my change go"). The order is the OpenAPI document's order.
 */
export const LEDGER_CONTROLLERS: readonly Type[] = [
  OperationsController,
  OrganizationsController,
  OrganizationReadsController,
  InvocationsController,
  StreamsController,
  SettlementsController,
  MeController,
  HealthController,
  MetricsController,
  AlertsController,
  WebhooksController,
  ...GATEWAY_CONTROLLERS,
];

/** The `/anthropic` routes, given the gateway's accounting side to admit and settle each call through. */
const GATEWAY_ROUTES: DynamicModule = { module: GatewayHttpModule, imports: [GatewayModule] };

/**
 * The HTTP API with its health probes, mounted by LedgerModule when `http` is set. Every controller is
 * a @LedgerApi(): each route needs a bearer token unless marked @Public, every body is validated, and
 * every error leaves through HttpErrorFilter. Nothing is bound application-wide, so an embedding
 * application's own routes keep their own rules. The transport only dispatches commands and reads
 * read models: it decides nothing.
 */
@Module({
  imports: [CqrsModule, TerminusModule.forRoot({ errorLogStyle: 'json' }), HttpKitModule, ReadSideModule, OBSERVABILITY, WebhooksModule, GatewayModule, GATEWAY_ROUTES],
  controllers: [...LEDGER_CONTROLLERS],
  providers: [ReadModelReader],
})
export class HttpApiModule {}
