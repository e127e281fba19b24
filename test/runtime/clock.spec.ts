import { SystemClock, VirtualClock } from '../../src/runtime';
import { Stopper } from '../../src/runtime/clock';

describe('VirtualClock lets tests make slow work without waiting on the wall clock', () => {
  it('jumps to the next timer when nothing else can run, so a one-hour sleep costs no time', async () => {
    const clock = new VirtualClock({ startMs: 1_000 });
    await clock.sleep(3_600_000);
    expect(clock.now()).toBe(3_601_000);
  });

  it('fires timers in due order, each at its own instant, ties in the order they were set', async () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    const at = (label: string, ms: number) => clock.sleep(ms).then(() => fired.push(`${label}@${clock.now()}`));
    await Promise.all([at('late', 300), at('first-tie', 100), at('early', 50), at('second-tie', 100)]);
    expect(fired).toEqual(['early@50', 'first-tie@100', 'second-tie@100', 'late@300']);
  });

  it('rejects a sleep with the abort reason and drops its timer, so an aborted wait never fires', async () => {
    const clock = new VirtualClock({ autoAdvance: false });
    const controller = new AbortController();
    const sleeping = clock.sleep(5_000, controller.signal);
    expect(clock.pendingTimers).toBe(1);
    controller.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
    expect(clock.pendingTimers).toBe(0);
    await expect(clock.sleep(1, controller.signal)).rejects.toThrow('stop');
  });

  it('moves only through advance when auto-advance is off, firing what falls due on the way', async () => {
    const clock = new VirtualClock({ autoAdvance: false });
    let woke = false;
    void clock.sleep(1_000).then(() => {
      woke = true;
    });
    await clock.advance(999);
    expect(woke).toBe(false);
    await clock.advance(1);
    expect(woke).toBe(true);
    expect(clock.now()).toBe(1_000);
  });

  it('runAll fires every pending timer and refuses to spin forever', async () => {
    const clock = new VirtualClock({ autoAdvance: false });
    const order: number[] = [];
    void clock.sleep(20).then(() => order.push(20));
    void clock.sleep(10).then(() => order.push(10));
    await clock.runAll();
    expect(order).toEqual([10, 20]);
    const forever = async (): Promise<void> => {
      for (;;) await clock.sleep(1);
    };
    void forever();
    await expect(clock.runAll(5)).rejects.toThrow('more than 5 timers');
  });
});

describe('Clock.setTimer is the cheap race primitive the runtime uses for timeouts', () => {
  it('fires once at its time on the virtual clock, and not at all once cancelled', async () => {
    const clock = new VirtualClock({ autoAdvance: false });
    const fired: string[] = [];
    clock.setTimer(100, () => fired.push(`kept@${clock.now()}`));
    const cancel = clock.setTimer(50, () => fired.push('cancelled'));
    cancel();
    cancel();
    await clock.advance(1_000);
    expect(fired).toEqual(['kept@100']);
    expect(clock.pendingTimers).toBe(0);
  });

  it('can be cancelled on the system clock before it fires', () => {
    const cancel = new SystemClock().setTimer(60_000, () => {
      throw new Error('must not fire');
    });
    cancel();
  });
});

describe('SystemClock multiplexes its timers over one Node timer (driven here by Jest fake timers)', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('fires timers in due order, each when due, and never a cancelled one', () => {
    const clock = new SystemClock();
    const fired: string[] = [];
    clock.setTimer(300, () => fired.push('300'));
    const cancel = clock.setTimer(100, () => fired.push('cancelled 100'));
    clock.setTimer(200, () => fired.push('200'));
    cancel();
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(199);
    expect(fired).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(fired).toEqual(['200']);
    jest.advanceTimersByTime(100);
    expect(fired).toEqual(['200', '300']);
  });

  it('re-arms for an earlier timer set after a later one', () => {
    const clock = new SystemClock();
    const fired: number[] = [];
    clock.setTimer(60_000, () => fired.push(60_000));
    clock.setTimer(10, () => fired.push(10));
    jest.advanceTimersByTime(10);
    expect(fired).toEqual([10]);
    jest.advanceTimersByTime(60_000);
    expect(fired).toEqual([10, 60_000]);
  });

  it('releases the Node timer once nothing is waiting, so an idle process can exit', () => {
    const clock = new SystemClock();
    const cancels = [clock.setTimer(1_000, () => undefined), clock.setTimer(2_000, () => undefined)];
    expect(jest.getTimerCount()).toBe(1);
    for (const cancel of cancels) cancel();
    expect(jest.getTimerCount()).toBe(0);
  });

  it('keeps firing correctly after compacting many cancelled timers', () => {
    const clock = new SystemClock();
    let fired = 0;
    clock.setTimer(5_000, () => (fired += 1));
    for (let n = 0; n < 3_000; n++) clock.setTimer(1_000 + n, () => (fired += 100))();
    jest.advanceTimersByTime(5_000);
    expect(fired).toBe(1);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('sleeps through it, and an abort cancels the sleep', async () => {
    const clock = new SystemClock();
    const slept = clock.sleep(500);
    jest.advanceTimersByTime(500);
    await expect(slept).resolves.toBeUndefined();
    const controller = new AbortController();
    const aborted = clock.sleep(500, controller.signal);
    controller.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('SystemClock', () => {
  it('gives integer, non-decreasing milliseconds', () => {
    const clock = new SystemClock();
    const first = clock.now();
    const second = clock.now();
    expect(Number.isInteger(first)).toBe(true);
    expect(second).toBeGreaterThanOrEqual(first);
  });

  it('cancels a long sleep at once when its signal aborts, holding no timer', async () => {
    const clock = new SystemClock();
    const controller = new AbortController();
    const sleeping = clock.sleep(60_000, controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(sleeping).rejects.toThrow('cancelled');
  });
});

describe('Stopper ends the races it guards, once, with its first reason', () => {
  it('rejects a pending race with the stop reason and ignores a later stop', async () => {
    const stopper = new Stopper<'deadline' | 'cancelled'>();
    const pending = stopper.race(new Promise(() => undefined));
    stopper.stop('deadline', new Error('deadline passed'));
    stopper.stop('cancelled', new Error('too late'));
    await expect(pending).rejects.toThrow('deadline passed');
    expect(stopper.cause).toBe('deadline');
  });

  it('lets work that finishes first win', async () => {
    const stopper = new Stopper<'deadline'>();
    await expect(stopper.race(Promise.resolve('done'))).resolves.toBe('done');
  });

  it('creates its signal only when read, already aborted if it has stopped', () => {
    const stopper = new Stopper<'cancelled'>();
    stopper.stop('cancelled', 'user left');
    expect(stopper.signal.aborted).toBe(true);
    expect(stopper.signal.reason).toBe('user left');
  });
});
