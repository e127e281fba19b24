import { Inject, Logger } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { BALANCE_COLLECTION, BALANCES_PROJECTION, INVOCATIONS_PROJECTION, OPEN_COLLECTION, type BalanceView, type OpenInvocationView } from '../../projections';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { openHoldsOlderThan } from '../accounts/account.state';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { IllegalTransitionError } from '../domain/domain.errors';
import { CLOCK, isoAt } from '../domain/clock.token';
import { LiveProjections, SqliteReadModelStore } from '../projection-runner';
import { READ_MODEL_STORE } from '../projection-runner';
import type { Clock } from '../runtime';
import { invocationDecider } from './invocation.decider';
import { invocationStreamName } from './invocation.events';
import { isStale, isUnmeasured } from './invocation.state';
import { ReleasedHold, SweepReport, SweepStaleInvocationsCommand, SweptInvocation } from './sweep-stale-invocations.command';

/** Documents read from the read models per page while looking for candidates. */
const SWEEP_PAGE_DOCUMENTS = 500;

/**
 * Candidates come from the read models (open invocations, balances with open holds); every decision
 * is made on the invocation's and the account's own streams, never on a projection.
 */
@CommandHandler(SweepStaleInvocationsCommand)
export class SweepStaleInvocationsHandler implements ICommandHandler<SweepStaleInvocationsCommand, SweepReport> {
  private readonly logger = new Logger('Sweep');

  constructor(
    private readonly repository: AggregateRepository,
    private readonly runner: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly readModels: SqliteReadModelStore,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ olderThanMs }: SweepStaleInvocationsCommand): Promise<SweepReport> {
    // Candidates must reflect everything committed before the sweep began.
    await this.runner.caughtUp();
    const nowMs = this.clock.now();
    const settled: SweptInvocation[] = [];
    for (const open of this.pages<OpenInvocationView>(INVOCATIONS_PROJECTION, OPEN_COLLECTION)) {
      if (nowMs - Date.parse(open.lastActivityAt) <= olderThanMs) continue;
      const swept = await this.settleInvocation(open, olderThanMs);
      if (swept !== undefined) settled.push(swept);
    }
    const releasedHolds: ReleasedHold[] = [];
    for (const balance of this.pages<BalanceView>(BALANCES_PROJECTION, BALANCE_COLLECTION)) {
      if (Object.keys(balance.openHolds).length === 0) continue;
      releasedHolds.push(...(await this.releaseSettledHolds(balance.organizationId, nowMs, olderThanMs)));
    }
    if (settled.length + releasedHolds.length > 0) {
      this.logger.log({ message: 'sweep settled stale requests', olderThanMs, settled: settled.length, releasedHolds: releasedHolds.length });
    }
    return { olderThanMs, settled, releasedHolds };
  }

  private async settleInvocation(open: OpenInvocationView, olderThanMs: number): Promise<SweptInvocation | undefined> {
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
        data: { by: 'sweep', settledAt: isoAt(this.clock), olderThanMs },
      });
      // Nothing appended: the request is still live (not stale by its own stream's account).
      if (events.length === 0 || state.settlement === undefined) return undefined;
      await this.settleHold(open.organizationId, open.invocationId, state.settlement.chargeCredits);
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

  /** Holds left open by a crash between an invocation's settlement and its account's. */
  private async releaseSettledHolds(organizationId: string, nowMs: number, olderThanMs: number): Promise<ReleasedHold[]> {
    const { state: account } = await this.repository.load(accountStreamName(organizationId), accountDecider);
    const released: ReleasedHold[] = [];
    for (const { invocationId } of openHoldsOlderThan(account, nowMs, olderThanMs)) {
      const { state } = await this.repository.load(invocationStreamName(invocationId), invocationDecider);
      if (state.settlement === undefined) continue;
      if (await this.settleHold(organizationId, invocationId, state.settlement.chargeCredits)) {
        released.push({ invocationId, organizationId, chargeCredits: state.settlement.chargeCredits });
      }
    }
    return released;
  }

  /** Settles the account's hold for the invocation; false when there was none left to settle. */
  private async settleHold(organizationId: string, invocationId: string, chargeCredits: number): Promise<boolean> {
    const { events } = await this.repository.handle(
      accountStreamName(organizationId),
      accountDecider,
      { type: 'SettleHold', data: { invocationId, chargeCredits, settledAt: isoAt(this.clock) } },
      { correlationId: invocationId },
    );
    return events.length > 0;
  }

  private *pages<T>(projection: string, collection: string): Generator<T> {
    let afterId: string | undefined;
    for (;;) {
      const page = this.readModels.list<T>(projection, collection, { limit: SWEEP_PAGE_DOCUMENTS, ...(afterId === undefined ? {} : { afterId }) });
      for (const entry of page) yield entry.document;
      if (page.length < SWEEP_PAGE_DOCUMENTS) return;
      afterId = page[page.length - 1]!.id;
    }
  }
}
