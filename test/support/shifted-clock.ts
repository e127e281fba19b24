import { systemClock, type Clock } from '../../src/runtime';

/** The system clock moved to an instant the test chooses: real timers, a date of its own. */
export class ShiftedClock implements Clock {
  private offsetMs = 0;
  jumpTo(ms: number): void {
    this.offsetMs = ms - systemClock.now();
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  now(): number {
    return systemClock.now() + this.offsetMs;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }
  setTimer(ms: number, onFire: () => void): () => void {
    return systemClock.setTimer(ms, onFire);
  }
}
