/**
 * The virtual clock every part of a simulated ledger reads (CLOCK, the scripted models, tool handlers,
 * the scenario's own schedule). Unlike the runtime's VirtualClock it never advances on its own: the
 * event-loop pump (event-loop-pump.ts) fires the next timer only once the process is idle, so a store
 * write in flight never lets time leap ahead to some unrelated deadline.
 */
import { insertTimer, sleepOn, type Clock, type VirtualTimer } from '../runtime/clock';

export class SimulationClock implements Clock {
  private nowMs: number;
  /** Sorted by (dueMs, seq); a scenario keeps at most a few thousand. */
  private readonly timers: VirtualTimer[] = [];
  private seq = 0;
  private fired = 0;

  constructor(startMs: number) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  /** Timers set and neither fired nor cancelled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /** When the earliest pending timer is due (ms), or undefined when none is pending. */
  get nextDueMs(): number | undefined {
    return this.timers[0]?.dueMs;
  }

  /** Timers fired since the clock was made. */
  get firedTimers(): number {
    return this.fired;
  }

  setTimer(ms: number, onFire: () => void): () => void {
    const timer: VirtualTimer = { dueMs: this.nowMs + Math.max(0, Math.ceil(ms)), seq: this.seq++, onFire };
    insertTimer(this.timers, timer);
    return () => {
      const index = this.timers.indexOf(timer);
      if (index >= 0) this.timers.splice(index, 1);
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }


  /**
   * Moves time on by `ms` without firing anything: timers that came due meanwhile fire on the next
   * `fireNext` calls, late, in due order (as on an event loop that was busy).
   */
  advanceBy(ms: number): void {
    this.nowMs += Math.max(0, Math.ceil(ms));
  }

  /** Moves time to the earliest timer (never backwards) and fires it; false when no timer is pending. */
  fireNext(): boolean {
    const next = this.timers.shift();
    if (next === undefined) return false;
    this.nowMs = Math.max(this.nowMs, next.dueMs);
    this.fired += 1;
    next.onFire();
    return true;
  }
}
