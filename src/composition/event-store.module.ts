import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { LEDGER_CONFIG, LedgerConfig } from '../config/ledger.config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { openEventStore } from '../event-store/open-event-store';

/** Opens the configured event store at start and closes it on shutdown (so test runs exit cleanly). */
@Global()
@Module({
  providers: [
    {
      provide: EVENT_STORE,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig): Promise<EventStore> =>
        openEventStore(config.store, { synchronous: config.sqliteSynchronous }),
    },
  ],
  exports: [EVENT_STORE],
})
export class EventStoreModule implements OnApplicationShutdown {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
