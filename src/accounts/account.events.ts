/**
 * Events of an organization's credit account (SPEC §3). Stream: `account-<organizationId>`. None of
 * them carries `available`: it is derived (account.state.ts), never stored.
 */
import type { DomainEvent } from '../domain/decider';
import type { AlertThreshold } from './credit-alerts';

export type CreditsGranted = DomainEvent<
  'CreditsGranted',
  {
    /** Positive integer credits. */
    readonly credits: number;
    readonly reason: string;
    readonly idempotencyKey: string;
    readonly grantedAt: string;
  }
>;

export type CreditsAdjusted = DomainEvent<
  'CreditsAdjusted',
  {
    /** Non-zero integer credits; negative takes credits away. */
    readonly credits: number;
    readonly reason: string;
    readonly idempotencyKey: string;
    readonly adjustedAt: string;
  }
>;

/** Carries both settings as they are after the change, so a reader needs no earlier event. */
export type OrganizationSettingsChanged = DomainEvent<
  'OrganizationSettingsChanged',
  {
    readonly aiEnabled: boolean;
    readonly maxRunning: number;
    readonly changedAt: string;
  }
>;

/** Holds `credits` for an invocation and takes one running slot. */
export type HoldPlaced = DomainEvent<
  'HoldPlaced',
  {
    readonly invocationId: string;
    readonly credits: number;
    readonly placedAt: string;
  }
>;

/**
 * Closes an invocation's hold: releases `heldCredits` and the slot, and charges `chargedCredits`
 * (which may exceed the hold by a crossing turn, SPEC §5 rule 8; or be 0).
 */
export type HoldSettled = DomainEvent<
  'HoldSettled',
  {
    readonly invocationId: string;
    readonly heldCredits: number;
    readonly chargedCredits: number;
    readonly settledAt: string;
  }
>;

/** Replaces the organization's credit alert thresholds (SPEC §13); an empty list removes them all. */
export type AlertThresholdsSet = DomainEvent<
  'AlertThresholdsSet',
  {
    readonly thresholds: readonly AlertThreshold[];
    readonly setAt: string;
  }
>;

/**
 * A settlement or an adjustment took a figure past a threshold that was not past before (SPEC §13).
 * Appended once per crossing: again only after the figure came back (e.g. after a grant).
 */
export type CreditThresholdCrossed = DomainEvent<
  'CreditThresholdCrossed',
  {
    readonly threshold: AlertThreshold;
    /** The figures right after the event that crossed it. */
    readonly available: number;
    readonly charged: number;
    /** Grants plus adjustments. */
    readonly grantedCredits: number;
    /** `floor(charged × 100 / grantedCredits)`; absent when nothing was granted. */
    readonly usedPercent?: number;
    /** What crossed it: the settlement of an invocation, or an adjustment by its idempotency key. */
    readonly cause: { readonly kind: 'settlement'; readonly invocationId: string } | { readonly kind: 'adjustment'; readonly idempotencyKey: string };
    readonly crossedAt: string;
  }
>;

export type AccountEvent =
  | CreditsGranted
  | CreditsAdjusted
  | OrganizationSettingsChanged
  | HoldPlaced
  | HoldSettled
  | AlertThresholdsSet
  | CreditThresholdCrossed;

export function accountStreamName(organizationId: string): string {
  return `account-${organizationId}`;
}
