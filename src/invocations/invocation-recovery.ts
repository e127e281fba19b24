import { Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { recoveredChannel, type RecoveredMessage } from '../domain/recovery.channel';
import type { RecoverySettings } from '../domain/recovery.settings';
import type { Clock } from '../runtime';
import { SweepStaleInvocationsCommand, type SweepReport } from './sweep-stale-invocations.command';

/**
 * What recovery finished, as `ledger_recovered_total{kind}` counts it: the state an invocation was
 * left in (`estimated`, `reserved`, `dispatched`, or a result never settled: `completed`, `pending`,
 * `failed`), or `hold`: the hold of an invocation already settled, which its account never released.
 */
export const RECOVERED_KINDS = ['estimated', 'reserved', 'dispatched', 'completed', 'pending', 'failed', 'hold'] as const;
export type RecoveredKind = (typeof RECOVERED_KINDS)[number];

/**
 * Recovery that runs itself: on start, then every `intervalMs` by the clock, each instance finishes
 * what a crash left behind, through the sweep's own command (`SweepStaleInvocationsCommand` with
 * `by: 'recovery'`). Every decision is the deciders', on the invocation's and the account's own
 * streams: several instances recovering one log at once settle each leftover once (a second
 * settlement is an illegal transition, a second release finds no open hold). Passes never overlap;
 * the next is scheduled when one ends. A failed pass is logged and the next one tries again.
 */
export class InvocationRecovery implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Recovery');
  private cancelTimer: (() => void) | undefined;
  private current: Promise<void> | undefined;
  private stopped = true;
  private completedPasses = 0;

  constructor(
    private readonly sweep: (command: SweepStaleInvocationsCommand) => Promise<SweepReport>,
    private readonly clock: Clock,
    private readonly settings: RecoverySettings,
  ) {}

  /** Passes run to their end (failed ones included) since the instance started. */
  get passes(): number {
    return this.completedPasses;
  }

  get enabled(): boolean {
    return this.settings.intervalMs > 0;
  }

  onApplicationBootstrap(): void {
    this.start();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  /** Schedules the first pass now (on the clock's next turn), unless recovery is off or running. */
  start(): void {
    if (!this.enabled || !this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Cancels the next pass and waits for the one running, if any. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    await this.current;
  }

  /** Resolves once no pass is running (the one in flight, if any, has ended). */
  async idle(): Promise<void> {
    await this.current;
  }

  /** One pass now: settles what is stale and reports what it recovered. */
  async recover(): Promise<SweepReport> {
    const report = await this.sweep(new SweepStaleInvocationsCommand(this.settings.staleAfterMs, 'recovery'));
    const counts = new Map<RecoveredKind, number>();
    for (const { from } of report.settled) counts.set(from as RecoveredKind, (counts.get(from as RecoveredKind) ?? 0) + 1);
    if (report.releasedHolds.length > 0) counts.set('hold', report.releasedHolds.length);
    for (const [kind, count] of counts) recoveredChannel.publish({ kind, count } satisfies RecoveredMessage);
    if (counts.size > 0) this.logger.warn({ message: 'recovery finished what a crash left behind', ...Object.fromEntries(counts) });
    return report;
  }

  private schedule(delayMs: number): void {
    this.cancelTimer = this.clock.setTimer(delayMs, () => {
      this.cancelTimer = undefined;
      this.current = this.pass();
    });
  }

  private async pass(): Promise<void> {
    try {
      await this.recover();
    } catch (error) {
      if (!this.stopped) this.logger.warn({ message: 'a recovery pass failed; the next one tries again', error: describe(error) });
    } finally {
      this.completedPasses += 1;
      this.current = undefined;
      if (!this.stopped) this.schedule(this.settings.intervalMs);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
