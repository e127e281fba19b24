/**
 * Credit alerts (README.md "Credit alerts"): thresholds an organization sets on its account, and when a
 * figure is past one. Integer arithmetic only: the share of granted credits used is compared as
 * `charged × 100 > percent × granted` in bigint, so no float touches money and no product overflows.
 */

/** `available` went below `credits`. */
export interface AvailableBelowThreshold {
  readonly kind: 'available_below';
  readonly credits: number;
}

/** More than `percent` % of the credits granted (grants plus adjustments) has been charged. */
export interface UsedShareAboveThreshold {
  readonly kind: 'used_share_above';
  readonly percent: number;
}

export type AlertThreshold = AvailableBelowThreshold | UsedShareAboveThreshold;

export const ALERT_THRESHOLD_KINDS = ['available_below', 'used_share_above'] as const;
/** Thresholds one organization may set at once. */
export const MAX_ALERT_THRESHOLDS = 10;
/** Highest `used_share_above` percent: charges can pass the grants only by a crossing turn. */
export const MAX_USED_SHARE_PERCENT = 100;

/** The account figures a threshold is read against. */
export interface AlertFigures {
  readonly available: number;
  readonly charged: number;
  /** Grants plus adjustments. */
  readonly grantedCredits: number;
}

/** One name per threshold: two thresholds with the same name are the same alert. */
export function thresholdKey(threshold: AlertThreshold): string {
  return threshold.kind === 'available_below' ? `available_below:${threshold.credits}` : `used_share_above:${threshold.percent}`;
}

/** Whether the figures are past the threshold. */
export function isPast(threshold: AlertThreshold, figures: AlertFigures): boolean {
  if (threshold.kind === 'available_below') return figures.available < threshold.credits;
  return BigInt(figures.charged) * 100n > BigInt(threshold.percent) * BigInt(figures.grantedCredits);
}

/** The share used, in whole percent rounded down (undefined when nothing was granted). */
export function usedPercentFloor(figures: AlertFigures): number | undefined {
  if (figures.grantedCredits <= 0) return undefined;
  return Number((BigInt(figures.charged) * 100n) / BigInt(figures.grantedCredits));
}
