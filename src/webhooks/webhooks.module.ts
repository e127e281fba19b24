import { BeforeApplicationShutdown, Inject, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { deliversWebhooks, sharedReadStorePath } from '../config/service-workers.config';
import { CLOCK } from '../domain/clock.token';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import type { Clock } from '../runtime';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { createHttpWebhookSender } from './webhook-sender';
import { systemWebhookResolver, WEBHOOK_RESOLVER, type WebhookResolver } from './webhook-resolver';
import { WebhookStore, webhookStorePathFor } from './webhook.store';
import { WEBHOOKS_CONFIG, type WebhooksConfig } from './webhooks.config';
import { WebhooksService } from './webhooks.service';

/**
 * Webhooks (README.md "Webhooks"): their SQLite file beside the read models, the delivery worker that
 * follows the log, and the service behind the routes (WebhooksController, mounted with the HTTP API).
 * The worker starts after the read side and stops before the event store closes.
 */
@Module({
  imports: [AggregatesModule],
  providers: [
    {
      provide: WebhookStore,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig) => WebhookStore.open(webhookStorePathFor(sharedReadStorePath(config.readStorePath))),
    },
    // Registration and delivery resolve names through the same resolver (tests give their own).
    { provide: WEBHOOK_RESOLVER, useValue: systemWebhookResolver },
    {
      provide: WebhookDeliveryWorker,
      inject: [EVENT_STORE, WebhookStore, CLOCK, WEBHOOKS_CONFIG, WEBHOOK_RESOLVER],
      useFactory: (eventStore: EventStore, webhooks: WebhookStore, clock: Clock, config: WebhooksConfig, resolver: WebhookResolver) => {
        const logger = new Logger('Webhooks');
        return new WebhookDeliveryWorker({
          eventStore,
          webhooks,
          clock,
          send: createHttpWebhookSender(config.webhookAddresses, resolver),
          logger: { warn: (message) => logger.warn(message), error: (message) => logger.error(message) },
        });
      },
    },
    WebhooksService,
  ],
  exports: [WebhooksService, WebhookStore],
})
export class WebhooksModule implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    private readonly worker: WebhookDeliveryWorker,
    @Inject(WebhookStore) private readonly store: WebhookStore,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // Of several service workers (LEDGER_WORKERS) the first delivers for all; the others share its file.
    if (deliversWebhooks()) await this.worker.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.stop();
  }

  onApplicationShutdown(): void {
    this.store.close();
  }
}
