/**
 * The clock port. The runtime reads time and waits only through it: the attempt timeout, the
 * conversation deadline and retry waits are all races against the clock's timers, so they are enforced
 * by the runtime rather than trusted to a provider or a handler, and tests can drive time by hand.
 */
export interface Clock {
  /** Current time in integer milliseconds (epoch-aligned for the system clock). */
  now(): number;
  /**
   * Resolves once `ms` milliseconds have passed (never earlier). Rejects with `signal.reason` as soon
   * as `signal` aborts, immediately if it already has, and then holds no timer.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Calls `onFire` once, `ms` milliseconds from now; the returned function cancels it (calling it again
   * is harmless). The runtime races work against these: far cheaper than a sleep with an AbortSignal.
   */
  setTimer(ms: number, onFire: () => void): () => void;
}

/** setTimeout's largest delay (2^31 − 1 ms); longer timers are chained so they never fire early. */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** `sleep` in terms of `setTimer`, shared by every clock (the simulator's too). */
export function sleepOn(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface SystemTimer {
  readonly dueMs: number;
  readonly seq: number;
  onFire: (() => void) | undefined;
}

/** Dead (cancelled) timers tolerated in the heap before it is compacted: a bound on garbage, in timers. */
const MAX_CANCELLED_TIMERS_KEPT = 1_024;

function earlier(a: SystemTimer, b: SystemTimer): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.seq < b.seq);
}

/**
 * Wall time for production. `now()` is monotonic (process time origin plus elapsed monotonic time), so a
 * wall-clock step (NTP) can neither stretch nor cut a conversation's deadline.
 *
 * Timers are multiplexed over ONE Node timer armed for the earliest live one. Every attempt sets a
 * timeout that almost always loses its race, and a Node timer per attempt (setTimeout + clearTimeout)
 * was the largest cost of a turn, GC included. A cancelled timer is only marked dead; the Node timer is
 * re-armed when an earlier timer arrives, or when it fires and finds the earliest one dead.
 */
export class SystemClock implements Clock {
  private readonly heap: SystemTimer[] = [];
  private seq = 0;
  private live = 0;
  private armed: NodeJS.Timeout | undefined;
  private armedDueMs = Infinity;

  now(): number {
    return Math.floor(performance.timeOrigin + performance.now());
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  setTimer(ms: number, onFire: () => void): () => void {
    const timer: SystemTimer = { dueMs: this.now() + Math.max(0, ms), seq: this.seq++, onFire };
    this.push(timer);
    this.live += 1;
    if (timer.dueMs < this.armedDueMs) this.arm(timer.dueMs);
    return () => {
      if (timer.onFire === undefined) return;
      timer.onFire = undefined;
      this.live -= 1;
      // Nothing left to wait for: release the Node timer so an idle process can exit.
      if (this.live === 0) this.disarm();
      else if (this.heap.length - this.live > MAX_CANCELLED_TIMERS_KEPT) this.compact();
    };
  }

  private arm(dueMs: number): void {
    if (this.armed !== undefined) clearTimeout(this.armed);
    this.armedDueMs = dueMs;
    this.armed = setTimeout(() => this.fireDue(), Math.min(Math.max(0, dueMs - this.now()), MAX_TIMER_DELAY_MS));
  }

  private disarm(): void {
    if (this.armed !== undefined) clearTimeout(this.armed);
    this.armed = undefined;
    this.armedDueMs = Infinity;
    this.heap.length = 0;
  }

  private fireDue(): void {
    this.armed = undefined;
    this.armedDueMs = Infinity;
    const now = this.now();
    try {
      for (let top = this.heap[0]; top !== undefined && top.dueMs <= now; top = this.heap[0]) {
        this.pop();
        const onFire = top.onFire;
        if (onFire === undefined) continue;
        top.onFire = undefined;
        this.live -= 1;
        onFire();
      }
    } finally {
      while (this.heap[0] !== undefined && this.heap[0].onFire === undefined) this.pop();
      const next = this.heap[0];
      if (next !== undefined && this.armed === undefined) this.arm(next.dueMs);
    }
  }

  private compact(): void {
    const kept = this.heap.filter((timer) => timer.onFire !== undefined);
    this.heap.length = 0;
    for (const timer of kept) this.push(timer);
  }

  private push(timer: SystemTimer): void {
    const heap = this.heap;
    let index = heap.push(timer) - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!earlier(timer, heap[parent]!)) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = timer;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && earlier(heap[right]!, heap[left]!) ? right : left;
      if (!earlier(heap[child]!, last)) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = last;
  }
}

