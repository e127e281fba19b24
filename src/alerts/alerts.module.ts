import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AggregatesModule } from '../aggregates/aggregates.module';
import { SetAlertThresholdsHandler } from './set-alert-thresholds.handler';

/** Credit alerts (README.md "Alerts"): an organization's thresholds. */
export const ALERTS_COMMAND_HANDLERS = [SetAlertThresholdsHandler];

@Module({
  imports: [CqrsModule, AggregatesModule],
  providers: [...ALERTS_COMMAND_HANDLERS],
})
export class AlertsModule {}
