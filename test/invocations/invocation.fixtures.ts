/**
 * Commands, events and histories of one invocation. Times are offsets from T0 in ms, so a test reads
 * "dispatched at +20 ms, swept at +61 s".
 */
import type { AdmissionRefusal } from '../../src/accounts/admission.policy';
import type { Publication } from '../../src/catalog/operation.events';
import type {
  CompleteInvocation,
  ConversationReport,
  FailInvocation,
  InvocationCommand,
  RecordAttempt,
  SettleInvocation,
} from '../../src/invocations/invocation.commands';
import type {
  AttemptRecorded,
  InvocationCompleted,
  InvocationEstimated,
  InvocationEvent,
  InvocationFailed,
  InvocationSettled,
  SettledBy,
  SettlementTransition,
} from '../../src/invocations/invocation.events';
import type { AttemptRecord } from '../../src/runtime/conversation.types';
import type { Usage } from '../../src/runtime/provider.port';

export const T0_MS = Date.parse('2025-01-01T00:00:00.000Z');
/** ISO-8601 instant `ms` after T0. */
export const at = (ms: number): string => new Date(T0_MS + ms).toISOString();

export const PUBLICATION: Publication = {
  version: 2,
  routing: { provider: 'scripted', model: 'scripted-1' },
  limits: { maxTurns: 4, maxToolCalls: 8, totalTimeMs: 60_000, attemptTimeoutMs: 20_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 3 },
  prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 },
  creditHold: 500,
  enabled: true,
  publishedAt: at(-86_400_000),
};

/** 1,234 in + 567 out at 3,000 / 15,000 per MTok: 12.207 credits, rounded up to 13. */
export const USAGE_A: Usage = { inputTokens: 1_234, outputTokens: 567, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 };
export const PRICE_A = 13;
/** 1,000 in + 200 out + 1,000 cache reads: 6.3 credits, rounded up to 7. */
export const USAGE_B: Usage = { inputTokens: 1_000, outputTokens: 200, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 1_000, webSearchRequests: 0 };
export const PRICE_B = 7;
export const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 };

export const sumUsage = (...usages: Usage[]): Usage =>
  usages.reduce((a, b) => ({
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    cacheWrite1hTokens: a.cacheWrite1hTokens + b.cacheWrite1hTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    webSearchRequests: a.webSearchRequests + b.webSearchRequests,
  }), NO_USAGE);

// Commands

export const estimate = (publication: Publication | null = PUBLICATION, idempotencyKey?: string): InvocationCommand => ({
  type: 'EstimateInvocation',
  data: {
    invocationId: 'inv-1',
    operationId: 'generate-query',
    organizationId: 'org-1',
    publication,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    estimatedAt: at(0),
  },
});

export const refuse = (refusal: AdmissionRefusal): InvocationCommand => ({
  type: 'RefuseInvocation',
  data: { ...refusal, refusedAt: at(5) },
});

export const reserve = (): InvocationCommand => ({ type: 'ReserveInvocation', data: { reservedAt: at(10) } });
export const dispatch = (): InvocationCommand => ({ type: 'DispatchInvocation', data: { dispatchedAt: at(20) } });

/**
 * An attempt of turn `turn`, retry `retry`, 30 ms long, sent between dispatch (+20 ms) and completion
 * (+5 s) even for a conversation of 40 turns, priced from USAGE_A unless overridden. An
 * override to `undefined` removes the field, as it is absent (not undefined) in a stored event.
 */
export const attemptRecord = (turn: number, retry: number, overrides: Partial<AttemptRecord> = {}): AttemptRecord =>
  withoutUndefined({
  turn,
  retry,
  startedAtMs: T0_MS + 100 + 40 * ((turn - 1) * 3 + retry),
  durationMs: 30,
  waitBeforeMs: retry === 0 ? 0 : 10 * retry,
  classification: 'ok',
  timedOut: false,
  httpStatus: 200,
  providerRequestId: `req-${turn}-${retry}`,
  model: 'scripted-1',
  usage: USAGE_A,
  priceCredits: PRICE_A,
  ...overrides,
});

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export const recordAttempt = (record: AttemptRecord): RecordAttempt => ({ type: 'RecordAttempt', data: record });

export const report = (overrides: Partial<ConversationReport> = {}): ConversationReport => ({
  turnsUsed: 1,
  toolCallsUsed: 0,
  spentCredits: PRICE_A,
  attemptCount: 1,
  usageTotals: USAGE_A,
  usageReported: true,
  ...overrides,
});

