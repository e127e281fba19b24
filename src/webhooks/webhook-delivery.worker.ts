/**
 * Follows the log from its checkpoint and delivers the deliverable events (README.md "Webhooks") to the
 * webhooks of their organization: a signed POST per delivery, retried with doubling waits up to
 * MAX_DELIVERY_ATTEMPTS, then dead-lettered. Waits run on the injected clock.
 */
import { createHash } from 'node:crypto';
import type { EventStore, RecordedEvent, Subscription } from '../event-store/event-store.port';
import type { Clock } from '../runtime/clock';
import {
  DELIVERABLE_EVENT_TYPES,
  DELIVERY_ATTEMPT_TIMEOUT_MS,
  MAX_CONCURRENT_DELIVERIES,
  MAX_DELIVERY_ATTEMPTS,
  RESUBSCRIBE_WAIT_MS,
  retryWaitMs,
  type DeliverableEventType,
} from './webhook.bounds';
import { httpWebhookSender, type WebhookSender } from './webhook-sender';
import { DELIVERY_HEADER, SIGNATURE_HEADER, signatureHeader } from './webhook-signature';
import type { DueDelivery, NewDelivery, WebhookStore } from './webhook.store';

/** Events passed over without a delivery before the checkpoint is moved past them anyway. */
export const CHECKPOINT_EVERY_EVENTS = 1_000;

export interface WebhookWorkerLogger {
  warn(message: Record<string, unknown>): void;
  error(message: Record<string, unknown>): void;
}

export interface WebhookDeliveryWorkerOptions {
  readonly eventStore: EventStore;
  readonly webhooks: WebhookStore;
  readonly clock: Clock;
  readonly send?: WebhookSender;
  readonly logger?: WebhookWorkerLogger;
}

const DELIVERABLE: ReadonlySet<string> = new Set(DELIVERABLE_EVENT_TYPES);
/** Delivered for a settlement that records an overrun; not an event of the log. */
const OVERRUN_EVENT_TYPE: DeliverableEventType = 'InvocationOverrun';

/** The types a log event is delivered as: its own when deliverable, and InvocationOverrun for a settlement with an overrun. */
function deliveredTypesOf(event: RecordedEvent): string[] {
  const types = DELIVERABLE.has(event.type) ? [event.type] : [];
  if (event.type === 'InvocationSettled' && ((event.data as { overrunCredits?: number }).overrunCredits ?? 0) > 0) types.push(OVERRUN_EVENT_TYPE);
  return types;
}

/**
 * An overrun's delivery: the invocation, its key and model (`extra`), and its figures: the attempt's
 * price, the hold, the charge (the hold) and the overrun (price − hold).
 */
function overrunData(event: RecordedEvent, extra: Record<string, unknown>): Record<string, unknown> {
  const { chargeCredits, overrunCredits, heldCredits, settledAt } = event.data as { chargeCredits: number; overrunCredits: number; heldCredits: number; settledAt: string };
  return { ...extra, priceCredits: chargeCredits + overrunCredits, holdCredits: heldCredits, chargeCredits, overrunCredits, settledAt };
}

/** The same event to the same webhook always has the same delivery id, whoever creates it again. */
export function deliveryIdFor(webhookId: string, eventId: string): string {
  return `dlv_${createHash('sha256').update(`${webhookId}\n${eventId}`).digest('hex').slice(0, 32)}`;
}

/** When the event happened, by its own time field (the store's commit time otherwise). */
function occurredAtOf(event: RecordedEvent): string {
  const data = event.data as { crossedAt?: string; refusedAt?: string; settledAt?: string };
  return data.crossedAt ?? data.refusedAt ?? data.settledAt ?? event.recordedAt;
}

export class WebhookDeliveryWorker {
  private subscription: Subscription | undefined;
  private stopped = false;
  private readonly inFlight = new Map<string, Promise<void>>();
  private cancelTimer: (() => void) | undefined;
  private timerAtMs: number | undefined;
  private skipped = 0;
  private lastSeen: bigint | undefined;
  private resubscribing = false;
  private cancelResubscribe: (() => void) | undefined;
  private readonly send: WebhookSender;

  constructor(private readonly options: WebhookDeliveryWorkerOptions) {
    this.send = options.send ?? httpWebhookSender;
  }

