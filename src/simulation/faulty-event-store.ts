/**
 * The event store as one simulated process sees it: the real store (SQLite or EventStoreDB) behind a
 * wrapper that injects the storage faults of a scenario and plays the process's death.
 *
 * - **Crash.** At a chosen boundary (the n-th append holding a given event type, before or after it is
 *   written) the process dies: that append's caller never hears back, and every later call fails with
 *   ProcessGoneError, as it would for a process that no longer exists. What was committed stays in the
 *   log; the simulator then starts a fresh process on the same log (nothing in memory survives).
 * - **Conflict.** An append fails once with ConcurrencyError without writing, as if another process had
 *   appended first; the repository must re-read and decide again.
 * - **Second writer.** Another process really appends to the stream just before (a grant on an account
 *   stream), so the append fails with a genuine ConcurrencyError on a stream that moved on.
 * - **Lost acknowledgement.** The append is committed but its caller gets an error, as when a
 *   connection drops after the server wrote.
 */
import type {
  AppendOptions,
  AppendResult,
  AppendTogetherOptions,
  EventStore,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
} from '../event-store/event-store.port';
import { ConcurrencyError } from '../event-store/event-store.port';
import type { ActivityProbe } from './event-loop-pump';

/** Every call of a process that has died: the process is gone, nothing it does happens any more. */
export class ProcessGoneError extends Error {
  override readonly name = 'ProcessGoneError';
}

/** The append was committed, but its acknowledgement never reached the caller. */
export class AppendAcknowledgementLostError extends Error {
  override readonly name = 'AppendAcknowledgementLostError';
}

/** The fault injected into one append. */
export type AppendFault = 'none' | 'conflict' | 'second-writer' | 'lost-ack';

/** Decides, append by append, what happens; owned by the simulator so decisions survive restarts. */
export interface StoreFaultController {
  /** Whether this append crashes the process, and on which side of the write. */
  crashAt(streamName: string, events: readonly NewEvent[]): 'before' | 'after' | undefined;
  /** Called once, synchronously, when the process dies. */
  onCrash(streamName: string, events: readonly NewEvent[], when: 'before' | 'after'): void;
  faultFor(streamName: string, events: readonly NewEvent[]): AppendFault;
  /** The event another process appends first for a second-writer fault; undefined when it has none for this stream. */
  secondWriterEvent(streamName: string): NewEvent | undefined;
  /** A deliberately broken build rewrites appends here; the identity in every real run. */
  tamper(streamName: string, events: readonly NewEvent[]): readonly NewEvent[];
  /** Told of every append as it is issued, before any fault or crash decides its fate. */
  issued(streamName: string, events: readonly NewEvent[]): void;
  /** Told of every append the store committed (its write returned), whatever its caller then hears: each part's stream and last revision. */
  committed(parts: readonly { readonly streamName: string; readonly revision: bigint }[]): void;
  /** Told what the real store did that matters for coverage (a genuine conflict, overlapping appends). */
  observe(what: 'genuine-conflict' | 'overlapping-append'): void;
}

export class FaultyEventStore implements EventStore {
  private dead = false;
  private readonly gone = new AbortController();
  /** The process's subscriptions not stopped yet, each with the position it started after. */
  private readonly following = new Set<{ readonly subscription: Subscription; readonly after: bigint | undefined }>();

  constructor(
    private readonly inner: EventStore,
    private readonly controller: StoreFaultController,
    private readonly probe: ActivityProbe,
  ) {
    if (inner.appendTogether !== undefined) this.appendTogether = (parts, options) => this.faulted(parts, (tampered) => inner.appendTogether!(tampered, options));
  }

  get isDead(): boolean {
    return this.dead;
  }

  /**
   * Aborted when the process dies (killed, or at a crash point): what the process waits for on its
   * own, its projections catching up, ends then, as it would with the process.
   */
  get goneSignal(): AbortSignal {
    return this.gone.signal;
  }

  /** Kills the process from outside (e.g. to stop a run after a violation). */
  die(): void {
    this.dead = true;
    if (!this.gone.signal.aborted) this.gone.abort(new ProcessGoneError('the process is gone'));
  }