/** The shared system clock. */
export const systemClock: Clock = new SystemClock();

/** A timer of a virtual clock: due at `dueMs`, and set `seq`-th, so same-instant timers fire in set order. */
export interface VirtualTimer {
  readonly dueMs: number;
  readonly seq: number;
  readonly onFire: () => void;
}

/** Inserts `timer` into `timers`, kept sorted by (dueMs, seq), by binary search. */
export function insertTimer<Timer extends VirtualTimer>(timers: Timer[], timer: Timer): void {
  let low = 0;
  let high = timers.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const other = timers[mid]!;
    if (other.dueMs < timer.dueMs || (other.dueMs === timer.dueMs && other.seq < timer.seq)) low = mid + 1;
    else high = mid;
  }
  timers.splice(low, 0, timer);
}

export interface VirtualClockOptions {
  /** Time at which the clock starts, in ms. Default 0. */
  readonly startMs?: number;
  /**
   * When true (the default), time jumps to the next timer whenever the process has nothing else to do
   * (checked after the microtask queue drains), so "slow" code costs no wall time. When false, time only
   * moves through `advance` / `advanceTo`. Auto-advance assumes the code under test waits on nothing but
   * this clock (no real I/O), which holds for scripted providers and handlers.
   */
  readonly autoAdvance?: boolean;
}

/** VirtualClock.runAll's default bound on timers fired, so a runaway test fails instead of spinning. */
export const MAX_TIMERS_PER_RUN_ALL = 10_000;

/** Lets every promise continuation queued so far run (one macrotask hop; not a wall-clock sleep). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A deterministic clock for tests. Timers fire in due-time order (ties in the order they were set), each
 * at its own instant, and the continuations of one timer run before the next fires.
 */
export class VirtualClock implements Clock {
  private nowMs: number;
  private readonly timers: VirtualTimer[] = [];
  private seq = 0;
  private pumpScheduled = false;
  readonly autoAdvance: boolean;

  constructor(options: VirtualClockOptions = {}) {
    this.nowMs = options.startMs ?? 0;
    this.autoAdvance = options.autoAdvance ?? true;
  }

  now(): number {
    return this.nowMs;
  }

  /** Timers set and not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  setTimer(ms: number, onFire: () => void): () => void {
    const timer: VirtualTimer = { dueMs: this.nowMs + Math.max(0, ms), seq: this.seq++, onFire };
    this.insert(timer);
    if (this.autoAdvance) this.schedulePump();
    return () => this.remove(timer);
  }

  /** Moves time forward by `ms`, firing every timer due on the way at its own instant. */
  advance(ms: number): Promise<void> {
    return this.advanceTo(this.nowMs + ms);
  }

  /** Moves time forward to `targetMs` (never backwards), firing due timers in order. */
  async advanceTo(targetMs: number): Promise<void> {
    await settle();
    for (let next = this.timers[0]; next !== undefined && next.dueMs <= targetMs; next = this.timers[0]) {
      this.fire(next);
      await settle();
    }
    this.nowMs = Math.max(this.nowMs, targetMs);
  }

