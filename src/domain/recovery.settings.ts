/**
 * How recovery runs (src/invocations/invocation-recovery.ts, docs/lifecycle.md "Recovery"): its
 * bounds and its injection token, beside CLOCK, so the configuration can read them without knowing
 * the accounting core.
 */

/** How often recovery looks for what a crash left behind, by default, in ms. */
export const DEFAULT_RECOVERY_INTERVAL_MS = 60_000;
/** The shortest and longest period a deployment may set, in ms (`0` turns recovery off instead). */
export const MIN_RECOVERY_INTERVAL_MS = 1_000;
export const MAX_RECOVERY_INTERVAL_MS = 86_400_000;
/**
 * How long a request must have shown no sign of life before recovery finishes it, by default, in ms.
 * A live request moves within milliseconds between its transitions, and a dispatched one is also
 * left alone until its conversation deadline has passed (docs/lifecycle.md), so this is only how
 * long a crash's leftovers wait.
 */
export const DEFAULT_RECOVERY_STALE_AFTER_MS = 300_000;
/** Bounds of the staleness threshold, in ms (the manual sweep's lowest threshold, up to a week). */
export const MIN_RECOVERY_STALE_AFTER_MS = 1_000;
export const MAX_RECOVERY_STALE_AFTER_MS = 604_800_000;

/**
 * How long an instance's lease lasts after its last renewal, by default, in ms
 * (src/invocations/instance-lease.ts): once it has lapsed, the instance counts as stopped and
 * recovery settles what it owned at once. A live instance renews it every third of this.
 */
export const DEFAULT_LEASE_DURATION_MS = 30_000;
/** Bounds of the lease's duration, in ms (a second, up to five minutes: a crash's holds wait at most this plus a period). */
export const MIN_LEASE_DURATION_MS = 1_000;
export const MAX_LEASE_DURATION_MS = 300_000;

export interface RecoverySettings {
  /** Period between passes, in ms; 0: recovery is off and only the manual sweep settles leftovers. */
  readonly intervalMs: number;
  /** Staleness threshold of each pass, in ms (the sweep's `olderThanMs`). */
  readonly staleAfterMs: number;
}

/** The injection token of the RecoverySettings (provided from the configuration by the composition root). */
export const RECOVERY_SETTINGS = Symbol('RECOVERY_SETTINGS');
