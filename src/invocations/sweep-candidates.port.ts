/**
 * Where the sweep finds its candidates: a hint only, every decision is made on the invocation's and
 * the account's own streams. The read side implements it; the sweep knows no read-model names.
 */
export interface SweepCandidates {
  /** Resolves once the candidates reflect everything committed before the call. */
  caughtUp(): Promise<void>;
  /** Invocations not yet settled or refused, with the time of their last activity. */
  openInvocations(): Iterable<OpenInvocationCandidate>;
  /** Organizations whose account had open holds. */
  organizationsWithOpenHolds(): Iterable<string>;
}

export interface OpenInvocationCandidate {
  readonly invocationId: string;
  readonly organizationId: string;
  /** ISO-8601. */
  readonly lastActivityAt: string;
  /** The lease of the instance that runs it; absent for one written before owners were recorded. */
  readonly ownerLeaseId?: string;
}

export const SWEEP_CANDIDATES = Symbol('SWEEP_CANDIDATES');
