import { Global, Module, type FactoryProvider } from '@nestjs/common';
import { LEDGER_UPCASTERS } from '../upcasters/ledger.upcasters';
import { CqrsModule } from '@nestjs/cqrs';
import { AdjustCreditsHandler, ChangeOrganizationSettingsHandler, GrantCreditsHandler } from '../accounts/account-commands.handler';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { PublishOperationHandler } from '../catalog/publish-operation.handler';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { FeatureRegistry } from '../features/feature.registry';
import { LogSettledInvocationHandler } from '../invocations/invocation-settled.event';
import { RunOperationHandler } from '../invocations/run-operation.handler';
import { SweepStaleInvocationsHandler } from '../invocations/sweep-stale-invocations.handler';
import { ProviderRegistry } from '../providers/provider.registry';
import { CLOCK } from '../domain/clock.token';
import { RETRY_JITTER } from '../domain/retry-jitter.token';
import { systemClock, type RandomSource } from '../runtime';

const clockProvider = { provide: CLOCK, useValue: systemClock };

// A factory, not a value: Nest's testing module cannot override a value provider with a factory.
const retryJitterProvider: FactoryProvider<RandomSource> = {
  provide: RETRY_JITTER,
  useFactory: (): RandomSource => () => Math.random(),
};

/**
 * The accounting core: command handlers over the event store, the feature and provider registries and
 * the clock and the retry jitter. Global, so a feature module anywhere can register operations and dispatch commands.
 */
@Global()
@Module({
  imports: [CqrsModule],
  providers: [
    clockProvider,
    retryJitterProvider,
    {
      provide: AggregateRepository,
      inject: [EVENT_STORE],
      useFactory: (store: EventStore) => new AggregateRepository(store, LEDGER_UPCASTERS),
    },
    FeatureRegistry,
    ProviderRegistry,
    PublishOperationHandler,
    GrantCreditsHandler,
    AdjustCreditsHandler,
    ChangeOrganizationSettingsHandler,
    RunOperationHandler,
    SweepStaleInvocationsHandler,
    LogSettledInvocationHandler,
  ],
  exports: [clockProvider, AggregateRepository, FeatureRegistry],
})
export class LedgerCoreModule {}

