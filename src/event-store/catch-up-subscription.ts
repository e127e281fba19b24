import type { RecordedEvent, Subscription, SubscriptionHandler } from './event-store.port';

/**
 * A wait that a wake-up or a timer ends. A wake-up while nobody waits is kept (`pending`), so the
 * next wait returns at once: a commit seen while a page was being handed over is not lost.
 */
export class Wakeable {
  private woken = false;
  private resolveWait: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerMs: number | undefined;

  /** Whether a wake-up came since the last wait (or `clear`). */
  get pending(): boolean {
    return this.woken;
  }

  wake(): void {
    this.woken = true;
    this.resolveWait?.();
  }

  /** Ends any wait now, and drops the timer (on stop). */
  close(): void {
    this.wake();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Forgets a wake-up already accounted for (the read about to start covers it). */
  clear(): void {
    this.woken = false;
  }

  /** Resolves at the next wake-up (or at once if one is pending), or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.armTimer(ms);
      this.resolveWait = () => {
        this.resolveWait = undefined;
        this.woken = false;
        resolve();
      };
    });
  }

  /**
   * One timer for every wait, set again for each (a subscription waits after nearly every commit it
   * follows: a new timer each time cost a timer, a closure and a clearTimeout per commit). It is
   * unreferenced, so a waiting subscription alone never keeps the process alive; a timer that fires
   * after its wait ended finds nobody waiting.
   */
  private armTimer(ms: number): void {
    if (this.timer === undefined || this.timerMs !== ms) {
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timerMs = ms;
      this.timer = setTimeout(() => this.resolveWait?.(), ms);
    } else {
      this.timer.refresh();
    }
    this.timer.unref();
  }
}

/**
 * What the three stores' subscriptions share (catch up from a position, then follow): each event
 * handed over once, in position order, the next only after the handler returned (and its promise, if
 * it returned one, settled); the last handled position kept as the checkpoint to resume from; a
 * handler that throws, or a read error the store does not retry, ends the subscription and `stop()`
 * rejects with it. A store's subclass says how it reads (`follow`) and what `stop` must also
 * interrupt (`interrupt`).
 *
 * `follow` starts on a later turn than the constructor, so the handler never runs before
 * `subscribeToAll` has returned, and the subclass's own fields are set by then.
 */
export abstract class CatchUpSubscription implements Subscription {
  protected stopped = false;
  protected position: bigint | undefined;
  private delivered = false;
  private failure: { error: unknown } | undefined;
  private readonly done: Promise<void>;
  /** Ends a wait of `follow` (for a commit, a poll or a retry) when the store has news or on stop. */
  readonly wakeable = new Wakeable();

  constructor(
    private readonly handler: SubscriptionHandler,
    after: bigint | undefined,
    onFinished: (subscription: CatchUpSubscription) => void,
  ) {
    this.position = after;
    this.done = Promise.resolve()
      .then(() => this.follow())
      .then(
        () => onFinished(this),
        (error: unknown) => {
          this.failure = { error };
          onFinished(this);
        },
      );
  }

  /** Position of the last event handled; `undefined` until one is. */
  get lastPosition(): bigint | undefined {
    return this.delivered ? this.position : undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeable.close();
    await this.interrupt();
    await this.done;
    if (this.failure) throw this.failure.error;
  }

  /** Reads and hands over events until stopped; resolves on stop, rejects to end the subscription. */
  protected abstract follow(): Promise<void>;

  /** What `stop` must cut besides a wait (a server-side subscription); nothing by default. */
  protected async interrupt(): Promise<void> {}

  /** Hands one event to the handler, then records it as the last delivered. */
  protected async deliver(event: RecordedEvent): Promise<void> {
    await this.handler(event);
    this.handled(event);
  }

  /**
   * Hands over a page in order; stops early when stopped. A handler that returns no promise is done
   * with its event when it returns, and the next one follows at once: a page whose handlers all
   * return none is handed over without a promise (undefined is returned), as most pages are (the
   * service's handlers are mostly synchronous, and each follows every event of the log).
   */
  protected deliverAll(page: readonly RecordedEvent[], from = 0): Promise<void> | undefined {
    for (let index = from; index < page.length; index++) {
      if (this.stopped) return undefined;
      const event = page[index]!;
      // Typed to return a promise or nothing, a handler may still return anything (an arrow that pushes).
      const handled: unknown = this.handler(event);
      if (isThenable(handled)) {
        return Promise.resolve(handled).then(() => {
          this.handled(event);
          return this.deliverAll(page, index + 1);
        });
      }
      this.handled(event);
    }
    return undefined;
  }

  private handled(event: RecordedEvent): void {
    this.position = event.position;
    this.delivered = true;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}

/** A wait that doubles after each transient failure, from `initialMs` up to `maxMs`, and starts over after a success. */
export class RetryDelay {
  private currentMs: number;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
  ) {
    this.currentMs = initialMs;
  }

  /** The wait before the next attempt; the one after it is twice as long, up to the maximum. */
  next(): number {
    const delayMs = this.currentMs;
    this.currentMs = Math.min(this.currentMs * 2, this.maxMs);
    return delayMs;
  }

  reset(): void {
    this.currentMs = this.initialMs;
  }
}