export const complete = (
  overrides: Partial<CompleteInvocation['data']> = {},
): CompleteInvocation => ({
  type: 'CompleteInvocation',
  data: { outcome: 'completed', ...report(), completedAt: at(5_000), ...overrides },
});

export const fail = (overrides: Partial<FailInvocation['data']> = {}): FailInvocation => ({
  type: 'FailInvocation',
  data: { fault: 'malformed_request', ...report(), failedAt: at(5_000), ...overrides },
});

export const markPending = (): InvocationCommand => ({ type: 'MarkInvocationPending', data: { pendingAt: at(5_010) } });

export const settle = (by: 'runtime' | 'exception', settledAtMs = 5_100): SettleInvocation => ({
  type: 'SettleInvocation',
  data: { by, settledAt: at(settledAtMs) },
});

export const sweep = (settledAtMs: number, olderThanMs: number): SettleInvocation => ({
  type: 'SettleInvocation',
  data: { by: 'sweep', settledAt: at(settledAtMs), olderThanMs },
});

// Events

export const estimated = (publication: Publication | null = PUBLICATION): InvocationEstimated => ({
  type: 'InvocationEstimated',
  data: { invocationId: 'inv-1', operationId: 'generate-query', organizationId: 'org-1', publication, estimatedAt: at(0) },
});

export const reserved = (creditHold = PUBLICATION.creditHold): InvocationEvent => ({
  type: 'InvocationReserved',
  data: { creditHold, reservedAt: at(10) },
});

export const dispatched = (): InvocationEvent => ({ type: 'InvocationDispatched', data: { dispatchedAt: at(20) } });

export const attemptRecorded = (record: AttemptRecord): AttemptRecorded => ({ type: 'AttemptRecorded', data: record });

export const completed = (overrides: Partial<InvocationCompleted['data']> = {}): InvocationCompleted => ({
  type: 'InvocationCompleted',
  data: { outcome: 'completed', ...report(), attemptsTruncated: false, completedAt: at(5_000), ...overrides },
});

export const failed = (overrides: Partial<InvocationFailed['data']> = {}): InvocationFailed => ({
  type: 'InvocationFailed',
  data: { fault: 'malformed_request', ...report(), attemptsTruncated: false, failedAt: at(5_000), ...overrides },
});

export const pending = (): InvocationEvent => ({ type: 'InvocationPending', data: { pendingAt: at(5_010) } });

export const settled = (
  transition: SettlementTransition,
  chargeCredits: number,
  heldCredits: number,
  settledBy: SettledBy,
  settledAtMs = 5_100,
): InvocationSettled => ({
  type: 'InvocationSettled',
  data: { transition, chargeCredits, heldCredits, settledBy, settledAt: at(settledAtMs) },
});

// Histories: one per state the lifecycle can be in.

const UNMEASURED_ATTEMPT = attemptRecord(1, 0, { usage: undefined, priceCredits: 0 });
const UNMEASURED = { spentCredits: 0, usageTotals: NO_USAGE, usageReported: false };

export const HISTORY = {
  initial: [] as InvocationEvent[],
  estimated: [estimated()],
  refused: [estimated(), { type: 'InvocationRefused', data: { transition: 2, reason: 'no_running_slot', figures: { running: 10, maxRunning: 10 }, refusedAt: at(5) } }],
  reserved: [estimated(), reserved()],
  dispatched: [estimated(), reserved(), dispatched()],
  completed: [estimated(), reserved(), dispatched(), attemptRecorded(attemptRecord(1, 0)), completed()],
  completedUnmeasured: [
    estimated(),
    reserved(),
    dispatched(),
    attemptRecorded(UNMEASURED_ATTEMPT),
    completed(UNMEASURED),
  ],
  pending: [estimated(), reserved(), dispatched(), attemptRecorded(UNMEASURED_ATTEMPT), completed(UNMEASURED), pending()],
  failed: [estimated(), reserved(), dispatched(), attemptRecorded(attemptRecord(1, 0)), failed()],
  settled: [estimated(), reserved(), dispatched(), attemptRecorded(attemptRecord(1, 0)), completed(), settled(8, PRICE_A, 500, 'runtime')],
} satisfies Record<string, InvocationEvent[]>;

export type HistoryName = keyof typeof HISTORY;
