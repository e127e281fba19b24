import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK } from '../domain/clock.token';
import { EventStoreUnavailableError } from '../event-store/event-store.port';
import { RECOVERY_DEADLINE_MARGIN_MS } from '../invocations/invocation-ownership';
import type { Clock } from '../runtime';

/** Wait before the first new try of a settlement the store could not take, in ms; it doubles after each try. */
export const GATEWAY_SETTLEMENT_RETRY_INITIAL_DELAY_MS = 100;
/** Longest wait between two tries of one settlement, in ms. */
export const GATEWAY_SETTLEMENT_RETRY_MAX_DELAY_MS = 5_000;
/**
 * How long a settlement the store could not take is tried again, in ms from its first failure. The
 * call ended upstream within its time bound, and recovery leaves it to its instance until that bound
 * plus RECOVERY_DEADLINE_MARGIN_MS: so the tries end before recovery may settle it at its hold.
 */
export const GATEWAY_SETTLEMENT_RETRY_WINDOW_MS = RECOVERY_DEADLINE_MARGIN_MS;

/** True when a settlement failed because the store did not answer (a server restart, a lost connection). */
export function isStoreUnavailable(error: unknown): boolean {
  return error instanceof EventStoreUnavailableError;
}

/** One settlement being tried again: how to try it, and how to cut its wait short at shutdown. */
interface Retry {
  readonly running: Promise<void>;
  wake(): void;
}

/**
 * Tries again, in the background, the settlements of gateway calls whose usage is known but which the
 * store could not take (docs/deploying.md, "PostgreSQL"): waits GATEWAY_SETTLEMENT_RETRY_INITIAL_DELAY_MS
 * doubling to GATEWAY_SETTLEMENT_RETRY_MAX_DELAY_MS between tries, for GATEWAY_SETTLEMENT_RETRY_WINDOW_MS
 * at most, so a call answered while the store was away is settled at its usage once it is back, not
 * at its hold by recovery. Each try is the whole settlement again, which GatewayCalls makes safe to
 * repeat. Any other failure, the window's end or shutdown ends the tries, and recovery settles the
 * call at its hold as before.
 */
@Injectable()
export class GatewaySettlementRetries implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Gateway');
  private readonly retries = new Map<string, Retry>();
  private closing = false;

  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /** Tries `settle` again until it succeeds or the tries end; once per invocation at a time. */
  retry(invocationId: string, settle: () => Promise<void>): void {
    if (this.closing || this.retries.has(invocationId)) return;
    let wake = (): void => undefined;
    const running = this.tryAgain(invocationId, settle, (cancel) => (wake = cancel)).finally(() => this.retries.delete(invocationId));
    this.retries.set(invocationId, { running, wake: () => wake() });
  }

  private async tryAgain(invocationId: string, settle: () => Promise<void>, onWait: (cancel: () => void) => void): Promise<void> {
    const giveUpAt = this.clock.now() + GATEWAY_SETTLEMENT_RETRY_WINDOW_MS;
    let delayMs = GATEWAY_SETTLEMENT_RETRY_INITIAL_DELAY_MS;
    for (let tries = 1; ; tries++) {
      await new Promise<void>((resolve) => {
        const cancel = this.clock.setTimer(Math.min(delayMs, Math.max(0, giveUpAt - this.clock.now())), resolve);
        onWait(() => {
          cancel();
          resolve();
        });
      });
      if (this.closing) return this.gaveUp(invocationId, tries - 1, 'the service is shutting down');
      try {
        await settle();
        this.logger.log({ message: 'gateway call settled once the store was back', invocationId, tries });
        return;
      } catch (error) {
        if (!isStoreUnavailable(error)) return this.gaveUp(invocationId, tries, describe(error));
        if (this.clock.now() >= giveUpAt) return this.gaveUp(invocationId, tries, `the store was still unavailable after ${GATEWAY_SETTLEMENT_RETRY_WINDOW_MS} ms`);
      }
      delayMs = Math.min(delayMs * 2, GATEWAY_SETTLEMENT_RETRY_MAX_DELAY_MS);
    }
  }

  private gaveUp(invocationId: string, tries: number, why: string): void {
    this.logger.error({ message: 'gateway call not settled; recovery will settle it at its hold', invocationId, tries, why });
  }

  /** Ends every wait: a try under way finishes, none starts; what is left goes to recovery. */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    const retries = [...this.retries.values()];
    for (const retry of retries) retry.wake();
    await Promise.allSettled(retries.map((retry) => retry.running));
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
