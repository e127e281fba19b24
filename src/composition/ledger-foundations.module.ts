import { Global, Inject, Module, OnApplicationShutdown, type FactoryProvider } from '@nestjs/common';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { LEDGER_CONFIG, LedgerConfig } from '../config/ledger.config';
import { CLOCK } from '../domain/clock.token';
import { RETRY_JITTER } from '../domain/retry-jitter.token';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { openEventStore } from '../event-store/open-event-store';
import { INSTANCE_LEASE } from '../invocations/instance-lease';
import { InstanceLeaseKeeper } from '../invocations/instance-lease.keeper';
import { systemClock, type Clock, type RandomSource } from '../runtime';

const clockProvider = { provide: CLOCK, useValue: systemClock };

// A factory, not a value: Nest's testing module cannot override a value provider with a factory.
const retryJitterProvider: FactoryProvider<RandomSource> = {
  provide: RETRY_JITTER,
  useFactory: (): RandomSource => () => Math.random(),
};

/**
 * This instance's lease (src/invocations/instance-lease.ts), taken before anything is served: every
 * invocation it starts records it as its owner. Its own repository: only it writes its stream.
 */
const instanceLeaseProvider: FactoryProvider<InstanceLeaseKeeper> = {
  provide: INSTANCE_LEASE,
  inject: [EVENT_STORE, CLOCK, LEDGER_CONFIG],
  useFactory: (store: EventStore, clock: Clock, config: LedgerConfig) => new InstanceLeaseKeeper(new AggregateRepository(store), clock, { durationMs: config.leaseDurationMs }),
};

/**
 * What every feature module is built on: the configured event store (opened at start, closed on
 * shutdown so test runs exit cleanly), the clock, the retry jitter and the instance's lease.
 *
 * The one @Global module, because the feature modules cannot import it: they sit floors below the
 * composition root (docs/architecture.md), and the store is opened from the configuration, which
 * only the root has. Each feature module imports everything else it uses; these three it takes from
 * whoever composes it (a test or the simulator replaces them by token).
 */
@Global()
@Module({
  providers: [
    clockProvider,
    retryJitterProvider,
    instanceLeaseProvider,
    {
      provide: EVENT_STORE,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig): Promise<EventStore> =>
        openEventStore(config.store, { synchronous: config.sqliteSynchronous, allowAsyncCommit: config.postgresAllowAsyncCommit }),
    },
  ],
  exports: [EVENT_STORE, CLOCK, RETRY_JITTER, INSTANCE_LEASE],
})
export class LedgerFoundationsModule implements OnApplicationShutdown {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
