/** Bounds of a credit account (SPEC §3), each named once with its unit. */

/** Running invocations an organization may have before `maxRunning` is set: its default slot count. */
export const DEFAULT_MAX_RUNNING = 10;
/** Highest `maxRunning` an operator may set, in running invocations. */
export const MAX_RUNNING_LIMIT = 1_000;
/**
 * Largest single grant, and largest magnitude of a single adjustment, in credits. With the totals
 * checked against Number.MAX_SAFE_INTEGER it keeps every balance figure an exact integer.
 */
export const MAX_LEDGER_ENTRY_CREDITS = 1_000_000_000_000;
/**
 * Bound of `granted + |adjustments| + charged + held`, in credits. Every balance figure and every
 * partial sum of `available = granted + adjustments − charged − held` lies within it, so keeping
 * that sum within the exact-integer range keeps every total exact; a command that would take it
 * past is refused.
 */
export const MAX_ACCOUNT_TOTAL_CREDITS = Number.MAX_SAFE_INTEGER;
