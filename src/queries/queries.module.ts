import { Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { LiveProjections, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
import { SWEEP_CANDIDATES } from '../invocations/sweep-candidates.port';
import { GetUsageHandler } from './get-usage.query';
import { LEDGER_QUERY_HANDLERS } from './ledger-query.handlers';
import { ListInvocationsHandler } from './list-invocations.query';
import { ListLedgerEntriesHandler } from './list-ledger-entries.query';
import { ReadModels } from './read-models';
import { SweepCandidatesReader } from './sweep-candidates.reader';

/** The read queries of the QueryBus (docs/embedding.md); the HTTP routes execute the same ones. */
export const READ_SIDE_QUERY_HANDLERS = [...LEDGER_QUERY_HANDLERS, ListInvocationsHandler, ListLedgerEntriesHandler, GetUsageHandler];

/**
 * The read side's queries and what else reads the read models for the core (SWEEP_CANDIDATES).
 * `readSide`: the module exporting READ_MODEL_STORE and LiveProjections (the composition root's).
 */
@Module({})
export class QueriesModule {
  static register({ readSide }: { readonly readSide: NonNullable<ModuleMetadata['imports']>[number] }): DynamicModule {
    return {
      module: QueriesModule,
      imports: [CqrsModule, readSide],
      providers: [
        ReadModels,
        ...READ_SIDE_QUERY_HANDLERS,
        {
          provide: SWEEP_CANDIDATES,
          inject: [LiveProjections, READ_MODEL_STORE],
          useFactory: (runner: LiveProjections, store: SqliteReadModelStore) => new SweepCandidatesReader(runner, store),
        },
      ],
      exports: [ReadModels, SWEEP_CANDIDATES],
    };
  }
}
