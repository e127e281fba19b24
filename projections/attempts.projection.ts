import type { RecordedEvent } from '../src/event-store/event-store.port';
import { MAX_RETAINED_ATTEMPTS, type InvocationEvent } from '../src/invocations/invocation.events';
import { addUsageSaturating, NO_USAGE } from '../src/runtime/usage';
import type { Projection } from '../src/projection-runner';
import type { AttemptRecord, Usage } from '../src/runtime';
import { currentLedgerEvent } from '../src/upcasters/ledger.upcasters';
import { streamId } from './stream-names';

export const ATTEMPTS_PROJECTION = 'attempts';
/** One document per invocation (docs/http.md `GET /v1/invocations/:id/attempts`), indexed by organization. */
export const ATTEMPTS_COLLECTION = 'attempts';

/**
 * One provider attempt as the history shows it (docs/rules.md rule 07): the AttemptRecord, field for
 * field.
 */
export type AttemptRow = AttemptRecord;

/** The attempt history of one invocation (docs/http.md, `GET …/attempts`). */
export interface AttemptHistoryView {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly operationId: string;
  /** In the order they were made; at most MAX_RETAINED_ATTEMPTS (the log never records more). */
  readonly attempts: readonly AttemptRow[];
  /** Every attempt made: exact from the conversation's final figures once known, else the rows so far. */
  readonly attemptCount: number;
  /** True when attemptCount exceeds the retained rows, so some attempts have no row. */
  readonly attemptsTruncated: boolean;
  /**
   * Token totals over every attempt (exact once the conversation finished, even when truncated).
   * While it runs, the rows' sum, each kind at most Number.MAX_SAFE_INTEGER, so an absurd count in the
   * log never stops the read model; each row keeps its own usage exactly.
   */
  readonly usageTotals: Usage;
  /** Integer credits over every attempt: the conversation's spend. */
  readonly priceTotalCredits: number;
}

type InvocationRecordedEvent = RecordedEvent<InvocationEvent['type']> & InvocationEvent;

/**
 * Attempt history per invocation. Rows come from AttemptRecorded; counts and totals are replaced by
 * the conversation's own figures (InvocationCompleted / InvocationFailed), which stay exact when the
 * attempts beyond MAX_RETAINED_ATTEMPTS have no record.
 */
export const attemptsProjection: Projection<InvocationRecordedEvent> = {
  name: ATTEMPTS_PROJECTION,
  // 2: usage shows 1-hour cache writes and web searches (docs/rules.md rule 07).
  version: 2,
  handles: ['InvocationEstimated', 'AttemptRecorded', 'InvocationCompleted', 'InvocationFailed'],
  apply(recorded, tx) {
    const event = currentLedgerEvent(recorded);
    const invocationId = streamId(event.streamName, 'invocation');
    if (invocationId === undefined) return;
    const before = tx.get<AttemptHistoryView>(ATTEMPTS_COLLECTION, invocationId);
    const after = applyAttemptEvent(before, invocationId, event);
    if (after === undefined || after === before) return;
    tx.put(ATTEMPTS_COLLECTION, invocationId, after, { indexKey: after.organizationId });
  },
};

function applyAttemptEvent(
  view: AttemptHistoryView | undefined,
  invocationId: string,
  event: InvocationRecordedEvent,
): AttemptHistoryView | undefined {
  if (event.type === 'InvocationEstimated') {
    return {
      invocationId,
      organizationId: event.data.organizationId,
      operationId: event.data.operationId,
      attempts: [],
      attemptCount: 0,
      attemptsTruncated: false,
      usageTotals: NO_USAGE,
      priceTotalCredits: 0,
    };
  }
  // Every stream starts with InvocationEstimated; anything else before it is not an invocation's.
  if (view === undefined) return undefined;
  switch (event.type) {
    case 'AttemptRecorded': {
      const row = attemptRow(event.data);
      // The decider records at most MAX_RETAINED_ATTEMPTS; the guard keeps the document bounded anyway.
      const retained = view.attempts.length < MAX_RETAINED_ATTEMPTS;
      return {
        ...view,
        attempts: retained ? [...view.attempts, row] : view.attempts,
        attemptCount: view.attemptCount + 1,
        attemptsTruncated: view.attemptsTruncated || !retained,
        usageTotals: row.usage === undefined ? view.usageTotals : addUsageSaturating(view.usageTotals, row.usage).usage,
        priceTotalCredits: view.priceTotalCredits + row.priceCredits,
      };
    }
    case 'InvocationCompleted':
    case 'InvocationFailed': {
      const { attemptCount, attemptsTruncated, usageTotals, spentCredits } = event.data;
      return { ...view, attemptCount, attemptsTruncated, usageTotals: { ...usageTotals }, priceTotalCredits: spentCredits };
    }
    default:
      return view;
  }
}

/** A copy of the record with only the fields of docs/rules.md rule 07, optional ones left out when absent. */
function attemptRow(record: AttemptRecord): AttemptRow {
  return {
    turn: record.turn,
    retry: record.retry,
    startedAtMs: record.startedAtMs,
    durationMs: record.durationMs,
    waitBeforeMs: record.waitBeforeMs,
    classification: record.classification,
    timedOut: record.timedOut,
    ...(record.httpStatus === undefined ? {} : { httpStatus: record.httpStatus }),
    ...(record.providerRequestId === undefined ? {} : { providerRequestId: record.providerRequestId }),
    model: record.model,
    ...(record.usage === undefined ? {} : { usage: { ...record.usage } }),
    ...(record.malformedUsage === undefined ? {} : { malformedUsage: record.malformedUsage }),
    priceCredits: record.priceCredits,
  };
}
