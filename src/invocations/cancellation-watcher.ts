import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { EVENT_STORE, type EventStore, type RecordedEvent, type Subscription } from '../event-store/event-store.port';
import { InvocationEndings } from './invocation-endings';
import type { InvocationCancellationRequested } from './invocation.events';
import { RunningInvocations } from './running-invocations';

const INVOCATION_PREFIX = 'invocation-';

/**
 * Follows the log for cancellation requests and aborts the runs of this process they name, so a
 * request recorded by another instance on the same store (the embedded store's subscriptions see
 * other processes' commits within their poll interval) still ends the conversation here. It also
 * tells keyed repeats waiting here when the invocation they wait for ends (InvocationEndings). Starts
 * at the log's head: every run and every wait of this process begins after it.
 */
@Injectable()
export class CancellationWatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private subscription: Subscription | undefined;
  private stopped = false;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly running: RunningInvocations,
    private readonly endings: InvocationEndings,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.follow(await this.store.headPosition());
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    const subscription = this.subscription;
    this.subscription = undefined;
    await subscription?.stop().catch(() => undefined);
  }

  private follow(after: bigint | undefined): void {
    if (this.stopped) return;
    // The handler never throws, so nothing it meets can halt the subscription.
    this.subscription = this.store.subscribeToAll((event) => this.observe(event), after === undefined ? {} : { after });
  }

  private observe(event: RecordedEvent): void {
    if (!event.streamName.startsWith(INVOCATION_PREFIX)) return;
    const invocationId = event.streamName.slice(INVOCATION_PREFIX.length);
    this.endings.observe(invocationId, event.type);
    if (event.type !== 'InvocationCancellationRequested') return;
    const { requestedBy, requestedAt } = (event as unknown as InvocationCancellationRequested).data;
    this.running.cancel(invocationId, { requestedBy, requestedAt });
  }
}
