/**
 * Commands of a credit account (docs/lifecycle.md "Settlement and the account"; docs/http.md). Times
 * are ISO-8601 from the handler's clock: deciders read no clock. The decider re-checks every field at
 * run time and names the bad one.
 */
import type { DomainCommand } from '../domain/decider';
import type { HoldGatewayKey, HoldSettler } from './account.events';
import type { AlertThreshold } from './credit-alerts';
import type { GatewayKeySettings, GatewayRejectionCounts } from './gateway-keys';
import type { GatewayTeamSettings } from './gateway-teams';

/** Operator grant. Repeating `idempotencyKey` with the same request returns the first result. */
export type GrantCredits = DomainCommand<
  'GrantCredits',
  {
    /** Positive integer, at most MAX_LEDGER_ENTRY_CREDITS. */
    readonly credits: number;
    readonly reason: string;
    readonly idempotencyKey: string;
    readonly grantedAt: string;
  }
>;

/** Operator correction, either way. Same idempotency rules as a grant, in the same key space. */
export type AdjustCredits = DomainCommand<
  'AdjustCredits',
  {
    /** Non-zero integer; may be negative. Magnitude at most MAX_LEDGER_ENTRY_CREDITS. */
    readonly credits: number;
    readonly reason: string;
    readonly idempotencyKey: string;
    readonly adjustedAt: string;
  }
>;

/** Changes the organization switch and/or its running-slot limit; at least one must be given. */
export type ChangeSettings = DomainCommand<
  'ChangeSettings',
  {
    readonly aiEnabled?: boolean;
    /** Positive integer, at most MAX_RUNNING_LIMIT. Lowering it below `running` evicts no one. */
    readonly maxRunning?: number;
    readonly changedAt: string;
  }
>;

/**
 * Holds an admitted invocation's `creditHold` and takes a slot. Refused (AdmissionRefusedError) when
 * the account's own admission checks fail, so the stream never over-commits even if a caller skipped
 * `decideAdmission`. The operation checks (unknown or disabled) are the caller's, from the catalog.
 */
export type PlaceHold = DomainCommand<
  'PlaceHold',
  {
    readonly invocationId: string;
    readonly credits: number;
    readonly placedAt: string;
    /** A gateway call: the key must be live and its spend limit must cover the hold too. */
    readonly gatewayKey?: HoldGatewayKey;
    /**
     * What the gateway call asks of its key: the key, as this decision sees it, must still allow the
     * model and a `max_tokens` this large (a change since the call's key check refuses it here).
     */
    readonly gatewayCall?: {
      readonly model: string;
      readonly maxTokens: number;
      /**
       * Every model a Message Batch's requests name (`model` among them): the key must allow each, in
       * this one decision. Absent for a single call, whose one model is `model`.
       */
      readonly models?: readonly string[];
      /** The call's worst-case tokens (input bound + `max_tokens`), held in its minute against the key's `tokensPerMinute`. */
      readonly tokens?: number;
      /** The requests it starts, counted in its minute against the key's `requestsPerMinute`: a batch's request count; absent, 1. */
      readonly requests?: number;
      /** SHA-256 of the secret presented: the one before a rotation is refused here once its grace has ended. */
      readonly keyHash?: string;
    };
  }
>;

/**
 * Closes the invocation's open hold with its charge; a no-op when it has none. `by` names a closer
 * other than the invocation's own run (the sweep, or recovery after a crash); left out, its run.
 */
export type SettleHold = DomainCommand<
  'SettleHold',
  {
    readonly invocationId: string;
    readonly chargeCredits: number;
    readonly settledAt: string;
    readonly by?: HoldSettler;
    /** A gateway call's reported tokens (input of every kind + output); absent when its usage is unknown: the worst case stays counted. */
    readonly reportedTokens?: number;
  }
>;

/** Replaces the credit alert thresholds (at most MAX_ALERT_THRESHOLDS, no two alike). */
export type SetAlertThresholds = DomainCommand<
  'SetAlertThresholds',
  {
    readonly thresholds: readonly AlertThreshold[];
    readonly setAt: string;
  }
>;

/** Issues a gateway key; the caller made the key and passes only its SHA-256. */
export type IssueGatewayKey = DomainCommand<'IssueGatewayKey', GatewayKeySettings & { readonly keyId: string; readonly keyHash: string; readonly issuedAt: string }>;

/** Replaces a live key's settings (its name, models, caps and limit). */
export type ChangeGatewayKey = DomainCommand<'ChangeGatewayKey', GatewayKeySettings & { readonly keyId: string; readonly changedAt: string }>;

/** Gives a live key a new secret (the caller made it and passes its SHA-256); the old one works `graceSeconds` more. */
export type RotateGatewayKey = DomainCommand<
  'RotateGatewayKey',
  { readonly keyId: string; readonly keyHash: string; readonly graceSeconds: number; readonly rotatedAt: string }
>;

/** Revokes a key; a no-op when it is revoked already. */
export type RevokeGatewayKey = DomainCommand<'RevokeGatewayKey', { readonly keyId: string; readonly revokedAt: string }>;

/** Records calls refused before their hold, counted per key and reason over `from`…`to`. */
export type RecordGatewayRejections = DomainCommand<
  'RecordGatewayRejections',
  { readonly rejections: readonly { readonly keyId: string; readonly counts: GatewayRejectionCounts }[]; readonly from: string; readonly to: string }
>;

/** Creates a team (docs/gateway.md "Teams"); a retry with the same id and settings writes nothing. */
export type CreateGatewayTeam = DomainCommand<'CreateGatewayTeam', GatewayTeamSettings & { readonly teamId: string; readonly createdAt: string }>;

/** Replaces a team's settings (its name, limit and alerts) whole. */
export type ChangeGatewayTeam = DomainCommand<'ChangeGatewayTeam', GatewayTeamSettings & { readonly teamId: string; readonly changedAt: string }>;

/** Deletes a team no live key names (refused otherwise: move or revoke its keys first). */
export type DeleteGatewayTeam = DomainCommand<'DeleteGatewayTeam', { readonly teamId: string; readonly deletedAt: string }>;

export type AccountCommand =
  | GrantCredits
  | AdjustCredits
  | ChangeSettings
  | PlaceHold
  | SettleHold
  | SetAlertThresholds
  | IssueGatewayKey
  | ChangeGatewayKey
  | RotateGatewayKey
  | RevokeGatewayKey
  | RecordGatewayRejections
  | CreateGatewayTeam
  | ChangeGatewayTeam
  | DeleteGatewayTeam;
