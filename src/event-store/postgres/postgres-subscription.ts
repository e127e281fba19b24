import { Client } from 'pg';
import { CatchUpSubscription, RetryDelay, Wakeable } from '../catch-up-subscription';
import type { RecordedEvent, SubscribeOptions, SubscriptionHandler } from '../event-store.port';
import { isTransientPostgresError } from './postgres-errors';

/** Events read per catch-up page, so a long backlog never sits in memory at once. */
export const POSTGRES_SUBSCRIPTION_PAGE_EVENTS = 500;
/**
 * How often an idle subscription reads the log with no notification, in milliseconds: the bound on
 * its delay when a notification is lost (a writer killed before it could notify, a listener
 * reconnecting). Normally each commit is announced on POSTGRES_NOTIFY_CHANNEL and read at once.
 */
export const POSTGRES_SUBSCRIPTION_POLL_INTERVAL_MS = 1_000;
/** First wait before reading again (or reconnecting the listener) after the server went away, in ms. */
export const POSTGRES_RETRY_INITIAL_DELAY_MS = 100;
/** Longest wait between those attempts, in milliseconds (the wait doubles up to it). */
export const POSTGRES_RETRY_MAX_DELAY_MS = 5_000;
/** The channel every append is announced on once its transaction ended (postgres-event-store.ts). */
export const POSTGRES_NOTIFY_CHANNEL = 'ledger_events';

/** What a subscription reads: a page of `$all` below the read bound, after a position. */
export interface PostgresSubscriptionSource {
  readPage(after: bigint | undefined, maxCount: number): Promise<RecordedEvent[]>;
}

/**
 * Catches up by paging `$all` after a position, then follows it: woken by its store's own appends
 * and by the notifications of other instances' (PostgresChangeListener), and reading at least every
 * POSTGRES_SUBSCRIPTION_POLL_INTERVAL_MS. Each event is handed over once, in position order, the
 * next only after the handler's promise settled; reads stop below the oldest transaction still
 * running, so a lower position that commits later is never skipped.
 *
 * When the server goes away (restart, lost connection) the subscription tells `onError` (willRetry
 * true) and reads again from the last handled event after a wait doubling from
 * POSTGRES_RETRY_INITIAL_DELAY_MS to POSTGRES_RETRY_MAX_DELAY_MS: nothing skipped, nothing twice. Any
 * other read error ends it (reported as permanent); so does a handler that throws, at that event.
 * `stop()` then rejects with the error.
 */
export class PostgresSubscription extends CatchUpSubscription {
  constructor(
    private readonly source: PostgresSubscriptionSource,
    handler: SubscriptionHandler,
    after: bigint | undefined,
    private readonly onError: SubscribeOptions['onError'],
    onFinished: (subscription: PostgresSubscription) => void,
  ) {
    super(handler, after, onFinished as (subscription: CatchUpSubscription) => void);
  }

  protected async follow(): Promise<void> {
    const retry = new RetryDelay(POSTGRES_RETRY_INITIAL_DELAY_MS, POSTGRES_RETRY_MAX_DELAY_MS);
    while (!this.stopped) {
      let page: RecordedEvent[];
      try {
        page = await this.source.readPage(this.position, POSTGRES_SUBSCRIPTION_PAGE_EVENTS);
      } catch (error) {
        if (this.stopped) return;
        const failure = error instanceof Error ? error : new Error(String(error));
        if (!isTransientPostgresError(error) && !isTransientPostgresError((error as { cause?: unknown }).cause)) {
          this.onError?.(failure, false);
          throw failure;
        }
        this.onError?.(failure, true);
        await this.wakeable.wait(retry.next());
        continue;
      }
      retry.reset();
      await this.deliverAll(page);
      if (page.length < POSTGRES_SUBSCRIPTION_PAGE_EVENTS && !this.stopped) {
        await this.wakeable.wait(POSTGRES_SUBSCRIPTION_POLL_INTERVAL_MS);
      }
    }
  }
}

/**
 * One connection that LISTENs on POSTGRES_NOTIFY_CHANNEL for a store's subscriptions and wakes them
 * on each notification. When the connection is lost it reconnects (waiting as the subscriptions do)
 * and wakes them once it listens again, since notifications sent meanwhile were lost.
 */
export class PostgresChangeListener {
  private client: Client | undefined;
  private closed = false;
  private readonly retry = new Wakeable();
  private readonly running: Promise<void>;

  constructor(
    private readonly connectionString: string,
    private readonly wakeAll: () => void,
  ) {
    this.running = this.run();
  }

  private async run(): Promise<void> {
    let delayMs = POSTGRES_RETRY_INITIAL_DELAY_MS;
    while (!this.closed) {
      const client = new Client({ connectionString: this.connectionString, application_name: 'llm-ledger listener' });
      const ended = new Promise<void>((resolve) => {
        client.on('error', () => resolve());
        client.on('end', () => resolve());
      });
      client.on('notification', () => this.wakeAll());
      this.client = client;
      try {
        await client.connect();
        await client.query(`LISTEN ${POSTGRES_NOTIFY_CHANNEL}`);
        delayMs = POSTGRES_RETRY_INITIAL_DELAY_MS;
        this.wakeAll();
        await ended;
      } catch {
        // Not reachable now: try again after the wait.
      }
      this.client = undefined;
      await client.end().catch(() => undefined);
      if (this.closed) return;
      await this.retry.wait(delayMs);
      delayMs = Math.min(delayMs * 2, POSTGRES_RETRY_MAX_DELAY_MS);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.retry.wake();
    await this.client?.end().catch(() => undefined);
    await this.running;
  }
}
