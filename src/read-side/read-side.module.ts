import { BeforeApplicationShutdown, Global, Inject, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ALL_PROJECTIONS } from '../../projections';
import { LEDGER_CONFIG, LedgerConfig } from '../config/ledger.config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { ProjectionRunner, SqliteReadModelStore, openReadModelStore } from '../projection-runner';

export const READ_MODEL_STORE = Symbol('READ_MODEL_STORE');

/**
 * The read side: the SQLite read-model store and the projection runner that keeps it current. The
 * runner catches up before the application serves (so reads after a restart are complete), then
 * follows the log live; it stops before the event store closes.
 */
@Global()
@Module({
  providers: [
    {
      provide: READ_MODEL_STORE,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig): SqliteReadModelStore => openReadModelStore({ path: config.readStorePath }),
    },
    {
      provide: ProjectionRunner,
      inject: [EVENT_STORE, READ_MODEL_STORE],
      useFactory: (eventStore: EventStore, store: SqliteReadModelStore): ProjectionRunner => {
        const logger = new Logger('Projections');
        return new ProjectionRunner({
          eventStore,
          store,
          projections: ALL_PROJECTIONS,
          logger: { log: (m) => logger.log(m), warn: (m) => logger.warn(m), error: (m) => logger.error(m) },
        });
      },
    },
  ],
  exports: [READ_MODEL_STORE, ProjectionRunner],
})
export class ReadSideModule implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    private readonly runner: ProjectionRunner,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.runner.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.runner.stop();
  }

  onApplicationShutdown(): void {
    this.store.close();
  }
}
