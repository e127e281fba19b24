/** Commands and events of a credit account, small enough to read in a given/when/then. */
import type { AdjustCredits, ChangeSettings, GrantCredits, PlaceHold, SetAlertThresholds, SettleHold } from '../../src/accounts/account.commands';
import type { AlertThreshold } from '../../src/accounts/credit-alerts';
import type {
  AlertThresholdsSet,
  CreditThresholdCrossed,
  CreditsAdjusted,
  CreditsGranted,
  HoldPlaced,
  HoldSettled,
  OrganizationSettingsChanged,
} from '../../src/accounts/account.events';

export const AT = '2025-01-01T00:00:00.000Z';

export const grant = (credits: number, idempotencyKey = 'grant-1', reason = 'welcome credits'): GrantCredits => ({
  type: 'GrantCredits',
  data: { credits, reason, idempotencyKey, grantedAt: AT },
});

export const granted = (credits: number, idempotencyKey = 'grant-1', reason = 'welcome credits'): CreditsGranted => ({
  type: 'CreditsGranted',
  data: { credits, reason, idempotencyKey, grantedAt: AT },
});

export const adjust = (credits: number, idempotencyKey = 'adjust-1', reason = 'correction'): AdjustCredits => ({
  type: 'AdjustCredits',
  data: { credits, reason, idempotencyKey, adjustedAt: AT },
});

export const adjusted = (credits: number, idempotencyKey = 'adjust-1', reason = 'correction'): CreditsAdjusted => ({
  type: 'CreditsAdjusted',
  data: { credits, reason, idempotencyKey, adjustedAt: AT },
});

export const changeSettings = (settings: { aiEnabled?: boolean; maxRunning?: number }): ChangeSettings => ({
  type: 'ChangeSettings',
  data: { ...settings, changedAt: AT },
});

export const settingsChanged = (aiEnabled: boolean, maxRunning: number): OrganizationSettingsChanged => ({
  type: 'OrganizationSettingsChanged',
  data: { aiEnabled, maxRunning, changedAt: AT },
});

export const placeHold = (invocationId: string, credits: number): PlaceHold => ({
  type: 'PlaceHold',
  data: { invocationId, credits, placedAt: AT },
});

export const holdPlaced = (invocationId: string, credits: number): HoldPlaced => ({
  type: 'HoldPlaced',
  data: { invocationId, credits, placedAt: AT },
});

export const settleHold = (invocationId: string, chargeCredits: number): SettleHold => ({
  type: 'SettleHold',
  data: { invocationId, chargeCredits, settledAt: AT },
});

export const holdSettled = (invocationId: string, heldCredits: number, chargedCredits: number): HoldSettled => ({
  type: 'HoldSettled',
  data: { invocationId, heldCredits, chargedCredits, settledAt: AT },
});

export const setAlerts = (thresholds: readonly AlertThreshold[]): SetAlertThresholds => ({
  type: 'SetAlertThresholds',
  data: { thresholds, setAt: AT },
});

export const alertsSet = (thresholds: readonly AlertThreshold[]): AlertThresholdsSet => ({
  type: 'AlertThresholdsSet',
  data: { thresholds, setAt: AT },
});

export const availableBelow = (credits: number): AlertThreshold => ({ kind: 'available_below', credits });
export const usedShareAbove = (percent: number): AlertThreshold => ({ kind: 'used_share_above', percent });

/** The crossing event as the decider writes it, figures given. */
export const thresholdCrossed = (
  threshold: AlertThreshold,
  figures: { available: number; charged: number; grantedCredits: number; usedPercent?: number },
  cause: CreditThresholdCrossed['data']['cause'],
): CreditThresholdCrossed => ({
  type: 'CreditThresholdCrossed',
  data: { threshold, ...figures, cause, crossedAt: AT },
});
