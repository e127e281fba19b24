/**
 * Settles the batches whose results nobody fetches (docs/gateway.md "Message Batches"): every
 * GATEWAY_BATCH_POLL_INTERVAL_MS, each batch not yet settled is asked of upstream and, once ended,
 * settled. Safe across instances: each result and the batch's settlement are decided on the batch's
 * stream at its expected revision, so a second instance's settlement records nothing. An upstream
 * error backs that batch off (doubling from the interval, at most GATEWAY_BATCH_MAX_BACKOFF_MS). A
 * batch whose create answer was lost, or that has no answer recorded GATEWAY_BATCH_UNSENT_AFTER_MS
 * after its creation (its instance stopped), keeps its hold and is looked for upstream
 * (GatewayBatches.resolveUnsent): settled as any batch once found, released once it is certain
 * nothing runs.
 */
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { AggregateRepository } from '../../aggregates/aggregate.repository';
import { CLOCK } from '../../domain/clock.token';
import type { Clock } from '../../runtime';
import { BatchUpstreamError } from './batch-upstream';
import { GATEWAY_BATCH_INDEX_STREAM, gatewayBatchIndexDecider } from './gateway-batch-index';
import { GatewayBatches } from './gateway-batches.service';

/** How often each instance asks upstream about the batches not yet settled, in ms. */
export const GATEWAY_BATCH_POLL_INTERVAL_MS = 60_000;
/** The longest a batch's polling backs off after upstream errors, in ms. */
export const GATEWAY_BATCH_MAX_BACKOFF_MS = 15 * 60_000;

export interface PollReport {
  readonly settled: readonly string[];
  readonly failed: readonly string[];
}

@Injectable()
export class GatewayBatchesPoller implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('GatewayBatches');
  /** batchId → upstream errors in a row and when it may be asked again (ms since epoch). */
  private readonly backoff = new Map<string, { readonly failures: number; readonly nextAtMs: number }>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly repository: AggregateRepository,
    private readonly batches: GatewayBatches,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.batches.configured) return;
    this.timer = setInterval(() => void this.pollOnce().catch((error) => this.logger.warn({ message: 'batch poll failed', error: String(error) })), GATEWAY_BATCH_POLL_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  /** One pass over the batches not yet settled, at `nowMs` (the clock's now unless given). */
  async pollOnce(nowMs: number = this.clock.now()): Promise<PollReport> {
    if (this.polling) return { settled: [], failed: [] };
    this.polling = true;
    try {
      const index = (await this.repository.load(GATEWAY_BATCH_INDEX_STREAM, gatewayBatchIndexDecider)).state;
      const settled: string[] = [];
      const failed: string[] = [];
      for (const { batchId, settled: done } of index.batches.values()) {
        if (done || (this.backoff.get(batchId)?.nextAtMs ?? 0) > nowMs) continue;
        const outcome = await this.pollBatch(batchId, nowMs);
        if (outcome === 'settled') settled.push(batchId);
        if (outcome === 'failed') failed.push(batchId);
      }
      return { settled, failed };
    } finally {
      this.polling = false;
    }
  }

  private async pollBatch(batchId: string, nowMs: number): Promise<'settled' | 'in_progress' | 'failed'> {
    try {
      const search = await this.batches.resolveUnsent(batchId, nowMs);
      if (search !== undefined && search.found === undefined && search.candidates + search.contenders > 0) {
        this.logger.warn({ message: 'batch whose create answer was lost: no unique match upstream yet; its hold stays', batchId, candidates: search.candidates, contenders: search.contenders });
      }
      const outcome = await this.batches.settle(batchId);
      this.backoff.delete(batchId);
      return outcome;
    } catch (error) {
      if (!(error instanceof BatchUpstreamError)) throw error;
      const failures = (this.backoff.get(batchId)?.failures ?? 0) + 1;
      const waitMs = Math.min(GATEWAY_BATCH_POLL_INTERVAL_MS * 2 ** failures, GATEWAY_BATCH_MAX_BACKOFF_MS);
      this.backoff.set(batchId, { failures, nextAtMs: nowMs + waitMs });
      this.logger.warn({ message: 'batch not settled: upstream did not answer', batchId, status: error.status, failures, retryInMs: waitMs });
      return 'failed';
    }
  }
}
