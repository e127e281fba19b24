import { Command } from '@nestjs/cqrs';
import type { InvocationStatus, SettlementTransition, StaleCloser } from './invocation.events';

export interface SweptInvocation {
  readonly invocationId: string;
  readonly organizationId: string;
  /** The state it was left in. */
  readonly from: InvocationStatus;
  readonly transition: SettlementTransition;
  readonly chargeCredits: number;
}

export interface ReleasedHold {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly chargeCredits: number;
}

export interface SweepReport {
  readonly olderThanMs: number;
  /**
   * Invocations this sweep settled (docs/lifecycle.md transitions 12–14, and 8–10 for results left
   * unsettled).
   */
  readonly settled: readonly SweptInvocation[];
  /** Holds of already-settled invocations that a crash had left open, now settled on the account. */
  readonly releasedHolds: readonly ReleasedHold[];
}

/**
 * Settles requests left in flight for longer than `olderThanMs` (a crash, a lost process). Safe beside
 * live traffic and beside another sweep: every settlement is decided on the invocation's own stream,
 * which refuses a request that is not stale or is already settled. `by` is what the settlements
 * record: `sweep` when someone asked for it (the default), `recovery` when an instance's own
 * recovery runs it (InvocationRecovery).
 */
export class SweepStaleInvocationsCommand extends Command<SweepReport> {
  constructor(
    readonly olderThanMs: number,
    readonly by: StaleCloser = 'sweep',
  ) {
    super();
  }
}
