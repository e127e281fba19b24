/**
 * Where answers are kept for keyed repeats, outside the event log (docs/embedding.md "The answer"):
 * only for a feature that declared a retention period, each entry deleted once that period has passed.
 * The log never holds an answer, so deleting one loses nothing the ledger accounts for.
 */
export interface AnswerStore {
  /**
   * Keeps `answer` (JSON) for `retentionMs` from now; an entry kept before for the invocation is
   * replaced. It may be written later (by the end of the event-loop turn), but `find` sees it at once.
   */
  keep(invocationId: string, answer: unknown, retentionMs: number): void;
  /** The answer while it is kept; undefined once it expired (the entry is deleted then) or was never kept. */
  find(invocationId: string): { readonly answer: unknown } | undefined;
  close(): void;
}

export const ANSWER_STORE = Symbol('ANSWER_STORE');

/** The longest retention period a feature may declare for its answers, in ms (7 days). */
export const MAX_ANSWER_RETENTION_MS = 7 * 24 * 60 * 60 * 1_000;
