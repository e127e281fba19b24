import { Inject } from '@nestjs/common';
import { CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../domain/clock.token';
import type { Clock } from '../runtime';
import { CancelInvocationCommand, type CancellationRequested } from './cancel-invocation.command';
import { invocationDecider } from './invocation.decider';
import { invocationStreamName } from './invocation.events';
import { UnknownInvocationError } from './invocation-errors';
import { RunningInvocations } from './running-invocations';

/** Records the request in the invocation's stream; a run in this process is told at once. */
@CommandHandler(CancelInvocationCommand)
export class CancelInvocationHandler implements ICommandHandler<CancelInvocationCommand, CancellationRequested> {
  constructor(
    private readonly repository: AggregateRepository,
    private readonly running: RunningInvocations,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ invocationId, requestedBy, organizationId }: CancelInvocationCommand): Promise<CancellationRequested> {
    const stream = invocationStreamName(invocationId);
    const existing = await this.repository.load(stream, invocationDecider);
    if (existing.revision === undefined || (organizationId !== undefined && existing.state.organizationId !== organizationId)) {
      throw new UnknownInvocationError(invocationId);
    }
    const { state } = await this.repository.handle(
      stream,
      invocationDecider,
      { type: 'RequestCancellation', data: { requestedBy, requestedAt: isoAt(this.clock) } },
      { correlationId: invocationId },
    );
    const cancellation = state.cancellation!;
    // The log is the channel; telling a local run directly only saves it the subscription's delay.
    this.running.cancel(invocationId, cancellation);
    return { invocationId, state: state.status as CancellationRequested['state'], ...cancellation };
  }
}