  /** Fires timers until none is left; `maxTimers` bounds a test that keeps setting new ones. */
  async runAll(maxTimers = MAX_TIMERS_PER_RUN_ALL): Promise<void> {
    await settle();
    for (let fired = 0; this.timers.length > 0; fired++) {
      if (fired >= maxTimers) throw new Error(`VirtualClock.runAll: more than ${maxTimers} timers fired`);
      this.fire(this.timers[0]!);
      await settle();
    }
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      const next = this.timers[0];
      if (next === undefined) return;
      this.fire(next);
      if (this.timers.length > 0) this.schedulePump();
    });
  }

  private fire(timer: VirtualTimer): void {
    this.remove(timer);
    this.nowMs = Math.max(this.nowMs, timer.dueMs);
    timer.onFire();
  }

  private insert(timer: VirtualTimer): void {
    insertTimer(this.timers, timer);
  }

  private remove(timer: VirtualTimer): void {
    const index = this.timers.indexOf(timer);
    if (index >= 0) this.timers.splice(index, 1);
  }
}

/**
 * A one-shot stop for a piece of work (an attempt, a conversation): records why it stopped, rejects the
 * races it guards, and aborts its AbortSignal. The signal is created only when someone reads it, because
 * an AbortController and its abort are the costliest part of a turn (see bench/runtime.bench.ts).
 */
export class Stopper<Cause extends string> {
  private stoppedBy: Cause | undefined;
  private stopReason: unknown;
  private controller: AbortController | undefined;
  // The races still waiting; almost always zero or one, so no Set.
  private rejecters: ((reason: unknown) => void)[] = [];

  /** Why it stopped, or undefined while it runs. */
  get cause(): Cause | undefined {
    return this.stoppedBy;
  }

  /** Fires when it stops, with the stop's reason; created on first read (already aborted if stopped). */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.stoppedBy !== undefined) this.controller.abort(this.stopReason);
    }
    return this.controller.signal;
  }

  /** Stops once; later calls change nothing. */
  stop(cause: Cause, reason: unknown): void {
    if (this.stoppedBy !== undefined) return;
    this.stoppedBy = cause;
    this.stopReason = reason;
    this.controller?.abort(reason);
    const waiting = this.rejecters;
    this.rejecters = [];
    for (const reject of waiting) reject(reason);
  }

  /**
   * Settles with `work`, or rejects with the stop's reason as soon as it stops, whichever comes first.
   * Work that loses keeps running (JavaScript cannot stop it); its late result is ignored.
   */
  race<T>(work: Promise<T>): Promise<T> {
    return this.raceTo(work, identity, rethrow);
  }

  /**
   * `race(work).then(onValue, onError)` in one promise (one microtask hop fewer on every attempt):
   * `onError` receives the work's error, or the stop's reason when the stop came first.
   */
  raceTo<T, R>(work: Promise<T>, onValue: (value: T) => R, onError: (error: unknown) => R): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let done = false;
      const finish = (map: () => R): void => {
        if (done) return;
        done = true;
        try {
          resolve(map());
        } catch (thrown) {
          reject(thrown);
        }
      };
      const fail = (error: unknown): void => finish(() => onError(error));
      if (this.stoppedBy !== undefined) {
        work.catch(noop);
        fail(this.stopReason);
        return;
      }
      this.rejecters.push(fail);
      work.then(
        (value) => {
          this.forget(fail);
          finish(() => onValue(value));
        },
        (error: unknown) => {
          this.forget(fail);
          fail(error);
        },
      );
    });
  }

  private forget(reject: (reason: unknown) => void): void {
    const index = this.rejecters.indexOf(reject);
    if (index >= 0) this.rejecters.splice(index, 1);
  }
}

function noop(): void {}

function identity<T>(value: T): T {
  return value;
}

function rethrow(error: unknown): never {
  throw error;
}

/** The reason the runtime gives a signal it aborts because time ran out (the web's `TimeoutError`). */
export function timeoutReason(message: string): DOMException {
  return new DOMException(message, 'TimeoutError');
}

/** True when an abort reason says time ran out rather than that someone cancelled. */
export function isTimeoutReason(reason: unknown): boolean {
  return typeof reason === 'object' && reason !== null && (reason as { name?: unknown }).name === 'TimeoutError';
}
