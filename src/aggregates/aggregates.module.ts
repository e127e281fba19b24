import { Module } from '@nestjs/common';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { LEDGER_UPCASTERS } from '../upcasters/ledger.upcasters';
import { AggregateRepository } from './aggregate.repository';

/** The one load–decide–append repository, over the event store its importer provides (EVENT_STORE). */
@Module({
  providers: [
    {
      provide: AggregateRepository,
      inject: [EVENT_STORE],
      useFactory: (store: EventStore) => new AggregateRepository(store, LEDGER_UPCASTERS),
    },
  ],
  exports: [AggregateRepository],
})
export class AggregatesModule {}
