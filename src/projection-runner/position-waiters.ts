/** Most callers waiting for a position at once; a bound on memory, not a rate limit. */
export const MAX_PENDING_WAITS = 10_000;

interface Waiter<Target> {
  readonly position: bigint;
  readonly target: Target;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  readonly detach: () => void;
}

/**
 * Callers waiting for read models to reach a log position (read-your-writes), each with what it waits
 * on (`Target`: the projections it reads). The owner calls `settle` after each commit and `rejectAll`
 * when it stops; an aborted signal ends its own wait with the signal's reason.
 */
export class PositionWaiters<Target> {
  private readonly waiters = new Set<Waiter<Target>>();

  get size(): number {
    return this.waiters.size;
  }

  /** A promise that settles when `settle` finds `position` reached for `target`. */
  add(position: bigint, target: Target, signal?: AbortSignal): Promise<void> {
    if (this.waiters.size >= MAX_PENDING_WAITS) {
      return Promise.reject(new Error(`More than MAX_PENDING_WAITS (${MAX_PENDING_WAITS}) pending waits`));
    }
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters.delete(waiter);
        reject(signal?.reason);
      };
      const waiter: Waiter<Target> = { position, target, resolve, reject, detach: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /**
   * Resolves every wait `reached` says is done; a wait for which `reached` throws (its projection is
   * faulted and never will) is rejected with that error.
   */
  settle(reached: (position: bigint, target: Target) => boolean): void {
    for (const waiter of this.waiters) {
      try {
        if (!reached(waiter.position, waiter.target)) continue;
        waiter.resolve();
      } catch (error) {
        waiter.reject(error);
      }
      waiter.detach();
      this.waiters.delete(waiter);
    }
  }

  rejectAll(error: Error): void {
    for (const waiter of this.waiters) {
      waiter.detach();
      waiter.reject(error);
    }
    this.waiters.clear();
  }
}