  async append(streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> {
    const [result] = await this.faulted([{ streamName, events, expectedRevision: options.expectedRevision }], ([part]) =>
      this.inner.append(part!.streamName, part!.events, options).then((written) => [written]),
    );
    return result!;
  }

  /**
   * Present when the real store has it (it commits across streams), faulted as one append: the
   * controller sees each part in order, the first part it crashes at or faults decides what happens
   * to the whole, and a conflict names that part's stream.
   */
  readonly appendTogether?: (parts: readonly StreamAppend[], options?: AppendTogetherOptions) => Promise<AppendResult[]>;

  /**
   * One append of one part or several, through the scenario's faults: the controller is told of
   * each part, then asked, part by part, whether the process crashes at it, else whether it is
   * faulted; the first part that says so decides for the whole. `write` writes the (tampered) parts.
   */
  private async faulted(parts: readonly StreamAppend[], write: (parts: readonly StreamAppend[]) => Promise<AppendResult[]>): Promise<AppendResult[]> {
    this.assertAlive();
    for (const part of parts) this.controller.issued(part.streamName, part.events);
    const crash = firstOf(parts, (part) => this.controller.crashAt(part.streamName, part.events));
    if (crash?.what === 'before') this.crash(crash.part.streamName, crash.part.events, 'before');
    // A crash point is not also given a fault, so the crash it was armed for really happens.
    const fault = crash === undefined ? firstOf(parts, (part) => unlessNone(this.controller.faultFor(part.streamName, part.events))) : undefined;
    if (fault?.what === 'conflict') {
      const { streamName, expectedRevision } = fault.part;
      throw new ConcurrencyError(streamName, expectedRevision, (await this.inner.streamRevision(streamName)) ?? 'no_stream');
    }
    if (fault?.what === 'second-writer') await this.appendAsSecondWriter(fault.part.streamName, { expectedRevision: fault.part.expectedRevision });
    if (this.probe.busy) this.controller.observe('overlapping-append');
    this.probe.begin();
    let results: AppendResult[];
    try {
      results = await write(parts.map((part) => ({ ...part, events: this.controller.tamper(part.streamName, part.events) })));
    } catch (error) {
      if (error instanceof ConcurrencyError) this.controller.observe('genuine-conflict');
      throw error;
    } finally {
      this.probe.end();
    }
    this.controller.committed(parts.map((part, index) => ({ streamName: part.streamName, revision: results[index]!.nextExpectedRevision })));
    // Died while this append waited for its commit: written, never acknowledged.
    this.assertAlive();
    if (crash?.what === 'after') this.crash(crash.part.streamName, crash.part.events, 'after');
    if (fault?.what === 'lost-ack') throw new AppendAcknowledgementLostError(`the acknowledgement of an append to ${parts.map((part) => part.streamName).join(', ')} was lost`);
    return results;
  }

  async readStream(streamName: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    this.assertAlive();
    return this.observed(this.inner.readStream(streamName, options));
  }

  async streamRevision(streamName: string): Promise<bigint | undefined> {
    this.assertAlive();
    return this.observed(this.inner.streamRevision(streamName));
  }

  async readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    this.assertAlive();
    return this.observed(this.inner.readAll(options));
  }

  subscribeToAll(handler: SubscriptionHandler, options?: SubscribeOptions): Subscription {
    this.assertAlive();
    const subscription = this.inner.subscribeToAll((event) => {
      // A dead process's projection runner hears nothing more.
      this.assertAlive();
      this.probe.touch();
      return handler(event);
    }, options);
    const followed = { subscription, after: options?.after };
    this.following.add(followed);
    return {
      get lastPosition() {
        return subscription.lastPosition;
      },
      stop: () => {
        this.following.delete(followed);
        return subscription.stop();
      },
    };
  }

  /**
   * Whether each subscription of this process has handed over the log's head (true for a dead
   * process: it hears nothing more). On a server store a subscription's read is I/O the probe does not
   * see, so the pump asks this before it lets time pass for idleness: a process whose watcher has yet
   * to hear of a commit is not idle. Asked of the real store, so the question is not activity itself.
   */
  async subscriptionsAtHead(): Promise<boolean> {
    if (this.dead || this.following.size === 0) return true;
    const head = await this.inner.headPosition();
    if (head === undefined) return true;
    for (const { subscription, after } of this.following) {
      const reached = subscription.lastPosition ?? after;
      if (reached === undefined || reached < head) return false;
    }
    return true;
  }

  async headPosition(): Promise<bigint | undefined> {
    this.assertAlive();
    return this.observed(this.inner.headPosition());
  }

  /** A read, counted as store activity while it is in flight (over a network it takes event-loop turns). */
  private async observed<T>(read: Promise<T>): Promise<T> {
    this.probe.begin();
    try {
      return await read;
    } finally {
      this.probe.end();
    }
  }

  /** Closes the real store, dead or alive: the next process must be able to open the same log. */
  close(): Promise<void> {
    return this.inner.close();
  }

  private crash(streamName: string, events: readonly NewEvent[], when: 'before' | 'after'): never {
    this.die();
    this.controller.onCrash(streamName, events, when);
    throw new ProcessGoneError(`the process died ${when} appending ${events.map((event) => event.type).join(', ')} to ${streamName}`);
  }

  /** Another process appends at the revision this writer expects, so this writer's append conflicts for real. */
  private async appendAsSecondWriter(streamName: string, options: AppendOptions): Promise<void> {
    const foreign = this.controller.secondWriterEvent(streamName);
    if (foreign === undefined) return;
    this.probe.begin();
    try {
      // Only the expected revision: the writer's own commit callback is not this append's to call.
      const written = await this.inner.append(streamName, [foreign], { expectedRevision: options.expectedRevision });
      this.controller.committed([{ streamName, revision: written.nextExpectedRevision }]);
    } catch {
      // The stream had already moved on: the writer conflicts anyway.
    } finally {
      this.probe.end();
    }
  }

  private assertAlive(): void {
    if (this.dead) throw new ProcessGoneError('the process is gone');
  }
}

/** The first part for which `ask` answers something, with its answer. */
function firstOf<T>(parts: readonly StreamAppend[], ask: (part: StreamAppend) => T | undefined): { readonly what: T; readonly part: StreamAppend } | undefined {
  for (const part of parts) {
    const what = ask(part);
    if (what !== undefined) return { what, part };
  }
  return undefined;
}

/** A fault, or undefined for none. */
function unlessNone(fault: AppendFault): Exclude<AppendFault, 'none'> | undefined {
  return fault === 'none' ? undefined : fault;
}
