import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { TerminusModule } from '@nestjs/terminus';
import { TokenRegistry } from './auth/token-registry';
import { HealthController } from './health.controller';
import { InvocationsController } from './invocations.controller';
import { OperationsController } from './operations.controller';
import { OrganizationReadsController } from './organization-reads.controller';
import { OrganizationsController } from './organizations.controller';
import { ReadModelReader } from './read-model.reader';
import { SettlementsController } from './settlements.controller';
import { StreamsController } from './streams.controller';
import { MetricsController } from '../observability/metrics.controller';
import { AlertsController } from '../alerts/alerts.controller';
import { WebhooksController } from '../webhooks/webhooks.controller';

/**
 * The HTTP API of SPEC §10 with its health probes. Every controller is a @LedgerApi(): each route needs
 * a bearer token unless marked @Public, every body is validated, and every error leaves through
 * HttpErrorFilter. Nothing is bound application-wide, so an embedding application's own routes keep
 * their own rules. The transport
 * only dispatches commands and reads read models: it decides nothing.
 */
@Module({
  imports: [CqrsModule, TerminusModule.forRoot({ errorLogStyle: 'json' })],
  controllers: [
    OperationsController,
    OrganizationsController,
    OrganizationReadsController,
    InvocationsController,
    StreamsController,
    SettlementsController,
    HealthController,
    MetricsController,
    AlertsController,
    WebhooksController,
  ],
  providers: [
    TokenRegistry,
    ReadModelReader,
  ],
  exports: [TokenRegistry],
})
export class HttpModule {}
