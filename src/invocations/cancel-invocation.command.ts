import { Command } from '@nestjs/cqrs';
import type { InvocationStatus } from './invocation.events';

/** What a cancellation request recorded. */
export interface CancellationRequested {
  readonly invocationId: string;
  /** The lifecycle state when the request was recorded (the conversation ends at its next boundary). */
  readonly state: InvocationStatus;
  /** Who asked: a role and organization over HTTP (never a token), or what the embedding code said. */
  readonly requestedBy: string;
  /** When the first request for this invocation was recorded (a repeat keeps the first). */
  readonly requestedAt: string;
}

/**
 * Asks a running invocation to stop (docs/http.md "Cancelling"): appends
 * InvocationCancellationRequested to its stream, so whichever instance runs its conversation, this
 * process or another one on the same store, ends it `cancelled` at its next boundary and settles it as
 * docs/lifecycle.md says. Refused with IllegalTransitionError (409 over HTTP) once the conversation has
 * ended; UnknownInvocationError when there is no such invocation, or (with `organizationId`) it is
 * another organization's.
 */
export class CancelInvocationCommand extends Command<CancellationRequested> {
  constructor(
    readonly invocationId: string,
    /** Recorded in the log and in the explanation; say who, never a secret. */
    readonly requestedBy: string,
    /** When given, an invocation of another organization reads as unknown. */
    readonly organizationId?: string,
  ) {
    super();
  }
}
