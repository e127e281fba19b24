import { BeforeApplicationShutdown, Inject, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { ALL_PROJECTIONS, ALL_PROJECTIONS_MODULE } from '../../projections';
import { LEDGER_CONFIG, LedgerConfig } from '../config/ledger.config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { embeddedLogPath } from '../event-store/open-event-store';
import { SqliteEventStore } from '../event-store/sqlite/sqlite-event-store';
import { LiveProjections, ProjectionRunner, READ_MODEL_STORE, SqliteReadModelStore, openReadModelStore, type ProjectionRunnerLogger } from '../projection-runner';
import { ReadStoreLock } from '../projection-runner/read-store.lock';
import { ProjectionWorkerHost } from '../projection-runner/worker/projection-worker.host';

/**
 * The read side: the SQLite read-model store and what keeps it current. With the embedded store in a
 * file the projections run on a worker thread (ProjectionWorkerHost), so the accounting path's event
 * loop spends nothing on read models; otherwise (EventStoreDB, an in-memory log, or
 * LEDGER_PROJECTIONS_THREAD=main) a ProjectionRunner runs them on the event loop. Either catches up
 * before the application serves (so reads after a restart are complete), then follows the log live,
 * and stops before the event store closes. Its queries are QueriesModule's (src/queries).
 */
@Module({
  providers: [
    {
      // Held while the service runs, so `projections rebuild` refuses to rewrite these read models
      // under the live runner (and this service refuses to start on a rebuild in progress).
      provide: ReadStoreLock,
      inject: [LEDGER_CONFIG],
      useFactory: (config: LedgerConfig): ReadStoreLock => ReadStoreLock.acquire(config.readStorePath, 'service'),
    },
    {
      provide: READ_MODEL_STORE,
      inject: [LEDGER_CONFIG, ReadStoreLock],
      useFactory: (config: LedgerConfig): SqliteReadModelStore => openReadModelStore({ path: config.readStorePath }),
    },
    {
      provide: LiveProjections,
      inject: [LEDGER_CONFIG, EVENT_STORE, READ_MODEL_STORE],
      useFactory: (config: LedgerConfig, eventStore: EventStore, store: SqliteReadModelStore): LiveProjections => {
        const nestLogger = new Logger('Projections');
        const logger: ProjectionRunnerLogger = {
          log: (message) => nestLogger.log(message),
          warn: (message) => nestLogger.warn(message),
          error: (message) => nestLogger.error(message),
        };
        const logPath = embeddedLogPath(config.store);
        if (config.projectionsThread === 'worker' && logPath !== undefined && eventStore instanceof SqliteEventStore) {
          return new ProjectionWorkerHost({
            eventStore,
            logPath,
            store,
            projections: ALL_PROJECTIONS,
            projectionsModule: ALL_PROJECTIONS_MODULE,
            workerNice: config.projectionsNice,
            logger,
          });
        }
        return new ProjectionRunner({ eventStore, store, projections: ALL_PROJECTIONS, logger });
      },
    },
  ],
  exports: [READ_MODEL_STORE, LiveProjections],
})
export class ReadSideModule implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    private readonly projections: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
    private readonly lock: ReadStoreLock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.projections.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.projections.stop();
  }

  onApplicationShutdown(): void {
    this.store.close();
    this.lock.release();
  }
}
