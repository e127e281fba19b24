import { Command } from '@nestjs/cqrs';
import type { AlertThreshold } from '../accounts/credit-alerts';

/** The organization's credit alert thresholds after the change. */
export interface AlertThresholdsResult {
  readonly organizationId: string;
  readonly thresholds: readonly AlertThreshold[];
}

/**
 * Replaces an organization's credit alert thresholds (README.md "Credit alerts"): a settlement or
 * adjustment that then crosses one appends CreditThresholdCrossed to its account. An empty list removes
 * every alert.
 */
export class SetAlertThresholdsCommand extends Command<AlertThresholdsResult> {
  constructor(
    readonly organizationId: string,
    readonly thresholds: readonly AlertThreshold[],
  ) {
    super();
  }
}
