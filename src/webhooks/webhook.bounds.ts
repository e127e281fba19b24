/** Bounds of webhook delivery (README.md "Webhooks"), each named once with its unit. */

/**
 * Event types a webhook may subscribe to. All but one are the log's own events; `InvocationOverrun` is
 * delivered for each InvocationSettled that records an overrun (a gateway call priced above its hold,
 * docs/gateway.md "Settlement"). `GatewayBudgetThresholdCrossed` is a key's or a team's `alertAt`
 * threshold reached (docs/gateway.md "Budget alerts").
 */
export const DELIVERABLE_EVENT_TYPES = ['CreditThresholdCrossed', 'InvocationRefused', 'InvocationSettled', 'InvocationOverrun', 'GatewayBudgetThresholdCrossed'] as const;
export type DeliverableEventType = (typeof DELIVERABLE_EVENT_TYPES)[number];

/** Webhooks one organization may register. */
export const MAX_WEBHOOKS_PER_ORGANIZATION = 10;
/** Longest webhook URL, in characters. */
export const MAX_WEBHOOK_URL_CHARS = 2_048;
/** Attempts of one delivery, the first included; after the last failed one it is dead-lettered. */
export const MAX_DELIVERY_ATTEMPTS = 8;
/** Wait before the first retry, in ms; each later wait doubles it. */
export const FIRST_RETRY_WAIT_MS = 1_000;
/** Longest wait between two attempts, in ms. */
export const MAX_RETRY_WAIT_MS = 3_600_000;
/** How long one attempt may take before it counts as failed, in ms. */
export const DELIVERY_ATTEMPT_TIMEOUT_MS = 10_000;
/** How long registration waits for a webhook's host name to resolve, in ms (a delivery's lookup counts in its attempt's time). */
export const WEBHOOK_RESOLVE_TIMEOUT_MS = 5_000;
/** Deliveries sent at once, across every webhook. */
export const MAX_CONCURRENT_DELIVERIES = 8;
/** Deliveries `GET …/deliveries` lists at most (the most recent first). */
export const MAX_LISTED_DELIVERIES = 100;
/** Wait before the delivery worker follows the log again after its subscription failed, in ms. */
export const RESUBSCRIBE_WAIT_MS = 5_000;
/**
 * How long a finished delivery (delivered, dead-lettered or cancelled) and its attempts are kept, in
 * ms (30 days), and how long a removed webhook is; past it they are deleted, so the store does not
 * grow with the log.
 */
export const WEBHOOK_HISTORY_RETENTION_MS = 30 * 24 * 60 * 60 * 1_000;
/** Least time between two passes that delete expired history, in ms (an hour). */
export const WEBHOOK_PRUNE_INTERVAL_MS = 60 * 60 * 1_000;
/** Finished deliveries one pass deletes at most, so a pass never holds the file for long. */
export const MAX_PRUNED_DELIVERIES_PER_PASS = 1_000;
/** Longest error text kept for a failed attempt, in characters (never a response body). */
export const MAX_ATTEMPT_ERROR_CHARS = 200;

/** The wait before attempt `attempt` (2 for the first retry): FIRST_RETRY_WAIT_MS doubling, capped. */
export function retryWaitMs(attempt: number): number {
  if (attempt <= 1) return 0;
  return Math.min(MAX_RETRY_WAIT_MS, FIRST_RETRY_WAIT_MS * 2 ** (attempt - 2));
}
