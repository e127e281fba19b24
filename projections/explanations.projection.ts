import type { HoldSettled } from '../src/accounts/account.events';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import { INVOCATION_EVENT_TYPES, type InvocationEvent } from '../src/invocations/invocation.events';
import type { Projection, ReadModelTx } from '../src/projection-runner';
import type { AttemptRecord, EndingLimit, Outcome } from '../src/runtime';
import { LIMIT_OF_OUTCOME } from '../src/runtime/conversation.types';
import { addUsage, NO_USAGE } from '../src/runtime/usage';
import { explanationSentence } from './explanation-sentence';
import type { ExplanationEndingLimit, ExplanationFigures, ExplanationGateway, ExplanationRefusal, ExplanationView } from './explanation.view';
import { gatewaySentence } from './gateway-explanation-sentence';
import { streamId } from './stream-names';

export const EXPLANATIONS_PROJECTION = 'explanations';
/**
 * One document per invocation (docs/http.md `GET /v1/invocations/:id/explanation`), indexed by
 * organization.
 */
export const EXPLANATION_COLLECTION = 'explanation';
/**
 * Internal to this projection: the one published figure an explanation needs that its view does not
 * show (`totalTimeMs`), kept only while the invocation is open and deleted once it is final.
 */
export const EXPLANATION_BASIS_COLLECTION = 'basis';

/** What the basis document holds. */
interface ExplanationBasis {
  readonly totalTimeMs: number;
}

type InvocationRecordedEvent = RecordedEvent<InvocationEvent['type']> & InvocationEvent;
type HoldSettledRecordedEvent = RecordedEvent<'HoldSettled'> & HoldSettled;

/**
 * Explanations per invocation, folded from the invocation streams, and from the account's
 * HoldSettled only where the sweep or recovery released a hold its invocation's run did not.
 */
export const explanationsProjection: Projection<InvocationRecordedEvent | HoldSettledRecordedEvent> = {
  name: EXPLANATIONS_PROJECTION,
  // 2: gateway calls explained as such (their documents alone changed).
  // 3: gateway calls' overruns, malformed usage, recovery's reason and the time-bound sentence
  //    (issue 31): rebuilt on start so old documents read as a replay would write them.
  version: 3,
  handles: [...INVOCATION_EVENT_TYPES, 'HoldSettled'],
  apply(event, tx) {
    if (event.type === 'HoldSettled') return applyHoldRelease(event, tx);
    const invocationId = streamId(event.streamName, 'invocation');
    if (invocationId === undefined) return;
    const before = tx.get<ExplanationView>(EXPLANATION_COLLECTION, invocationId);
    const figures = applyExplanationEvent(before, invocationId, event, tx);
    if (figures === undefined) return;
    const view: ExplanationView = { ...figures, sentence: sentenceOf(figures) };
    tx.put(EXPLANATION_COLLECTION, invocationId, view, { indexKey: view.organizationId });
    if (view.state === 'refused' || view.state === 'settled') tx.delete(EXPLANATION_BASIS_COLLECTION, invocationId);
  },
};

/**
 * A hold the sweep or recovery released for an invocation its own run had settled (events written
 * before `settledBy` existed, and the run's own releases, carry none and change nothing).
 */
function applyHoldRelease(event: HoldSettledRecordedEvent, tx: ReadModelTx): void {
  const { invocationId, settledBy, heldCredits } = event.data;
  if (settledBy === undefined) return;
  const view = tx.get<ExplanationView>(EXPLANATION_COLLECTION, invocationId);
  // Settled by the same closer in the same pass: its settlement already says who.
  if (view === undefined || view.settlement === undefined || view.settlement.by === settledBy) return;
  const { sentence: _sentence, ...figures } = view;
  const released: ExplanationFigures = { ...figures, holdRelease: { by: settledBy, heldCredits } };
  tx.put(EXPLANATION_COLLECTION, invocationId, { ...released, sentence: sentenceOf(released) }, { indexKey: view.organizationId });
}

/** A gateway call's sentence, or an invocation's. */
function sentenceOf(figures: ExplanationFigures): string {
  return figures.gateway === undefined ? explanationSentence(figures) : gatewaySentence(figures, figures.gateway);
}

function applyExplanationEvent(
  view: ExplanationView | undefined,
  invocationId: string,
  event: InvocationRecordedEvent,
  tx: ReadModelTx,
): ExplanationFigures | undefined {
  if (event.type === 'InvocationEstimated') return estimatedFigures(invocationId, event.data, tx);
  // Every stream starts with InvocationEstimated; anything else before it is not an invocation's.
  if (view === undefined) return undefined;
  const { sentence: _sentence, ...figures } = view;
  switch (event.type) {
    case 'InvocationRefused': {
      const { refusedAt: _refusedAt, ...refusal } = event.data;
      return { ...figures, state: 'refused', refusal: refusal as ExplanationRefusal };
    }
    case 'InvocationReserved':
      return { ...figures, state: 'reserved' };
    case 'InvocationDispatched':
      return { ...figures, state: 'dispatched' };
    case 'AttemptRecorded': {
      const attempt = event.data;
      return {
        ...figures,
        ...(figures.gateway === undefined ? {} : { gateway: withAttempt(figures.gateway, attempt) }),
        turns: { ...figures.turns, used: Math.max(figures.turns.used, attempt.turn) },
        credits: { ...figures.credits, spent: figures.credits.spent + attempt.priceCredits },
        retries: figures.retries + (attempt.retry > 0 ? 1 : 0),
      };
    }
    case 'InvocationCompleted':
    case 'InvocationFailed':
      return endedFigures(figures, event, tx);
    case 'InvocationPending':
      return { ...figures, state: 'pending' };
    case 'InvocationSettled': {
      const { transition, settledBy, chargeCredits, overrunCredits, recovery } = event.data;
      const overrun = overrunCredits === undefined ? {} : { overrunCredits };
      return {
        ...figures,
        state: 'settled',
        credits: { ...figures.credits, charge: chargeCredits, ...(overrunCredits === undefined ? {} : { overrun: overrunCredits }) },
        settlement: { transition, by: settledBy, chargeCredits, ...overrun, ...(recovery === undefined ? {} : { recovery }) },
      };
    }
    case 'InvocationCancellationRequested':
      // The first request stands (the decider records no second one).
      return figures.cancellation === undefined ? { ...figures, cancellation: { ...event.data } } : figures;
  }
}

