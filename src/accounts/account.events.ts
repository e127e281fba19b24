/**
 * Events of an organization's credit account (SPEC §3). Stream: `account-<organizationId>`. None of
 * them carries `available`: it is derived (account.state.ts), never stored.
 */
import type { DomainEvent } from '../domain/decider';

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

export type AccountEvent = CreditsGranted | CreditsAdjusted | OrganizationSettingsChanged | HoldPlaced | HoldSettled;

export function accountStreamName(organizationId: string): string {
  return `account-${organizationId}`;
}
