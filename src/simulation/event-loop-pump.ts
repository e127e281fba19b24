/**
 * Drives virtual time. The pump turns the event loop (one `setImmediate` hop per turn) and, each turn:
 * - fires a timer already due (no time passes, so work started at the same instant really overlaps);
 * - while a store call is in flight, sometimes (a seeded draw, per turn or, on a server store, per
 *   change of store activity) moves time on by up to MAX_STORE_LATENCY_MS: the write took that long, and whatever came due meanwhile (another request,
 *   a sweep, a deadline) fires late, on the next turns, and races it — as timers do on a loaded loop;
 * - once the process is idle (no store call in flight and none started for QUIET_TURNS_BEFORE_TIMER
 *   turns and, on a server store, every subscription at the log's head), moves time to the next timer
 *   and fires it.
 * Without the idle rule, time would leap to the next timer (say, a conversation's deadline) while a
 * write that should come first is still queued; without the other two, no two requests' writes would
 * ever meet.
 *
 * Everything here counts event-loop turns and draws from a seeded stream, never wall time, so the same
 * code under the same seed fires the same timers at the same points.
 */
import type { Prng } from './prng';
import {
  MAX_IDLE_TURNS_WITHOUT_TIMERS,
  MAX_STORE_LATENCY_MS,
  QUIET_TURNS_BEFORE_TIMER,
  QUIET_TURNS_BETWEEN_HEAD_CHECKS,
  STORE_LATENCY_PERCENT,
} from './simulation.bounds';
import type { SimulationClock } from './simulation-clock';

/** What the ledger is doing with the store: calls in flight, and a count that moves on every call. */
export class ActivityProbe {
  private calls = 0;
  private inFlight = 0;
  /** Held while the simulator restarts a node: a restart is not idle time, so no timer fires for idleness. */
  private holds = 0;

  get count(): number {
    return this.calls;
  }

  get busy(): boolean {
    return this.inFlight > 0 || this.holds > 0;
  }

  /** A store call is in flight (the only time that may take virtual time: see STORE_LATENCY_PERCENT). */
  get storeBusy(): boolean {
    return this.inFlight > 0;
  }

  touch(): void {
    this.calls += 1;
  }

  /** Brackets a store call that takes event-loop turns (an append waits for its group commit). */
  begin(): void {
    this.calls += 1;
    this.inFlight += 1;
  }

  end(): void {
    this.calls += 1;
    this.inFlight -= 1;
  }

  /** Keeps the process from counting as idle until the returned function is called. */
  hold(): () => void {
    this.holds += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds -= 1;
    };
  }
}

/** Why `runUntil` returned. */
export type PumpEnding = 'done' | 'hung' | 'too-many-turns' | 'past-deadline';

export interface RunUntilOptions {
  /** Checked after every turn; the pump returns once it is true. */
  readonly done: () => boolean;
  /** A bound on event-loop turns. */
  readonly maxTurns: number;
  /** Virtual time the run may not pass (ms on the clock). */
  readonly deadlineMs: number;
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class EventLoopPump {
  constructor(
    private readonly clock: SimulationClock,
    private readonly probe: ActivityProbe,
    /** Draws whether a busy turn lets time pass (a slow write). */
    private readonly latency: Prng,
    /**
     * Draw that once per change of store activity instead of once per busy turn: a call to a server
     * in another process (PostgreSQL) spans hundreds of turns where the embedded store's spans a few,
     * and a draw per turn would let whole seconds of virtual time pass during one round trip.
     */
    private readonly latencyOncePerCall = false,
    /**
     * On a server store: whether the processes' subscriptions have handed over the log's head. Their
     * reads are I/O the probe does not see, so a commit may be on its way to a watcher (a keyed
     * repeat waiting for its first request to end) while the probe is quiet; no timer fires for
     * idleness until this says true. Absent on the embedded store, whose every read the probe sees.
     */
    private readonly atHead?: () => Promise<boolean>,
  ) {}

  /**
   * Turns the event loop, firing timers whenever the process is idle, until `done()`. Returns `hung`
   * when nothing is in flight, no timer is left and `done()` still is false for
   * MAX_IDLE_TURNS_WITHOUT_TIMERS turns: work waiting on something that will never happen.
   */
  async runUntil({ done, maxTurns, deadlineMs }: RunUntilOptions): Promise<PumpEnding> {
    let quietTurns = 0;
    let idleWithoutTimers = 0;
    let lastCount = this.probe.count;
    let latencyDrawnAt: number | undefined;
    let shortOfHead = false;
    for (let turn = 0; turn < maxTurns; turn++) {
      await nextTurn();
      if (done()) return 'done';
      const nextDueMs = this.clock.nextDueMs;
      if (nextDueMs !== undefined && nextDueMs <= this.clock.now()) {
        this.clock.fireNext();
        quietTurns = 0;
        continue;
      }
      if (this.probe.busy || this.probe.count !== lastCount) {
        lastCount = this.probe.count;
        quietTurns = 0;
        idleWithoutTimers = 0;
        shortOfHead = false;
        if (this.probe.storeBusy && this.drawsLatencyAt(latencyDrawnAt) && this.latency.chance(STORE_LATENCY_PERCENT)) {
          this.clock.advanceBy(this.latency.int(1, MAX_STORE_LATENCY_MS));
        }
        latencyDrawnAt = this.probe.count;
        continue;
      }
      quietTurns += 1;
      if (quietTurns < QUIET_TURNS_BEFORE_TIMER) continue;
      if (this.clock.pendingTimers > 0) {
        if (this.clock.now() > deadlineMs) return 'past-deadline';
        if (this.atHead !== undefined) {
          // Short of the head, the next delivery is activity; without one, ask again now and then.
          if (shortOfHead && quietTurns % QUIET_TURNS_BETWEEN_HEAD_CHECKS !== 0) continue;
          const atHead = await this.atHead();
          // Activity while the question was out: the next turn sees it.
          if (this.probe.busy || this.probe.count !== lastCount) continue;
          // A subscription still reads: not idle. One that never reaches the head ends the run at maxTurns.
          shortOfHead = !atHead;
          if (shortOfHead) continue;
        }
        this.clock.fireNext();
        quietTurns = 0;
        idleWithoutTimers = 0;
        continue;
      }
      idleWithoutTimers += 1;
      if (idleWithoutTimers >= MAX_IDLE_TURNS_WITHOUT_TIMERS) return 'hung';
    }
    return 'too-many-turns';
  }

  /** Whether this busy turn draws a store latency (see `latencyOncePerCall`). */
  private drawsLatencyAt(drawnAtCount: number | undefined): boolean {
    return !this.latencyOncePerCall || drawnAtCount !== this.probe.count;
  }

  /** Lets `ms` of virtual time pass (firing every timer due meanwhile); bounded like `runUntil`. */
  async sleep(ms: number, maxTurns: number): Promise<PumpEnding> {
    let woke = false;
    this.clock.setTimer(ms, () => {
      woke = true;
    });
    return this.runUntil({ done: () => woke, maxTurns, deadlineMs: this.clock.now() + ms });
  }
}
