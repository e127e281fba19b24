import { Command } from '@nestjs/cqrs';
import type { InvocationResult } from './invocation-result';

export interface RunOperationRequest {
  /** The published operation to run, e.g. `demo.arithmetic`. */
  readonly operationId: string;
  /** The organization whose credits pay for it. */
  readonly organizationId: string;
  /** The feature's input; validated by the feature, never stored. */
  readonly input: unknown;
  /**
   * Repeating a key returns the first request's result and writes nothing new; its answer only while
   * the first still runs, or within the feature's `answerRetentionMs` after it settled.
   */
  readonly idempotencyKey?: string;
  /** Cancels the conversation at its next boundary (outcome `cancelled`). */
  readonly signal?: AbortSignal;
  /**
   * Called once the invocation's first event is written (its id is then known and readable), before
   * admission: lets a caller answer at once and follow the rest (`Prefer: respond-async`). Not called
   * for a keyed repeat, which resolves with the first request's result instead.
   */
  readonly onEstimated?: (invocationId: string) => void;
}

/**
 * Runs a published operation for an organization and resolves once the invocation is settled or
 * refused (docs/lifecycle.md): estimate → admission → reserve → dispatch → the bounded conversation →
 * completed or failed (→ pending) → settled, hold and slot released. The result carries the accepted
 * answer of a completed conversation (docs/embedding.md "The answer").
 */
export class RunOperationCommand extends Command<InvocationResult> {
  constructor(readonly request: RunOperationRequest) {
    super();
  }
}
