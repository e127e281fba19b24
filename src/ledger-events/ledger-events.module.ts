import { BeforeApplicationShutdown, Module, OnApplicationBootstrap } from '@nestjs/common';
import { CqrsModule, EventBus } from '@nestjs/cqrs';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { withUpcasting } from '../event-store/upcasting';
import { LEDGER_UPCASTERS } from '../upcasters/ledger.upcasters';
import { CommittedEventsPublisher } from './committed-events.publisher';

/** Committed events on Nest's EventBus, after commit (docs/embedding.md "Events"): started with the application, stopped before the store closes. */
@Module({
  imports: [CqrsModule],
  providers: [
    {
      provide: CommittedEventsPublisher,
      inject: [EVENT_STORE, EventBus],
      useFactory: (store: EventStore, eventBus: EventBus) => new CommittedEventsPublisher(withUpcasting(store, LEDGER_UPCASTERS), eventBus),
    },
  ],
})
export class LedgerEventsModule implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(private readonly publisher: CommittedEventsPublisher) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.publisher.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.publisher.stop();
  }
}
