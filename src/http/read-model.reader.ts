import { Inject, Injectable } from '@nestjs/common';
import { INVOCATION_COLLECTION, INVOCATIONS_PROJECTION, type InvocationView } from '../../projections';
import { LiveProjections, type SqliteReadModelStore } from '../projection-runner';
import { READ_MODEL_STORE } from '../projection-runner';
import { mayAccessOrganization, type Caller } from './auth/caller';
import { ReadSideUnavailableException, ResourceNotFoundException } from './http-error.body';

/**
 * Longest a read waits for its projections to apply the log up to its head as of the request, in ms.
 * The wait gives a client its own writes back (a grant, then the balance); past it the read answers
 * 503 instead of serving a stale document.
 */
export const READ_CATCH_UP_TIMEOUT_MS = 5_000;

/** A read-model document addressed by projection, collection and id. */
export interface ReadModelAddress {
  readonly projection: string;
  readonly collection: string;
}

/**
 * Reads read-model documents for the HTTP routes: waits until the projections involved have caught up
 * with the log, and scopes per-invocation documents to the caller's organization (another
 * organization's invocation reads exactly like one that does not exist).
 */
@Injectable()
export class ReadModelReader {
  constructor(
    private readonly runner: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
  ) {}

  /** A document once its projection has caught up, or undefined. */
  async get<T>(address: ReadModelAddress, id: string): Promise<T | undefined> {
    await this.caughtUp([address.projection]);
    return this.store.get<T>(address.projection, address.collection, id);
  }

  /** The invocation's lifecycle view; 404 when it does not exist or belongs to another organization. */
  async invocation(caller: Caller, invocationId: string): Promise<InvocationView> {
    return (await this.invocationWith(caller, invocationId)).invocation;
  }

  /**
   * The invocation's lifecycle view and a companion document of the same invocation (its attempts, its
   * explanation), read once both projections caught up; scoped like `invocation`.
   */
  async invocationWith<T>(
    caller: Caller,
    invocationId: string,
    companion?: ReadModelAddress,
  ): Promise<{ readonly invocation: InvocationView; readonly document: T | undefined }> {
    await this.caughtUp(companion === undefined ? [INVOCATIONS_PROJECTION] : [INVOCATIONS_PROJECTION, companion.projection]);
    const invocation = this.store.get<InvocationView>(INVOCATIONS_PROJECTION, INVOCATION_COLLECTION, invocationId);
    if (invocation === undefined || !mayAccessOrganization(caller, invocation.organizationId)) {
      throw new ResourceNotFoundException('invocation', invocationId);
    }
    const document = companion === undefined ? undefined : this.store.get<T>(companion.projection, companion.collection, invocationId);
    return { invocation, document };
  }

  private async caughtUp(projections: readonly string[]): Promise<void> {
    const installed = new Set(this.runner.status().projections.map((status) => status.name));
    const missing = projections.find((name) => !installed.has(name));
    if (missing !== undefined) throw new ReadSideUnavailableException(`projection "${missing}" is not installed`);
    try {
      await this.runner.caughtUp({ projections, signal: AbortSignal.timeout(READ_CATCH_UP_TIMEOUT_MS) });
    } catch (error) {
      if (error instanceof DOMException && error.name === 'TimeoutError') {
        throw new ReadSideUnavailableException(`they did not catch up within ${READ_CATCH_UP_TIMEOUT_MS} ms`);
      }
      throw error;
    }
  }
}
