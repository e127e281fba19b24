import { BALANCE_COLLECTION, BALANCES_PROJECTION, INVOCATIONS_PROJECTION, OPEN_COLLECTION, type StoredBalance, type OpenInvocationView } from '../../projections';
import type { OpenInvocationCandidate, SweepCandidates } from '../invocations/sweep-candidates.port';
import type { LiveProjections, SqliteReadModelStore } from '../projection-runner';

/** Documents read from the read models per page while looking for candidates. */
const SWEEP_PAGE_DOCUMENTS = 500;

/** The sweep's candidates from the read models: open invocations, and balances with open holds. */
export class SweepCandidatesReader implements SweepCandidates {
  constructor(
    private readonly runner: LiveProjections,
    private readonly store: SqliteReadModelStore,
  ) {}

  caughtUp(): Promise<void> {
    return this.runner.caughtUp();
  }

  *openInvocations(): Iterable<OpenInvocationCandidate> {
    for (const { invocationId, organizationId, lastActivityAt, ownerLeaseId } of this.pages<OpenInvocationView>(INVOCATIONS_PROJECTION, OPEN_COLLECTION)) {
      yield { invocationId, organizationId, lastActivityAt, ...(ownerLeaseId === undefined ? {} : { ownerLeaseId }) };
    }
  }

  *organizationsWithOpenHolds(): Iterable<string> {
    for (const balance of this.pages<StoredBalance>(BALANCES_PROJECTION, BALANCE_COLLECTION)) {
      if (balance.running > 0) yield balance.organizationId;
    }
  }

  private *pages<T>(projection: string, collection: string): Generator<T> {
    let afterId: string | undefined;
    for (;;) {
      const page = this.store.list<T>(projection, collection, { limit: SWEEP_PAGE_DOCUMENTS, ...(afterId === undefined ? {} : { afterId }) });
      for (const entry of page) yield entry.document;
      if (page.length < SWEEP_PAGE_DOCUMENTS) return;
      afterId = page[page.length - 1]!.id;
    }
  }
}
