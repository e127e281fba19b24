import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { openHoldsOlderThan } from '../accounts/account.state';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { IllegalTransitionError } from '../domain/domain.errors';
import { CLOCK, isoAt } from '../domain/clock.token';
import type { Clock } from '../runtime';
import { invocationDecider } from './invocation.decider';
import { invocationStreamName, type StaleCloser } from './invocation.events';
import { isStale, isUnmeasured } from './invocation.state';
import { SWEEP_CANDIDATES, type OpenInvocationCandidate, type SweepCandidates } from './sweep-candidates.port';
import { ReleasedHold, SweepReport, SweepStaleInvocationsCommand, SweptInvocation } from './sweep-stale-invocations.command';

/**
 * Candidates come from the read side (SweepCandidates: open invocations, accounts with open holds); every decision
 * is made on the invocation's and the account's own streams, never on a projection.
 */
@CommandHandler(SweepStaleInvocationsCommand)
export class SweepStaleInvocationsHandler implements ICommandHandler<SweepStaleInvocationsCommand, SweepReport> {
  private readonly logger = new Logger('Sweep');

  constructor(
    private readonly repository: AggregateRepository,
    @Inject(SWEEP_CANDIDATES) private readonly candidates: SweepCandidates,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ olderThanMs, by }: SweepStaleInvocationsCommand): Promise<SweepReport> {
    // Candidates must reflect everything committed before the sweep began.
    await this.candidates.caughtUp();
    const nowMs = this.clock.now();
    const settled: SweptInvocation[] = [];
    for (const open of this.candidates.openInvocations()) {
      if (nowMs - Date.parse(open.lastActivityAt) <= olderThanMs) continue;
      const swept = await this.settleInvocation(open, olderThanMs, by);
      if (swept !== undefined) settled.push(swept);
    }
    const releasedHolds: ReleasedHold[] = [];
    for (const organizationId of this.candidates.organizationsWithOpenHolds()) {
      releasedHolds.push(...(await this.releaseSettledHolds(organizationId, nowMs, olderThanMs, by)));
    }
    if (settled.length + releasedHolds.length > 0) {
      this.logger.log({ message: `${by} settled stale requests`, olderThanMs, settled: settled.length, releasedHolds: releasedHolds.length });
    }
    return { olderThanMs, settled, releasedHolds };
  }

  private async settleInvocation(open: OpenInvocationCandidate, olderThanMs: number, by: StaleCloser): Promise<SweptInvocation | undefined> {
    const stream = invocationStreamName(open.invocationId);
    const { state: before } = await this.repository.load(stream, invocationDecider);
    try {
      if (before.status === 'completed' && isUnmeasured(before) && isStale(before, this.clock.now(), olderThanMs)) {
        // Transition 7 then 9. Pending is dated at the completion it follows, so marking it now does
        // not make a result that was stale look live again.
        await this.repository.handle(stream, invocationDecider, {
          type: 'MarkInvocationPending',
          data: { pendingAt: before.lastTransitionAt ?? isoAt(this.clock) },
        });
      }
      const { state, events } = await this.repository.handle(stream, invocationDecider, {
        type: 'SettleInvocation',
        data: { by, settledAt: isoAt(this.clock), olderThanMs },
      });
      // Nothing appended: the request is still live (not stale by its own stream's account).
      if (events.length === 0 || state.settlement === undefined) return undefined;
      await this.settleHold(open.organizationId, open.invocationId, state.settlement.chargeCredits, by);
      return {
        invocationId: open.invocationId,
        organizationId: open.organizationId,
        from: before.status === 'initial' ? 'estimated' : before.status,
        transition: state.settlement.transition,
        chargeCredits: state.settlement.chargeCredits,
      };
    } catch (error) {
      // Settled or refused meanwhile by its own run or by another sweep: nothing left to do.
      if (error instanceof IllegalTransitionError) return undefined;
      throw error;
    }
  }

  /**
   * Holds left open by a crash between an invocation's settlement and its account's. The settlement
   * must be older than the threshold too: a run that settled its invocation a moment ago is about to
   * settle the hold itself (it would do nothing then, but the release would be credited to the sweep).
   */
  private async releaseSettledHolds(organizationId: string, nowMs: number, olderThanMs: number, by: StaleCloser): Promise<ReleasedHold[]> {
    const { state: account } = await this.repository.load(accountStreamName(organizationId), accountDecider);
    const released: ReleasedHold[] = [];
    for (const { invocationId } of openHoldsOlderThan(account, nowMs, olderThanMs)) {
      const { state } = await this.repository.load(invocationStreamName(invocationId), invocationDecider);
      if (state.settlement === undefined || nowMs - Date.parse(state.settlement.settledAt) <= olderThanMs) continue;
      if (await this.settleHold(organizationId, invocationId, state.settlement.chargeCredits, by)) {
        released.push({ invocationId, organizationId, chargeCredits: state.settlement.chargeCredits });
      }
    }
    return released;
  }

  /** Settles the account's hold for the invocation; false when there was none left to settle. */
  private async settleHold(organizationId: string, invocationId: string, chargeCredits: number, by: StaleCloser): Promise<boolean> {
    const { events } = await this.repository.handle(
      accountStreamName(organizationId),
      accountDecider,
      { type: 'SettleHold', data: { invocationId, chargeCredits, settledAt: isoAt(this.clock), by } },
      { correlationId: invocationId },
    );
    return events.length > 0;
  }
}