/** The figures an invocation starts with, and the basis its time budget is valued from later. */
function estimatedFigures(
  invocationId: string,
  { organizationId, operationId, publication, gateway }: Extract<InvocationRecordedEvent, { type: 'InvocationEstimated' }>['data'],
  tx: ReadModelTx,
): ExplanationFigures {
  if (publication !== null) {
    const basis: ExplanationBasis = { totalTimeMs: publication.limits.totalTimeMs };
    tx.put(EXPLANATION_BASIS_COLLECTION, invocationId, basis);
  }
  return {
    invocationId,
    organizationId,
    operationId,
    ...(publication === null ? {} : { publicationVersion: publication.version }),
    ...(gateway === undefined ? {} : { gateway: { ...gateway } }),
    state: 'estimated',
    turns: withLimit(0, publication?.limits.maxTurns),
    toolCalls: withLimit(0, publication?.limits.maxToolCalls),
    credits: { spent: 0, hold: publication?.creditHold ?? 0 },
    retries: 0,
  };
}

/** The figures once the conversation ended: its outcome, what it used, and the limit that ended it. */
function endedFigures(
  figures: ExplanationFigures,
  event: Extract<InvocationRecordedEvent, { type: 'InvocationCompleted' | 'InvocationFailed' }>,
  tx: ReadModelTx,
): ExplanationFigures {
  const { turnsUsed, toolCallsUsed, spentCredits } = event.data;
  const outcome: Outcome = event.type === 'InvocationCompleted' ? event.data.outcome : 'failed';
  const ended: ExplanationFigures = {
    ...figures,
    state: event.type === 'InvocationCompleted' ? 'completed' : 'failed',
    outcome,
    turns: { ...figures.turns, used: turnsUsed },
    toolCalls: { ...figures.toolCalls, used: toolCallsUsed },
    credits: { ...figures.credits, spent: spentCredits },
    ...(event.type === 'InvocationFailed' ? { fault: event.data.fault } : {}),
  };
  const endingLimit = endingLimitOf(ended, event.type === 'InvocationCompleted' ? event.data.endingLimit : undefined, tx);
  return endingLimit === undefined ? ended : { ...ended, endingLimit };
}

/**
 * The limit that ended the conversation, valued from the publication the invocation was admitted
 * under: turns, tool calls and the hold are already in the view (copied from InvocationEstimated),
 * and the time budget from the basis document written then.
 */
function endingLimitOf(
  figures: ExplanationFigures,
  recorded: EndingLimit | undefined,
  tx: ReadModelTx,
): ExplanationEndingLimit | undefined {
  const name = recorded ?? (figures.outcome === undefined ? undefined : LIMIT_OF_OUTCOME[figures.outcome]);
  if (name === undefined || figures.publicationVersion === undefined) return undefined;
  const value = limitValue(name, figures, tx);
  if (value === undefined) return undefined;
  return { name, value, operationId: figures.operationId, publicationVersion: figures.publicationVersion };
}

function limitValue(name: EndingLimit, figures: ExplanationFigures, tx: ReadModelTx): number | undefined {
  switch (name) {
    case 'maxTurns':
      return figures.turns.limit;
    case 'maxToolCalls':
      return figures.toolCalls.limit;
    case 'creditHold':
      return figures.credits.hold;
    case 'totalTimeMs':
      return tx.get<ExplanationBasis>(EXPLANATION_BASIS_COLLECTION, figures.invocationId)?.totalTimeMs;
  }
}

/** The gateway call's facts with its one attempt's: how it ended and the counts Anthropic reported. */
function withAttempt(gateway: ExplanationGateway, attempt: AttemptRecord): ExplanationGateway {
  return {
    ...gateway,
    classification: attempt.classification,
    ...(attempt.httpStatus === undefined ? {} : { httpStatus: attempt.httpStatus }),
    timedOut: attempt.timedOut,
    ...(attempt.usage === undefined ? {} : { usage: addUsage(NO_USAGE, attempt.usage) }),
    ...(attempt.malformedUsage === undefined ? {} : { malformedUsage: attempt.malformedUsage }),
  };
}

function withLimit(used: number, limit: number | undefined): { used: number; limit?: number } {
  return limit === undefined ? { used } : { used, limit };
}
