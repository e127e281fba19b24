/**
 * Feeds the counters from the log, after commit: the metrics say what the log says, never what a
 * command hoped to write. It follows the log from its head at start (Prometheus counters begin at
 * zero with each process; `rate()` reads across restarts).
 */
import type { EventStore, RecordedEvent, Subscription } from '../event-store/event-store.port';
import type { InvocationEvent } from '../invocations/invocation.events';
import { LedgerMetrics, NO_OUTCOME } from './ledger-metrics';

/**
 * Invocations whose labels are kept between their first and their final event. Bounded by the
 * requests in flight; past it the oldest is dropped (its final event then reads the stream's first).
 */
export const MAX_TRACKED_INVOCATIONS = 100_000;

const INVOCATION_PREFIX = 'invocation-';

interface InvocationLabels {
  readonly operation: string;
  readonly organizationId: string;
  readonly provider: string;
  /** A gateway call's model (on the rate card: a bounded set), for its overrun. */
  readonly gatewayModel?: string;
  outcome?: string;
}

type RecordedInvocationEvent = RecordedEvent & InvocationEvent;

export class LogMetricsFollower {
  private subscription: Subscription | undefined;
  private readonly tracked = new Map<string, InvocationLabels>();
  private appliedPosition: bigint | undefined;
  /** Events whose labels could not be read (counted nowhere else); see `skipped`. */
  private skippedEvents = 0;
  private waiters: { readonly position: bigint; readonly resolve: () => void }[] = [];

  /**
   * `report` is told when the subscription meets an error of its own: `willRetry` true while it
   * resubscribes, false when it ended (the counters then stop moving until a restart).
   */
  constructor(
    private readonly store: EventStore,
    private readonly metrics: LedgerMetrics,
    private readonly report: (error: Error, willRetry: boolean) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    if (this.subscription !== undefined) return;
    const head = await this.store.headPosition();
    this.appliedPosition = head;
    this.subscription = this.store.subscribeToAll(
      (event) => {
        // A metric that cannot be read from its event (its stream unreadable) is not worth stopping for.
        const skip = (): void => {
          this.skippedEvents += 1;
          this.applied(event.position);
        };
        let counting: void | Promise<void>;
        try {
          counting = this.apply(event);
        } catch {
          return skip();
        }
        // Most events are counted at once: only a call begun before this process followed the log is read first.
        if (counting === undefined) return this.applied(event.position);
        return counting.then(() => this.applied(event.position), skip);
      },
      { ...(head === undefined ? {} : { after: head }), onError: this.report },
    );
  }

  /** Events the follower could not count (their invocation's first event could not be read). */
  get skipped(): number {
    return this.skippedEvents;
  }

  /** Resolves once the counters include every event up to `position` (for tests and shutdown). */
  caughtUpTo(position: bigint): Promise<void> {
    if (this.appliedPosition !== undefined && this.appliedPosition >= position) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ position, resolve }));
  }

  private applied(position: bigint): void {
    this.appliedPosition = position;
    if (this.waiters.length === 0) return;
    const still: typeof this.waiters = [];
    for (const waiter of this.waiters) {
      if (waiter.position <= position) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
  }

  async stop(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = undefined;
    // A metric that failed to apply is not worth failing a shutdown for.
    await subscription?.stop().catch(() => undefined);
  }

  /** Folds one committed event into the counters. */
  apply(event: RecordedEvent): void | Promise<void> {
    if (!event.streamName.startsWith(INVOCATION_PREFIX)) return;
    const recorded = event as RecordedInvocationEvent;
    if (recorded.type === 'InvocationEstimated') {
      this.remember(event.streamName, labelsOf(recorded.data));
      return;
    }
    if (!COUNTED.has(recorded.type)) return;
    const labels = this.tracked.get(event.streamName);
    if (labels !== undefined) return this.count(recorded, labels);
    // Began before this process followed the log: its labels are in its first event.
    return this.labelsFromStream(event.streamName).then((found) => {
      if (found !== undefined) this.count(recorded, found);
    });
  }

  private count(event: RecordedInvocationEvent, labels: InvocationLabels): void {
    switch (event.type) {
      case 'AttemptRecorded':
        this.metrics.attemptRecorded(
          { provider: labels.provider, model: event.data.model, classification: event.data.classification },
          event.data.durationMs,
        );
        return;
      case 'InvocationCompleted':
        labels.outcome = event.data.outcome;
        return;
      case 'InvocationFailed':
        labels.outcome = 'failed';
        return;
      case 'InvocationRefused':
        this.tracked.delete(event.streamName);
        this.metrics.invocationRefused({ ...labels, reason: event.data.reason });
        return;
      case 'InvocationSettled':
        this.tracked.delete(event.streamName);
        this.metrics.invocationEnded({ ...labels, outcome: labels.outcome ?? NO_OUTCOME });
        this.metrics.creditsChargedAdd(labels, event.data.chargeCredits);
        if (labels.gatewayModel !== undefined) this.metrics.gatewayOverrunAdd(labels.gatewayModel, event.data.overrunCredits ?? 0);
        return;
      default:
        return;
    }
  }

  private remember(streamName: string, labels: InvocationLabels): void {
    if (this.tracked.size >= MAX_TRACKED_INVOCATIONS) {
      const oldest = this.tracked.keys().next().value;
      if (oldest !== undefined) this.tracked.delete(oldest);
    }
    this.tracked.set(streamName, labels);
  }

  private async labelsFromStream(streamName: string): Promise<InvocationLabels | undefined> {
    const events = (await this.store.readStream(streamName)) as RecordedInvocationEvent[];
    const first = events[0];
    if (first?.type !== 'InvocationEstimated') return undefined;
    const labels = labelsOf(first.data);
    // The outcome, if the result was recorded before this process started following.
    for (const event of events) {
      if (event.type === 'InvocationCompleted') labels.outcome = event.data.outcome;
      if (event.type === 'InvocationFailed') labels.outcome = 'failed';
    }
    this.remember(streamName, labels);
    return labels;
  }
}

/** An invocation's labels, from its first event. */
function labelsOf(estimated: Extract<InvocationEvent, { type: 'InvocationEstimated' }>['data']): InvocationLabels {
  return {
    operation: estimated.operationId,
    organizationId: estimated.organizationId,
    provider: estimated.publication?.routing.provider ?? 'none',
    ...(estimated.gateway === undefined ? {} : { gatewayModel: estimated.gateway.model }),
  };
}

const COUNTED: ReadonlySet<string> = new Set([
  'AttemptRecorded',
  'InvocationCompleted',
  'InvocationFailed',
  'InvocationRefused',
  'InvocationSettled',
]);
