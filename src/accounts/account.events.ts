/**
 * Events of an organization's credit account (docs/lifecycle.md "Settlement and the account"). Stream:
 * `account-<organizationId>`. None of them carries `available`: it is derived (account.state.ts), never
 * stored.
 */
import type { DomainEvent } from '../domain/decider';
import type { AlertThreshold } from './credit-alerts';
import type { GatewayKeySettings, GatewayRejectionCounts, SpendPeriod } from './gateway-keys';
import type { GatewayTeamSettings } from './gateway-teams';

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

/** A gateway call's hold also counts against its key's spend limit, in the period it was admitted in. */
export interface HoldGatewayKey {
  readonly keyId: string;
  /** `2026-12-01` (a day), `2026-W49` (an ISO week), `2026-12` (a month) or `total`: the key's period at admission. */
  readonly period: string;
  /**
   * The key's team at admission and the team's period then (docs/gateway.md "Teams"): the hold and its
   * charge count against that team, whatever the key names later. Absent: the key had no team.
   */
  readonly team?: { readonly teamId: string; readonly period: string };
  /**
   * The call's worst-case tokens (input bound + `max_tokens`), counted in its UTC minute against the
   * key's `tokensPerMinute` until its settlement trues them up. Absent in a PlaceHold (the decider
   * takes the call's) and in holds placed before rate limits existed.
   */
  readonly tokens?: number;
  /** The UTC minute (`2026-12-03T20:44`) the call counts in; absent as `tokens` is. */
  readonly minute?: string;
  /** The requests it counts in that minute against the key's `requestsPerMinute`: a Message Batch's request count; absent, 1. */
  readonly requests?: number;
}

/** Holds `credits` for an invocation and takes one running slot. */
export type HoldPlaced = DomainEvent<
  'HoldPlaced',
  {
    readonly invocationId: string;
    readonly credits: number;
    readonly placedAt: string;
    /** Present for a gateway call (docs/gateway.md). */
    readonly gatewayKey?: HoldGatewayKey;
  }
>;

/** A gateway key was issued: its settings and the SHA-256 of the key, never the key (docs/gateway.md). */
export type GatewayKeyIssued = DomainEvent<
  'GatewayKeyIssued',
  GatewayKeySettings & { readonly keyId: string; readonly keyHash: string; readonly issuedAt: string }
>;

/** A key's settings after a change, whole, so a reader needs no earlier event. */
export type GatewayKeyChanged = DomainEvent<'GatewayKeyChanged', GatewayKeySettings & { readonly keyId: string; readonly changedAt: string }>;

/**
 * The key has a new secret (its SHA-256 here, never the secret); the one before works until
 * `previousValidUntil`, then is refused (docs/gateway.md "Keys"). Same id, spend and limits.
 */
export type GatewayKeyRotated = DomainEvent<
  'GatewayKeyRotated',
  { readonly keyId: string; readonly keyHash: string; readonly previousValidUntil: string; readonly rotatedAt: string }
>;

/** The key is refused from now on, on every instance: admission reads this stream. */
export type GatewayKeyRevoked = DomainEvent<'GatewayKeyRevoked', { readonly keyId: string; readonly revokedAt: string }>;

/**
 * Calls by this key refused before their hold between `from` and `to`, counted by reason: one event
 * per key per instance per flush (GATEWAY_REJECTIONS_FLUSH_MS), never one per call, so a flood of
 * refused calls cannot grow the log faster than that (docs/gateway.md "Rejections before admission").
 */
export type GatewayCallsRejected = DomainEvent<
  'GatewayCallsRejected',
  { readonly keyId: string; readonly counts: GatewayRejectionCounts; readonly from: string; readonly to: string }
>;

/** A team was created (docs/gateway.md "Teams"). */
export type GatewayTeamCreated = DomainEvent<'GatewayTeamCreated', GatewayTeamSettings & { readonly teamId: string; readonly createdAt: string }>;

/** A team's settings after a change, whole, so a reader needs no earlier event. */
export type GatewayTeamChanged = DomainEvent<'GatewayTeamChanged', GatewayTeamSettings & { readonly teamId: string; readonly changedAt: string }>;

/** The team is gone: no live key named it (the decider refuses otherwise); holds placed under it settle without it. */
export type GatewayTeamDeleted = DomainEvent<'GatewayTeamDeleted', { readonly teamId: string; readonly deletedAt: string }>;

/**
 * A settlement took what a key or a team spent in its period to `percent` % of its spend limit or past
 * it (docs/gateway.md "Budget alerts"): recorded in the settlement's own append, once per threshold
 * per period, so however many instances settle calls it is delivered once.
 */
export type GatewayBudgetThresholdCrossed = DomainEvent<
  'GatewayBudgetThresholdCrossed',
  {
    /** The key or the team whose limit it is, with its name at the time. */
    readonly budget: { readonly kind: 'key'; readonly keyId: string; readonly name: string } | { readonly kind: 'team'; readonly teamId: string; readonly name: string };
    readonly percent: number;
    readonly period: SpendPeriod;
    /** The period counted: `2026-12-01`, `2026-W49`, `2026-12` or `total`. */
    readonly periodStart: string;
    readonly limitCredits: number;
    /** Charged in the period, the settlement included. */
    readonly spentCredits: number;
    /** Held by the level's calls still in flight in the period. */
    readonly heldCredits: number;
    /** The settlement that reached it. */
    readonly invocationId: string;
    readonly crossedAt: string;
  }
>;

/** Who settles a hold when the invocation's own run did not: the sweep, or recovery after a crash. */
export const HOLD_SETTLERS = ['sweep', 'recovery'] as const;
export type HoldSettler = (typeof HOLD_SETTLERS)[number];

/**
 * Closes an invocation's hold: releases `heldCredits` and the slot, and charges `chargedCredits`
 * (which may exceed the hold by a crossing turn, docs/rules.md step 8; or be 0). `settledBy` is
 * present only when the sweep or recovery settled it, not the invocation's own run (and in no event
 * written before it existed).
 */
export type HoldSettled = DomainEvent<
  'HoldSettled',
  {
    readonly invocationId: string;
    readonly heldCredits: number;
    readonly chargedCredits: number;
    readonly settledAt: string;
    readonly settledBy?: HoldSettler;
    /** A gateway call's tokens as its usage reported them: its minute counts these instead of its worst case. */
    readonly reportedTokens?: number;
  }
>;

/**
 * Replaces the organization's credit alert thresholds (README.md "Credit alerts"); an empty list
 * removes them all.
 */
export type AlertThresholdsSet = DomainEvent<
  'AlertThresholdsSet',
  {
    readonly thresholds: readonly AlertThreshold[];
    readonly setAt: string;
  }
>;

/**
 * A settlement or an adjustment took a figure past a threshold that was not past before
 * (README.md "Credit alerts"). Appended once per crossing: again only after the figure came back (e.g.
 * after a grant).
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
  | CreditThresholdCrossed
  | GatewayKeyIssued
  | GatewayKeyChanged
  | GatewayKeyRotated
  | GatewayKeyRevoked
  | GatewayCallsRejected
  | GatewayTeamCreated
  | GatewayTeamChanged
  | GatewayTeamDeleted
  | GatewayBudgetThresholdCrossed;

export function accountStreamName(organizationId: string): string {
  return `account-${organizationId}`;
}
