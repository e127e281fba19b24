import { Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { ANSWER_STORE, type AnswerStore } from '../answer-store/answer-store.port';
import { SqliteAnswerStore } from '../answer-store/sqlite-answer-store';
import { LEDGER_CONFIG, type LedgerConfig } from '../config/ledger.config';
import { CLOCK } from '../domain/clock.token';
import { RECOVERY_SETTINGS, type RecoverySettings } from '../domain/recovery.settings';
import type { Clock } from '../runtime';
import { idempotencySecretProvider } from './idempotency-secret.provider';
import { OBSERVABILITY, QUERIES } from './read-side.features';

/**
 * The ports of InvocationsModule, as the service fills them: the answer store, the fingerprint secret
 * and recovery's settings from the configuration, the sweep's candidates from the read side's queries, and runs
 * observed by ObservabilityModule. The answer store closes on shutdown.
 */
@Module({
  imports: [QUERIES, OBSERVABILITY],
  providers: [
    idempotencySecretProvider,
    {
      provide: RECOVERY_SETTINGS,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig): RecoverySettings => config.recovery,
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
  ],
  exports: [idempotencySecretProvider, RECOVERY_SETTINGS, ANSWER_STORE, QUERIES, OBSERVABILITY],
})
export class InvocationPortsModule implements OnApplicationShutdown {
  constructor(@Inject(ANSWER_STORE) private readonly answers: AnswerStore) {}

  onApplicationShutdown(): void {
    this.answers.close();
  }
}