  /** Resumes after the checkpoint (on the very first start: after the log's head as it is now). */
  async start(): Promise<void> {
    const { eventStore, webhooks } = this.options;
    let checkpoint = webhooks.checkpoint();
    if (checkpoint === undefined) {
      const head = await eventStore.headPosition();
      webhooks.setCheckpoint(head);
      checkpoint = { after: head };
    }
    this.stopped = false;
    this.follow(checkpoint.after);
    this.pump();
  }

  private follow(after: bigint | undefined): void {
    // The subscription halts at an event that fails (it is neither skipped nor lost): follow again later.
    const halt = (error: unknown): never => {
      this.failed(error);
      throw error;
    };
    this.subscription = this.options.eventStore.subscribeToAll(
      (event) => {
        try {
          return this.onEvent(event)?.catch(halt);
        } catch (error) {
          return halt(error);
        }
      },
      {
        ...(after === undefined ? {} : { after }),
        onError: (error, willRetry) => {
          if (!willRetry) this.failed(error);
        },
      },
    );
  }

  /** Logs why the worker stopped following the log, and follows it again from its checkpoint after a wait. */
  private failed(error: unknown): void {
    if (this.stopped || this.resubscribing) return;
    this.resubscribing = true;
    this.options.logger?.error({ message: 'webhook worker stopped following the log; resuming from its checkpoint', error: error instanceof Error ? error.message : String(error), retryInMs: RESUBSCRIBE_WAIT_MS });
    const failed = this.subscription;
    this.subscription = undefined;
    this.cancelResubscribe = this.options.clock.setTimer(RESUBSCRIBE_WAIT_MS, () => {
      this.cancelResubscribe = undefined;
      void (failed?.stop() ?? Promise.resolve())
        .catch(() => undefined)
        .then(() => {
          this.resubscribing = false;
          if (!this.stopped) this.follow(this.options.webhooks.checkpoint()?.after);
        });
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.cancelResubscribe?.();
    this.cancelResubscribe = undefined;
    await this.subscription?.stop().catch(() => undefined);
    this.subscription = undefined;
    await Promise.all(this.inFlight.values());
    if (this.skipped > 0 && this.lastSeen !== undefined) this.options.webhooks.enqueue([], this.lastSeen, this.options.clock.now());
  }

  /** Resolves once no delivery is being sent (tests, and a clean stop). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }

  /** Sends whatever is due now (also called when a webhook is registered or the clock moved). */
  pump(): void {
    if (this.stopped) return;
    const { webhooks, clock } = this.options;
    const free = MAX_CONCURRENT_DELIVERIES - this.inFlight.size;
    if (free > 0) {
      for (const delivery of webhooks.due(clock.now(), free, new Set(this.inFlight.keys()))) {
        const sending = this.attempt(delivery).finally(() => {
          this.inFlight.delete(delivery.deliveryId);
          this.pump();
        });
        this.inFlight.set(delivery.deliveryId, sending);
      }
    }
    this.scheduleNext();
  }

  private scheduleNext(): void {
    const { webhooks, clock } = this.options;
    const next = webhooks.nextDueAtMs();
    const now = clock.now();
    // Due now but all in flight: their completion pumps again.
    if (next === undefined || next <= now) return;
    if (this.timerAtMs !== undefined && this.timerAtMs <= next) return;
    this.cancelTimer?.();
    this.timerAtMs = next;
    this.cancelTimer = clock.setTimer(next - now, () => {
      this.timerAtMs = undefined;
      this.cancelTimer = undefined;
      this.pump();
    });
  }

  /** Queues the event's deliveries; at once (no promise) when no webhook is subscribed to it, as for most events. */
  private onEvent(event: RecordedEvent): Promise<void> | undefined {
    this.lastSeen = event.position;
    const { webhooks, clock } = this.options;
    const subscribed = webhooks.subscribedTypes();
    const types = deliveredTypesOf(event).filter((type) => subscribed.has(type));
    if (types.length === 0) {
      if (++this.skipped >= CHECKPOINT_EVERY_EVENTS) {
        this.skipped = 0;
        webhooks.enqueue([], event.position, clock.now());
      }
      return undefined;
    }
    return this.enqueueDeliveries(event, types);
  }

  private async enqueueDeliveries(event: RecordedEvent, types: readonly string[]): Promise<void> {
    const { webhooks, clock } = this.options;
    const origin = await this.originOf(event);
    const deliveries = origin === undefined ? [] : this.deliveriesOf(event, types, origin);
    this.skipped = 0;
    webhooks.enqueue(deliveries, event.position, clock.now());
    if (deliveries.length > 0) this.pump();
  }

  /** One delivery per type and webhook of the organization subscribed to it. */
  private deliveriesOf(event: RecordedEvent, types: readonly string[], { organizationId, extra }: { organizationId: string; extra: Record<string, unknown> }): NewDelivery[] {
    const deliveries: NewDelivery[] = [];
    const occurredAt = occurredAtOf(event);
    for (const type of types) {
      for (const { webhookId } of this.options.webhooks.endpointsFor(organizationId, type, event.position)) {
        // The overrun of a settlement is a delivery of its own, beside the settlement's.
        const deliveryId = deliveryIdFor(webhookId, type === event.type ? event.id : `${event.id}/${type}`);
        const data = type === OVERRUN_EVENT_TYPE ? overrunData(event, extra) : { ...extra, ...(event.data as object) };
        const body = JSON.stringify({ deliveryId, type, organizationId, occurredAt, data });
        deliveries.push({ deliveryId, webhookId, eventPosition: event.position, type, occurredAt, body });
      }
    }
    return deliveries;
  }

  /**
   * The organization an event belongs to, and what its data lacks to name its invocation: its id, its
   * operation and, for a gateway call, `gateway: { keyId, keyName, model }` as the invocation view has it.
   */
  private async originOf(event: RecordedEvent): Promise<{ organizationId: string; extra: Record<string, unknown> } | undefined> {
    if (event.streamName.startsWith('account-')) return { organizationId: event.streamName.slice('account-'.length), extra: {} };
    if (!event.streamName.startsWith('invocation-')) return undefined;
    const [first] = await this.options.eventStore.readStream(event.streamName, { maxCount: 1 });
    const estimate = first?.data as
      | { organizationId?: string; operationId?: string; invocationId?: string; gateway?: { keyId: string; keyName: string; model: string } }
      | undefined;
    if (first?.type !== 'InvocationEstimated' || estimate?.organizationId === undefined) return undefined;
    const gateway = estimate.gateway;
    return {
      organizationId: estimate.organizationId,
      extra: {
        invocationId: estimate.invocationId ?? event.streamName.slice('invocation-'.length),
        operationId: estimate.operationId ?? '',
        ...(gateway === undefined ? {} : { gateway: { keyId: gateway.keyId, keyName: gateway.keyName, model: gateway.model } }),
      },
    };
  }

  private async attempt(delivery: DueDelivery): Promise<void> {
    const { webhooks, clock, logger } = this.options;
    const attempt = delivery.attempts + 1;
    const sentAtMs = clock.now();
    const headers = {
      'Content-Type': 'application/json',
      'User-Agent': 'llm-ledger-webhooks',
      [DELIVERY_HEADER]: delivery.deliveryId,
      [SIGNATURE_HEADER]: signatureHeader(delivery.secret, Math.floor(sentAtMs / 1_000), delivery.body),
    };
    const startedAt = performance.now();
    const result = await this.send(delivery.url, delivery.body, headers, DELIVERY_ATTEMPT_TIMEOUT_MS);
    const durationMs = performance.now() - startedAt;
    const ok = result.statusCode !== undefined && result.statusCode >= 200 && result.statusCode < 300;
    const record = {
      attempt,
      at: new Date(sentAtMs).toISOString(),
      ...(result.statusCode === undefined ? {} : { statusCode: result.statusCode }),
      ...(result.error === undefined ? {} : { error: result.error }),
      durationMs,
    };
    if (ok) webhooks.recordAttempt(delivery.deliveryId, record, { status: 'delivered' });
    else if (attempt >= MAX_DELIVERY_ATTEMPTS) {
      webhooks.recordAttempt(delivery.deliveryId, record, { status: 'dead_lettered' });
      // Names, never the URL (it may carry a token) and never the secret.
      logger?.warn({ message: 'webhook delivery dead-lettered', deliveryId: delivery.deliveryId, webhookId: delivery.webhookId, attempts: attempt });
    } else {
      webhooks.recordAttempt(delivery.deliveryId, record, { status: 'pending', nextAttemptAtMs: clock.now() + retryWaitMs(attempt + 1) });
    }
  }
}
