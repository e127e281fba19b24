import { Injectable } from '@nestjs/common';

/**
 * Longest a keyed repeat waits for the key's first request to settle when that request runs in
 * another process on the same store, in ms. Past it the repeat is told the first still runs (409),
 * and a later repeat answers with the first's result; the client is never kept past a load
 * balancer's usual idle timeout, and a first whose process died is left to the sweep.
 */
export const MAX_KEYED_REPEAT_WAIT_MS = 60_000;

/** The events after which an invocation has its result: nothing more happens to it. */
export const FINAL_INVOCATION_EVENT_TYPES: ReadonlySet<string> = new Set(['InvocationSettled', 'InvocationRefused']);

/** A wait for one invocation's end; `stop` removes it whether or not it ended. */
export interface EndingWatch {
  readonly ended: Promise<void>;
  stop(): void;
}

/**
 * Waiters for invocations to end, told by the watcher that follows the log (CancellationWatcher) when
 * an invocation's final event commits, whichever process wrote it. A waiter registers before it reads
 * the stream once more, so an ending committed in between is seen by that read, and any later one
 * reaches the waiter.
 */
@Injectable()
export class InvocationEndings {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Waits for the invocation's final event, from now on. */
  watch(invocationId: string): EndingWatch {
    let resolve!: () => void;
    const ended = new Promise<void>((done) => (resolve = done));
    const waiters = this.waiters.get(invocationId) ?? new Set<() => void>();
    this.waiters.set(invocationId, waiters.add(resolve));
    return {
      ended,
      stop: () => {
        waiters.delete(resolve);
        if (waiters.size === 0 && this.waiters.get(invocationId) === waiters) this.waiters.delete(invocationId);
      },
    };
  }

  /** Invocations someone waits for (for tests and metrics). */
  get waiting(): number {
    return this.waiters.size;
  }

  /** An event of an invocation's stream committed: wakes the invocation's waiters if it is final. */
  observe(invocationId: string, eventType: string): void {
    if (!FINAL_INVOCATION_EVENT_TYPES.has(eventType)) return;
    const waiters = this.waiters.get(invocationId);
    if (waiters === undefined) return;
    this.waiters.delete(invocationId);
    for (const wake of waiters) wake();
  }
}
