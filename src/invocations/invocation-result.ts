import type { InvocationSummary } from './invocation.state';

/**
 * Why a completed invocation's result carries no answer: its feature keeps no answers
 * (`not_retained`), or the period it keeps them for has passed (`expired`). Only a keyed repeat
 * after settlement can meet either; the run itself and a repeat that joins it always get the answer.
 */
export type AnswerUnavailableReason = 'not_retained' | 'expired';

/**
 * What RunOperationCommand resolves to: the invocation's summary and, for a `completed` outcome, the
 * accepted answer (the answer tool's input, or the accepted final text). The answer is handed to the
 * caller only; it is never written to the log.
 */
export interface InvocationResult extends InvocationSummary {
  readonly answer?: unknown;
  /** Set instead of `answer` for a completed invocation whose answer can no longer be given. */
  readonly answerUnavailable?: AnswerUnavailableReason;
}
