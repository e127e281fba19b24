import { Inject, Injectable } from '@nestjs/common';
import { LiveProjections, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';

/**
 * Longest a read waits for its projection to apply the log up to its head as of the read, in ms. The
 * wait gives a caller its own writes back (a grant, then the balance); past it the read fails with
 * ReadSideUnavailableError instead of serving a stale document.
 */
export const READ_CATCH_UP_TIMEOUT_MS = 5_000;

/** A read-model document addressed by projection and collection. */
export interface ReadModelAddress {
  readonly projection: string;
  readonly collection: string;
}

/** The read models cannot answer now: a projection is missing, faulted, or did not catch up in time (HTTP 503). */
export class ReadSideUnavailableError extends Error {
  override readonly name = 'ReadSideUnavailableError';
  readonly code = 'read_side_unavailable';

  constructor(reason: string) {
    super(`the read models are not available: ${reason}`);
  }
}

/** Reads read-model documents once their projection has caught up with the log: the one read path. */
@Injectable()
export class ReadModels {
  constructor(
    private readonly runner: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
  ) {}

  async get<T>(address: ReadModelAddress, id: string): Promise<T | undefined> {
    await this.caughtUp(address.projection);
    return this.store.get<T>(address.projection, address.collection, id);
  }

  private async caughtUp(projection: string): Promise<void> {
    if (!this.runner.status().projections.some((status) => status.name === projection)) {
      throw new ReadSideUnavailableError(`projection "${projection}" is not installed`);
    }
    try {
      await this.runner.caughtUp({ projections: [projection], signal: AbortSignal.timeout(READ_CATCH_UP_TIMEOUT_MS) });
    } catch (error) {
      if (error instanceof DOMException && error.name === 'TimeoutError') {
        throw new ReadSideUnavailableError(`they did not catch up within ${READ_CATCH_UP_TIMEOUT_MS} ms`);
      }
      throw error;
    }
  }
}
