import { CatchUpSubscription } from '../catch-up-subscription';
import type { RecordedEvent, SubscriptionHandler } from '../event-store.port';

/** Events read per catch-up page, so a long backlog never sits in memory at once. */
export const SUBSCRIPTION_PAGE_EVENTS = 256;
/**
 * How often an idle subscription looks for events committed by another process, in milliseconds.
 * Appends made through the same store wake it at once; this poll only covers other writers.
 */
export const SUBSCRIPTION_POLL_INTERVAL_MS = 500;

/**
 * Events most held for a subscription from its store's own commits, waiting to be handed over; past
 * it the subscription drops them and reads the log instead (a handler slower than the appends).
 */
export const MAX_FED_EVENTS = 10_000;

/** The events of one commit made through this store, in position order. */
export interface CommittedEvents {
  /** Position of the first and of the last event. */
  readonly first: bigint;
  readonly last: bigint;
  readonly count: number;
  /** The events, frozen; the same objects on each call (so the subscriptions of one store share them). */
  events(): readonly RecordedEvent[];
}

/** What a subscription needs from the store: a page of the log, and each commit made through it. */
export interface SubscriptionSource {
  readPage(after: bigint | undefined, maxCount: number): RecordedEvent[];
  /** Registers a listener called after each commit of this store; returns the unregister function. */
  onCommit(listener: (committed: CommittedEvents) => void): () => void;
}

/**
 * Catches up by paging the log after a position, then follows it live. Each event is handed over
 * once, in position order, and the next one only after the handler returned (and its promise, if
 * any, settled); because positions grow in commit order, `position > last delivered` never skips
 * nor repeats an event.
 *
 * Live, the events this store committed are handed over as the store holds them, without reading
 * them back: a commit is taken when its first position directly follows the last one delivered.
 * Anything else (a gap left by another process's commit, a backlog past MAX_FED_EVENTS, no position
 * yet) is read from the log, so what is delivered, and in what order, does not depend on the source.
 *
 * A handler that throws halts the subscription at that event (it is not skipped and not retried);
 * `stop()` then rejects with that error, and `lastPosition` is the checkpoint to resume from.
 * Do not await `stop()` from inside the handler: stop waits for the handler to finish.
 */
export class SqliteSubscription extends CatchUpSubscription {
  /** Commits of this store not yet handed over, oldest first. */
  private fed: CommittedEvents[] = [];
  private fedEvents = 0;
  private readonly unregister: () => void;

  constructor(
    private readonly source: SubscriptionSource,
    handler: SubscriptionHandler,
    after: bigint | undefined,
    onFinished: (subscription: SqliteSubscription) => void,
  ) {
    super(handler, after, onFinished as (subscription: CatchUpSubscription) => void);
    // Registered at once, so no commit made after subscribeToAll returned is missed.
    this.unregister = source.onCommit((committed) => {
      this.feed(committed);
      this.wakeable.wake();
    });
  }

  /** Reads the log now (another connection committed), instead of waiting for the next poll. */
  poll(): void {
    this.wakeable.wake();
  }

  protected async follow(): Promise<void> {
    try {
      while (!this.stopped) {
        this.wakeable.clear();
        const fed = this.takeFed();
        const page = fed ?? this.source.readPage(this.position, SUBSCRIPTION_PAGE_EVENTS);
        const delivering = this.deliverAll(page);
        if (delivering !== undefined) await delivering;
        if (this.stopped) return;
        // After a fed commit the log holds nothing newer from this store than what is still fed; other
        // writers are found by the poll, as after a short page.
        const drained = fed === undefined ? page.length < SUBSCRIPTION_PAGE_EVENTS : this.fed.length === 0;
        if (drained && !this.wakeable.pending) await this.wakeable.wait(SUBSCRIPTION_POLL_INTERVAL_MS);
      }
    } finally {
      this.unregister();
    }
  }

  private feed(committed: CommittedEvents): void {
    if (this.stopped) return;
    if (this.fedEvents + committed.count > MAX_FED_EVENTS) {
      // Too far behind to hold them all: read the log instead, from wherever delivery stands.
      this.fed = [];
      this.fedEvents = 0;
    }
    this.fed.push(committed);
    this.fedEvents += committed.count;
  }

  /** The next fed events after the last one delivered, or undefined when the log must be read. */
  private takeFed(): readonly RecordedEvent[] | undefined {
    const after = this.position;
    if (after === undefined) return undefined;
    while (this.fed.length > 0 && this.fed[0]!.last <= after) this.dropFed();
    const next = this.fed[0];
    if (next === undefined) return undefined;
    if (next.first > after + 1n) {
      // A gap: another process committed in between. The log has it all, in order.
      this.fed = [];
      this.fedEvents = 0;
      return undefined;
    }
    this.dropFed();
    const events = next.events();
    return next.first <= after ? events.filter((event) => event.position > after) : events;
  }

  private dropFed(): void {
    this.fedEvents -= this.fed.shift()!.count;
  }
}
