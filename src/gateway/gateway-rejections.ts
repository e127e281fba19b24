/**
 * Calls refused before their hold by a known key (docs/gateway.md "Rejections before admission"):
 * each is logged at once (the key id, the reason and the model, never the body) and counted in
 * memory per organization, key and reason; the counts are appended to the organization's account
 * stream at most once per GATEWAY_REJECTIONS_FLUSH_MS, one GatewayCallsRejected per key, and on
 * shutdown. A flood of refused calls therefore grows the log by at most one event per key per
 * instance per flush, however many calls it holds; what a crash loses is one flush's counts, never
 * money (nothing was held for them).
 */
import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import type { GatewayRejectionCounts, GatewayRejectionReason } from '../accounts/gateway-keys';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../domain/clock.token';
import type { Clock } from '../runtime';
import type { GatewayRejection } from './gateway-call.port';

/** How long counts wait in memory before they are appended, in ms: the most a crash can lose. */
export const GATEWAY_REJECTIONS_FLUSH_MS = 60_000;

type Pending = Map<string, Map<string, Partial<Record<GatewayRejectionReason, number>>>>;

@Injectable()
export class GatewayRejections implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Gateway');
  private pending: Pending = new Map();
  private since: string | undefined;
  private cancelFlush: (() => void) | undefined;

  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  note(rejection: GatewayRejection): void {
    const { organizationId, keyId, reason, model, requestId } = rejection;
    this.logger.log({ message: 'gateway call refused before its hold', keyId, organizationId, reason, ...(model === undefined ? {} : { model }), requestId });
    let keys = this.pending.get(organizationId);
    if (keys === undefined) this.pending.set(organizationId, (keys = new Map()));
    const counts = keys.get(keyId) ?? {};
    counts[reason] = (counts[reason] ?? 0) + 1;
    keys.set(keyId, counts);
    this.since ??= isoAt(this.clock);
    this.cancelFlush ??= this.clock.setTimer(GATEWAY_REJECTIONS_FLUSH_MS, () => void this.flush());
  }

  /**
   * Appends what is counted so far, one append per organization. Counts whose append fails are
   * logged and dropped: they are figures for an operator, and retrying them forever would hold memory.
   */
  async flush(): Promise<void> {
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    const pending = this.pending;
    const from = this.since ?? isoAt(this.clock);
    this.pending = new Map();
    this.since = undefined;
    const to = isoAt(this.clock);
    for (const [organizationId, keys] of pending) {
      const rejections = [...keys].map(([keyId, counts]) => ({ keyId, counts: counts as GatewayRejectionCounts }));
      try {
        await this.repository.handle(accountStreamName(organizationId), accountDecider, { type: 'RecordGatewayRejections', data: { rejections, from, to } });
      } catch (error) {
        this.logger.error({ message: 'gateway rejection counts not recorded', organizationId, keys: rejections.length, error: error instanceof Error ? error.message : String(error) });
      }
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.flush();
  }
}
