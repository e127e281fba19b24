/**
 * Bounds of a credit account (docs/lifecycle.md "Settlement and the account"), each named once with its
 * unit.
 */

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
 * Bound of every balance figure (granted, adjustments, charged, held, available) and of every partial
 * sum of `available = granted + adjustments − charged − held`, in credits: the exact-integer range,
 * on both sides of zero. A command that would take one past it is refused (docs/lifecycle.md).
 */
export const MAX_ACCOUNT_TOTAL_CREDITS = Number.MAX_SAFE_INTEGER;
/**
 * Credits a settlement may charge past its hold (the turn that crossed it), in credits. Admission
 * keeps this much room per running invocation under MAX_ACCOUNT_TOTAL_CREDITS, so every settlement
 * within it fits the range and is always accepted (`ledger_totals_bound` refuses the hold instead).
 */
export const MAX_HOLD_OVERRUN_CREDITS = 1_000_000_000_000;
/** Models one hold may name for its key to allow (a Message Batch's distinct models): as many as the rate card may hold. */
export const MAX_HOLD_MODELS = 1_000;
/** Requests one hold may count in its key's minute (a Message Batch's): Anthropic's bound on a batch's requests. */
export const MAX_HOLD_REQUESTS = 100_000;
