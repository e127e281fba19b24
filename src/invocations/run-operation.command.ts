import { Command } from '@nestjs/cqrs';
import type { InvocationSummary } from './invocation.state';

export interface RunOperationRequest {
  /** The published operation to run, e.g. `demo.arithmetic`. */
  readonly operationId: string;
  /** The organization whose credits pay for it. */
  readonly organizationId: string;
  /** The feature's input; validated by the feature, never stored. */
  readonly input: unknown;
  /** Repeating a key returns the first request's result and writes nothing new. */
  readonly idempotencyKey?: string;
  /** Cancels the conversation at its next boundary (outcome `cancelled`). */
  readonly signal?: AbortSignal;
}

/**
 * Runs a published operation for an organization and resolves once the invocation is settled or
 * refused (SPEC §4): estimate → admission → reserve → dispatch → the bounded conversation → completed or
 * failed (→ pending) → settled, hold and slot released.
 */
export class RunOperationCommand extends Command<InvocationSummary> {
  constructor(readonly request: RunOperationRequest) {
    super();
  }
}
