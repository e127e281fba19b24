import { Logger } from '@nestjs/common';
import type { EventBus } from '@nestjs/cqrs';
import type { EventStore, Subscription } from '../event-store/event-store.port';
import { LEDGER_EVENT_CLASSES } from './ledger-events';

/**
 * Publishes every ledger event on Nest's EventBus once it is in the log: it follows the log from its
 * head at start (events committed before start are not replayed), so a consuming module's
 * @EventsHandler or saga sees an event only after it committed, and sees those committed by other
 * processes on the same log too.
 */
export class CommittedEventsPublisher {
  private readonly logger = new Logger('LedgerEvents');
  private subscription: Subscription | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly eventBus: EventBus,
  ) {}

  async start(): Promise<void> {
    if (this.subscription !== undefined) return;
    const head = await this.store.headPosition();
    this.subscription = this.store.subscribeToAll(
      (event) => {
        const EventClass = LEDGER_EVENT_CLASSES.get(event.type);
        if (EventClass === undefined) return;
        try {
          this.eventBus.publish(new EventClass(event));
        } catch (error) {
          // A consumer's synchronous failure must not stop the publication of later events.
          this.logger.error({ message: 'an event handler failed', type: event.type, position: String(event.position), error: String(error) });
        }
      },
      {
        ...(head === undefined ? {} : { after: head }),
        // A permanent error ends the publication; handlers then see nothing more until a restart.
        onError: (error, willRetry) =>
          willRetry
            ? this.logger.warn({ message: 'the event subscription was interrupted; resubscribing', error: error.message })
            : this.logger.error({ message: 'the event subscription ended; no more events are published', error: error.message }),
      },
    );
  }

  async stop(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = undefined;
    await subscription?.stop().catch(() => undefined);
  }
}
