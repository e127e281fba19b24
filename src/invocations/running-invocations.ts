import { Injectable } from '@nestjs/common';

/** What cancelled a run: the request recorded in its stream. */
export interface CancellationReason {
  readonly requestedBy: string;
  readonly requestedAt: string;
}

/**
 * The invocations whose conversations run in this process, each with the controller that cancels
 * it. RunOperation registers a run before its first append and removes it when the run is over; a
 * cancellation recorded in the log (by this process or another one on the same store) aborts it.
 */
@Injectable()
export class RunningInvocations {
  private readonly running = new Map<string, AbortController>();

  /** Registers a run; its signal fires when a cancellation of the invocation is observed. */
  register(invocationId: string): { readonly signal: AbortSignal; readonly done: () => void } {
    const controller = new AbortController();
    this.running.set(invocationId, controller);
    return {
      signal: controller.signal,
      done: () => {
        if (this.running.get(invocationId) === controller) this.running.delete(invocationId);
      },
    };
  }

  /** Aborts the run of `invocationId` if it runs here; false when it does not (another process runs it, or nobody). */
  cancel(invocationId: string, reason: CancellationReason): boolean {
    const controller = this.running.get(invocationId);
    if (controller === undefined) return false;
    controller.abort(reason);
    return true;
  }
}
