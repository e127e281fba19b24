/**
 * What the console reads from the public HTTP API, typed as a client sees it. Only the fields the
 * pages show are named; the API may send more. Credits are integers, times in ms or ISO strings.
 */

export type InvocationState = 'estimated' | 'refused' | 'reserved' | 'dispatched' | 'completed' | 'failed' | 'pending' | 'settled';

export const INVOCATION_STATES: readonly InvocationState[] = [
  'estimated',
  'refused',
  'reserved',
  'dispatched',
  'completed',
  'failed',
  'pending',
  'settled',
];

/** The conversation outcomes a page can filter by. */
export const OUTCOMES = [
  'completed',
  'turn_limit',
  'tool_limit',
  'credit_limit',
  'time_limit',
  'refused_by_model',
  'incomplete',
  'protocol_error',
  'cancelled',
  'failed',
] as const;

/** A state after which nothing more happens to an invocation. */
export function isFinal(state: InvocationState): boolean {
  return state === 'refused' || state === 'settled';
}

/** `GET /v1/invocations/:id` */
export interface InvocationStatus {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly operationId: string;
  readonly state: InvocationState;
  readonly outcome?: string;
  readonly refusalReason?: string;
  readonly publicationVersion?: number;
  readonly endingLimit?: string;
  readonly fault?: string;
  readonly estimate: number;
  readonly charge: number;
  readonly turnsUsed: number;
  readonly toolCallsUsed: number;
  readonly spentCredits?: number;
  readonly attemptCount?: number;
  readonly estimatedAt?: string;
  readonly settledAt?: string;
}

/** Token counts by kind; the kinds are whatever the API reports (input, output, cache writes, …). */
export type Usage = Readonly<Record<string, number>>;

export interface AttemptRow {
  readonly turn: number;
  readonly retry: number;
  readonly startedAtMs: number;
  readonly durationMs: number;
  readonly waitBeforeMs: number;
  readonly classification: string;
  readonly timedOut?: boolean;
  readonly httpStatus?: number;
  readonly providerRequestId?: string;
  readonly model: string;
  readonly usage?: Usage;
  readonly priceCredits: number;
}

/** `GET /v1/invocations/:id/attempts` */
export interface AttemptHistory {
  readonly invocationId: string;
  readonly attempts: readonly AttemptRow[];
  readonly attemptCount: number;
  readonly attemptsTruncated: boolean;
  readonly usageTotals: Usage;
  readonly priceTotalCredits: number;
}

export interface EndingLimit {
  readonly name: string;
  readonly value: number;
  readonly operationId: string;
  readonly publicationVersion: number;
}

export interface Settlement {
  readonly transition: number;
  readonly by: string;
  readonly chargeCredits: number;
}

/** `GET /v1/invocations/:id/explanation` */
export interface Explanation {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly operationId: string;
  readonly publicationVersion?: number;
  readonly state: InvocationState;
  readonly outcome?: string;
  readonly refusal?: { readonly reason: string; readonly figures: Readonly<Record<string, unknown>>; readonly transition: number };
  readonly endingLimit?: EndingLimit;
  readonly fault?: string;
  readonly turns: { readonly used: number; readonly limit?: number };
  readonly toolCalls: { readonly used: number; readonly limit?: number };
  readonly credits: { readonly spent: number; readonly hold: number; readonly charge?: number };
  readonly retries: number;
  readonly settlement?: Settlement;
  readonly sentence: string;
}

/** One recorded event as the log holds it (`GET /v1/streams/:name`, or one SSE message). */
export interface LoggedEvent {
  readonly type: string;
  readonly revision: string;
  readonly recordedAt?: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** `GET /v1/streams/:streamName` */
export interface StreamPage {
  readonly streamName: string;
  readonly events: readonly LoggedEvent[];
  readonly nextFrom?: string;
}

export interface PublicationWindow {
  readonly version: number;
  readonly routing: Readonly<Record<string, unknown>>;
  readonly limits: Readonly<Record<string, unknown>>;
  readonly prices: Readonly<Record<string, unknown>>;
  readonly creditHold: number;
  readonly enabled: boolean;
  readonly from: string;
  readonly until?: string;
}

/** `GET /v1/operations/:id/publications` */
export interface RoutingBudgets {
  readonly operationId: string;
  readonly versions: readonly PublicationWindow[];
}

/** `GET /v1/organizations/:id/balance` */
export interface Balance {
  readonly organizationId: string;
  readonly granted: number;
  readonly adjustments: number;
  readonly held: number;
  readonly charged: number;
  readonly available: number;
  readonly running: number;
}

/** One page of a cursor-paged list. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor?: string;
}
