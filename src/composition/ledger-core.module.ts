import { BeforeApplicationShutdown, Global, Inject, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown, type FactoryProvider } from '@nestjs/common';
import { LEDGER_UPCASTERS } from '../upcasters/ledger.upcasters';
import { CqrsModule, EventBus } from '@nestjs/cqrs';
import { AdjustCreditsHandler, ChangeOrganizationSettingsHandler, GrantCreditsHandler } from '../accounts/account-commands.handler';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { SetAlertThresholdsHandler } from '../alerts/set-alert-thresholds.handler';
import { PublishOperationHandler } from '../catalog/publish-operation.handler';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port';
import { withUpcasting } from '../event-store/upcasting';
import { CommittedEventsPublisher } from '../ledger-events/committed-events.publisher';
import { FeatureRegistry } from '../features/feature.registry';
import { KeyedRepeats } from '../invocations/keyed-repeats';
import { RunOperationHandler } from '../invocations/run-operation.handler';
import { CancelInvocationHandler } from '../invocations/cancel-invocation.handler';
import { CancellationWatcher } from '../invocations/cancellation-watcher';
import { RunningInvocations } from '../invocations/running-invocations';
import { InvocationEndings } from '../invocations/invocation-endings';
import { SweepStaleInvocationsHandler } from '../invocations/sweep-stale-invocations.handler';
import { InvocationRecovery } from '../invocations/invocation-recovery';
import { RECOVERY_SETTINGS, type RecoverySettings } from '../domain/recovery.settings';
import { ProviderRegistry } from '../providers/provider.registry';
import { ANSWER_STORE, type AnswerStore } from '../answer-store/answer-store.port';
import { SqliteAnswerStore } from '../answer-store/sqlite-answer-store';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { CLOCK } from '../domain/clock.token';
import { idempotencySecretProvider } from './idempotency-secret.provider';
import { RETRY_JITTER } from '../domain/retry-jitter.token';
import { systemClock, type Clock, type RandomSource } from '../runtime';

const clockProvider = { provide: CLOCK, useValue: systemClock };

// A factory, not a value: Nest's testing module cannot override a value provider with a factory.
const retryJitterProvider: FactoryProvider<RandomSource> = {
  provide: RETRY_JITTER,
  useFactory: (): RandomSource => () => Math.random(),
};

/**
 * The accounting core: command handlers over the event store, the feature and provider registries and
 * the clock, the retry jitter and the answer store. Global, so a feature module anywhere can register operations and dispatch commands.
 */
@Global()
@Module({
  imports: [CqrsModule],
  providers: [
    clockProvider,
    retryJitterProvider,
    idempotencySecretProvider,
    {
      provide: AggregateRepository,
      inject: [EVENT_STORE],
      useFactory: (store: EventStore) => new AggregateRepository(store, LEDGER_UPCASTERS),
    },
    {
      provide: ANSWER_STORE,
      inject: [LEDGER_CONFIG, CLOCK],
      useFactory: (config: LedgerConfig, clock: Clock): AnswerStore => {
        const logger = new Logger('AnswerStore');
        return SqliteAnswerStore.open(config.answerStorePath, clock, (error, answers) =>
          logger.warn({ message: 'answers could not be kept for repeats', answers, error: error instanceof Error ? error.message : String(error) }),
        );
      },
    },
    {
      provide: CommittedEventsPublisher,
      inject: [EVENT_STORE, EventBus],
      useFactory: (store: EventStore, eventBus: EventBus) => new CommittedEventsPublisher(withUpcasting(store, LEDGER_UPCASTERS), eventBus),
    },
    FeatureRegistry,
    ProviderRegistry,
    PublishOperationHandler,
    GrantCreditsHandler,
    AdjustCreditsHandler,
    ChangeOrganizationSettingsHandler,
    RunOperationHandler,
    KeyedRepeats,
    RunningInvocations,
    InvocationEndings,
    CancelInvocationHandler,
    CancellationWatcher,
    SweepStaleInvocationsHandler,
    {
      provide: RECOVERY_SETTINGS,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig): RecoverySettings => config.recovery,
    },
    {
      // The manual sweep's own handler and command, called directly: the command bus registers its
      // handlers during bootstrap, and the first pass may come due before it has.
      provide: InvocationRecovery,
      inject: [SweepStaleInvocationsHandler, CLOCK, RECOVERY_SETTINGS],
      useFactory: (sweep: SweepStaleInvocationsHandler, clock: Clock, settings: RecoverySettings) =>
        new InvocationRecovery((command) => sweep.execute(command), clock, settings),
    },
    SetAlertThresholdsHandler,
  ],
  exports: [clockProvider, idempotencySecretProvider, AggregateRepository, FeatureRegistry],
})
export class LedgerCoreModule implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    @Inject(ANSWER_STORE) private readonly answers: AnswerStore,
    private readonly publisher: CommittedEventsPublisher,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.publisher.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.publisher.stop();
  }

  onApplicationShutdown(): void {
    this.answers.close();
  }
}

