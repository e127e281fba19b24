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
    for (const entry of this.store.listEvery<T>(projection, collection, { pageSize: SWEEP_PAGE_DOCUMENTS })) yield entry.document;
  }
}
