import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { TerminusModule } from '@nestjs/terminus';
import { BearerTokenGuard } from './auth/bearer-token.guard';
import { TokenRegistry } from './auth/token-registry';
import { BodyErrorGuard } from './body-error.guard';
import { HealthController } from './health.controller';
import { HttpErrorFilter } from './http-error.filter';
import { InvocationsController } from './invocations.controller';
import { OperationsController } from './operations.controller';
import { OrganizationReadsController } from './organization-reads.controller';
import { OrganizationsController } from './organizations.controller';
import { ReadModelReader } from './read-model.reader';
import { SettlementsController } from './settlements.controller';
import { StreamsController } from './streams.controller';
import { ledgerValidationPipe } from './validation.pipe';
import { MetricsController } from '../observability/metrics.controller';
import { AlertsController } from '../alerts/alerts.controller';
import { WebhooksController } from '../webhooks/webhooks.controller';

/**
 * The HTTP API of SPEC §10 with its health probes. Every route needs a bearer token unless marked
 * @Public, every body is validated, and every error leaves through HttpErrorFilter. The transport
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
    // Guards run in this order: authentication first, so a bad body is only reported to a caller with a valid token.
    { provide: APP_GUARD, useClass: BearerTokenGuard },
    { provide: APP_GUARD, useClass: BodyErrorGuard },
    { provide: APP_PIPE, useFactory: ledgerValidationPipe },
    { provide: APP_FILTER, useClass: HttpErrorFilter },
  ],
  exports: [TokenRegistry],
})
export class HttpModule {}
