import { Inject } from '@nestjs/common';
import { CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../domain/clock.token';
import { UnknownOrganizationError } from '../invocations/invocation-errors';
import type { Clock } from '../runtime';
import { SetAlertThresholdsCommand, type AlertThresholdsResult } from './set-alert-thresholds.command';

@CommandHandler(SetAlertThresholdsCommand)
export class SetAlertThresholdsHandler implements ICommandHandler<SetAlertThresholdsCommand, AlertThresholdsResult> {
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ organizationId, thresholds }: SetAlertThresholdsCommand): Promise<AlertThresholdsResult> {
    const stream = accountStreamName(organizationId);
    // An organization nobody funded or configured is unknown (404), never created by its alerts.
    if (!(await this.repository.load(stream, accountDecider)).state.exists) throw new UnknownOrganizationError(organizationId);
    const { state } = await this.repository.handle(stream, accountDecider, {
      type: 'SetAlertThresholds',
      data: { thresholds, setAt: isoAt(this.clock) },
    });
    return { organizationId, thresholds: state.alertThresholds };
  }
}
