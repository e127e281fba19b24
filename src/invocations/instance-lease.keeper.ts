import { Logger, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AggregateRepository } from '../aggregates/aggregate.repository';
import { IllegalTransitionError } from '../domain/domain.errors';
import type { Clock } from '../runtime';
import { instanceLeaseDecider, leaseRenewalPeriodMs, leaseStreamName, type LeaseHolder } from './instance-lease';

/**
 * Attempts at taking a lease before the failure is the caller's, each with a new id: an append whose
 * acknowledgement was lost may have taken the lease after all, which then simply lapses unused.
 */
export const LEASE_TAKE_ATTEMPTS = 3;

export interface InstanceLeaseOptions {
  /** How long the lease lasts after each renewal, in ms. */
  readonly durationMs: number;
  /** A new lease's id: a random UUID unless a deterministic run (the simulator) gives its own. */
  readonly newLeaseId?: () => string;
  /** What the lease records of the instance for an operator: host name and process id by default. */
  readonly instance?: string;
}

/**
 * This instance's lease (instance-lease.ts): taken before the application serves anything, then
 * renewed by the clock every third of its duration, each renewal dated when its timer fired. A
 * renewal refused because the lease lapsed (the process was paused longer than the lease, or the
 * store was unreachable that long) takes a new lease: what the old one owned is recovery's now. A
 * renewal that fails otherwise is logged and the next one tries again. Renewals never overlap.
 */
export class InstanceLeaseKeeper implements LeaseHolder, OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('InstanceLease');
  private current: string | undefined;
  private cancelTimer: (() => void) | undefined;
  private renewing: Promise<void> | undefined;
  private stopped = true;
  private readonly newLeaseId: () => string;
  private readonly instance: string;

  constructor(
    private readonly repository: AggregateRepository,
    private readonly clock: Clock,
    private readonly options: InstanceLeaseOptions,
  ) {
    this.newLeaseId = options.newLeaseId ?? randomUUID;
    this.instance = options.instance ?? `${hostname()}:${process.pid}`;
  }

  get leaseId(): string | undefined {
    return this.current;
  }

  async onModuleInit(): Promise<void> {
    await this.start();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  /** Takes a lease (unless running) and schedules its renewals. */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    await this.take();
    this.schedule();
  }

  /** Cancels the next renewal and waits for the one running. The lease is left to lapse. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    await this.renewing;
  }

  /**
   * Renews nothing for `ms` (as a paused process, or one cut off from its store, renews nothing), then
   * renews at once: the lease survives a pause shorter than what is left of it, and is replaced after a longer one.
   */
  pauseFor(ms: number): void {
    if (this.stopped) return;
    this.cancelTimer?.();
    this.schedule(ms);
  }

  /** Resolves once no renewal is running. */
  async idle(): Promise<void> {
    await this.renewing;
  }

  private async take(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.takeOnce();
      } catch (error) {
        if (attempt >= LEASE_TAKE_ATTEMPTS) throw error;
        this.logger.warn({ message: 'a lease could not be taken; trying again with a new one', error: error instanceof Error ? error.name : String(error) });
      }
    }
  }

  private async takeOnce(): Promise<void> {
    const leaseId = this.newLeaseId();
    const takenAt = new Date(this.clock.now()).toISOString();
    await this.repository.handle(
      leaseStreamName(leaseId),
      instanceLeaseDecider,
      { type: 'TakeLease', data: { leaseId, instance: this.instance, takenAt, durationMs: this.options.durationMs } },
      { correlationId: leaseId, newStream: true },
    );
    this.current = leaseId;
  }

  private schedule(delayMs = leaseRenewalPeriodMs(this.options.durationMs)): void {
    this.cancelTimer = this.clock.setTimer(delayMs, () => {
      this.cancelTimer = undefined;
      // Dated now, when it came due, however long the append then takes.
      const renewedAt = new Date(this.clock.now()).toISOString();
      if (this.renewing === undefined) this.renewing = this.renew(renewedAt).finally(() => (this.renewing = undefined));
      if (!this.stopped) this.schedule();
    });
  }

  private async renew(renewedAt: string): Promise<void> {
    const leaseId = this.current!;
    try {
      // Committed is enough: a renewal the disk then loses only makes the lease lapse sooner, never later.
      await this.repository.handle(
        leaseStreamName(leaseId),
        instanceLeaseDecider,
        { type: 'RenewLease', data: { renewedAt, durationMs: this.options.durationMs } },
        { correlationId: leaseId, acknowledgeOnCommit: true },
      );
    } catch (error) {
      if (this.stopped) return;
      if (error instanceof IllegalTransitionError) {
        this.logger.warn({ message: 'the lease lapsed before its renewal; recovery may settle what it owned; taking a new one', leaseId });
        await this.take().catch((failure: unknown) => this.logger.warn({ message: 'a new lease could not be taken; the next renewal tries again', error: String(failure) }));
        return;
      }
      this.logger.warn({ message: 'a lease renewal failed; the next one tries again', leaseId, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
  }
}
