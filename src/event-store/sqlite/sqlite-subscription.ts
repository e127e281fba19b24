import type { RecordedEvent, Subscription, SubscriptionHandler } from '../event-store.port';

/** Events read per catch-up page, so a long backlog never sits in memory at once. */
export const SUBSCRIPTION_PAGE_EVENTS = 256;
/**
 * How often an idle subscription looks for events committed by another process, in milliseconds.
 * Appends made through the same store wake it at once; this poll only covers other writers.
 */
export const SUBSCRIPTION_POLL_INTERVAL_MS = 500;

/** What a subscription needs from the store: a page of the log, and a signal after each commit. */
export interface SubscriptionSource {
  readPage(after: bigint | undefined, maxCount: number): RecordedEvent[];
  /** Registers a listener called after each commit of this store; returns the unregister function. */
  onCommit(listener: () => void): () => void;
}

/**
 * Catches up by paging the log after a position, then follows it live. Each event is handed over
 * once, in position order, and the next one only after the handler's promise settled; because
 * positions grow in commit order, `position > last delivered` never skips nor repeats an event.
 *
 * A handler that throws halts the subscription at that event (it is not skipped and not retried);
 * `stop()` then rejects with that error, and `lastPosition` is the checkpoint to resume from.
 * Do not await `stop()` from inside the handler: stop waits for the handler to finish.
 */
export class SqliteSubscription implements Subscription {
  private stopped = false;
  /** Set by a commit that happened while this subscription was not waiting, so no wake-up is lost. */
  private commitSeen = false;
  private wake: (() => void) | undefined;
  private failure: { error: unknown } | undefined;
  private readonly done: Promise<void>;
  private position: bigint | undefined;
  private delivered = false;

  constructor(
    private readonly source: SubscriptionSource,
    private readonly handler: SubscriptionHandler,
    after: bigint | undefined,
    private readonly onFinished: (subscription: SqliteSubscription) => void,
  ) {
    this.position = after;
    this.done = this.run().then(
      () => this.onFinished(this),
      (error: unknown) => {
        this.failure = { error };
        this.onFinished(this);
      },
    );
  }

  /** Position of the last event handled; `undefined` until one is. */
  get lastPosition(): bigint | undefined {
    return this.delivered ? this.position : undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.done;
    if (this.failure) throw this.failure.error;
  }

  private async run(): Promise<void> {
    const unregister = this.source.onCommit(() => {
      this.commitSeen = true;
      this.wake?.();
    });
    try {
      // Start on a later turn, so the handler never runs before subscribeToAll has returned.
      await Promise.resolve();
      while (!this.stopped) {
        this.commitSeen = false;
        const page = this.source.readPage(this.position, SUBSCRIPTION_PAGE_EVENTS);
        for (const event of page) {
          if (this.stopped) return;
          await this.handler(event);
          this.position = event.position;
          this.delivered = true;
        }
        if (page.length < SUBSCRIPTION_PAGE_EVENTS && !this.commitSeen && !this.stopped) {
          await this.waitForCommitOrPoll();
        }
      }
    } finally {
      unregister();
    }
  }

  private waitForCommitOrPoll(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake?.(), SUBSCRIPTION_POLL_INTERVAL_MS);
      // An idle subscription alone must not keep the process alive.
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }
}
