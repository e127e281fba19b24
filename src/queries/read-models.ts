import { Inject, Injectable } from '@nestjs/common';
import { LiveProjections, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
import { catchUp } from './read-model-catch-up';

/** A read-model document addressed by projection and collection. */
export interface ReadModelAddress {
  readonly projection: string;
  readonly collection: string;
}

/**
 * Reads read-model documents once their projection has caught up with the log (catchUp), so a query
 * answers with the caller's own writes; ReadModelsUnavailableError past the wait.
 */
@Injectable()
export class ReadModels {
  constructor(
    private readonly runner: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
  ) {}

  async get<T>(address: ReadModelAddress, id: string): Promise<T | undefined> {
    await catchUp(this.runner, [address.projection]);
    return this.store.get<T>(address.projection, address.collection, id);
  }

  /** Reads several documents of `projection` from one snapshot, once it has caught up (as `get`). */
  async read<T>(projection: string, body: (store: SqliteReadModelStore) => T): Promise<T> {
    await catchUp(this.runner, [projection]);
    return this.store.readSnapshot(() => body(this.store));
  }
}
