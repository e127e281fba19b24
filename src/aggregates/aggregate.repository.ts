import { newEventId } from '../event-store/event-id.generator';
import {
  AppendOutcomeUnknownError,
  AppendResult,
  AppendTogetherOptions,
  ConcurrencyError,
  EventMetadata,
  EventStore,
  ExpectedRevision,
  InvalidEventStoreInputError,
  NewEvent,
  RecordedEvent,
  StreamAppend,
} from '../event-store/event-store.port';
import { crossesSnapshotPoint, readLatestSnapshot, writeSnapshot, type SnapshotCodec } from './aggregate-snapshots';
import { appendTimingChannel } from '../domain/timing.channels';
import type { UpcasterRegistry } from '../event-store/upcasting';
import type { Decider, DomainEvent } from '../domain/decider';

/**
 * A decider as the repository runs it: the domain's Decider, plus a snapshot codec for aggregates
 * whose streams grow without bound (accounts: see aggregate-snapshots.ts).
 */
export type AggregateDecider<Command, Event extends DomainEvent, State> = Decider<Command, Event, State> & {
  readonly snapshot?: SnapshotCodec<State>;
};

export interface Loaded<State> {
  readonly state: State;
  /** Revision of the last event folded into `state`; undefined when the stream does not exist. */
  readonly revision: bigint | undefined;
}

export interface Handled<Event, State> extends Loaded<State> {
  /** What this command appended (empty when the decider decided nothing needed to happen). */
  readonly events: readonly Event[];
}

/**
 * One command of `handleAll`: the command itself, or a function of the state the earlier commands
 * led to that returns the command (undefined: none needed).
 */
export type CommandStep<Command, State> = Command | ((state: State) => Command | undefined);

export interface CommandContext {
  readonly correlationId?: string;
  readonly causationId?: string;
  /**
   * Read the stream for events appended since the cached revision before the first decision
   * (default false: a cached state is decided on as it is; see AggregateRepository.handle for why
   * that never lets a stale state decide anything).
   */
  readonly refresh?: boolean;
  /**
   * The caller made this stream's id just now (a random invocation id), so when nothing is cached the
   * first decision starts from the initial state instead of reading an empty stream. Should the
   * stream exist after all, the append's `no_stream` check fails and the command is decided again.
   */
  readonly newStream?: boolean;
  /**
   * Acknowledge this command's append once committed, without waiting for the disk (AppendOptions
   * `acknowledge: 'committed'`): for a step the same caller follows with a durable one on which it
   * acts. Applies when every command of the batch asks for it.
   */
  readonly acknowledgeOnCommit?: boolean;
  /**
   * The caller starts I/O once this command's append is durable (the gateway's dispatch upstream):
   * the store makes the commit durable at once rather than with the turn's other commits
   * (AppendOptions.durableAtOnce). Applies when any command of the batch asks for it.
   */
  readonly durableAtOnce?: boolean;
  /**
   * The caller's only work once this command's append is durable is a write to a socket (the
   * gateway's settlement): the store may make the commit durable off the event loop's thread
   * (AppendOptions.durableOffLoop). Applies when every command of the batch asks for it, and none
   * asks for durableAtOnce.
   */
  readonly durableOffLoop?: boolean;
}

/**
 * Another stream written in the same commit as a command (`handleAlongside`): `before` is decided on
 * it and written just before the command's events, `after` just after them, and nothing of it is
 * written when the command is refused.
 */
export interface Alongside<Command, State> {
  readonly streamName: string;
  readonly decider: AggregateDecider<Command, DomainEvent, State>;
  readonly before: readonly CommandStep<Command, State>[];
  readonly after?: readonly CommandStep<Command, State>[];
  /** Its events' correlation and causation; `newStream` as for a command. */
  readonly context?: CommandContext;
}

/** What `handleAlongside` did: the command's outcome, and the other stream as it left it. */
export interface HandledAlongside<Event, State, AlongsideState> extends Handled<Event, State> {
  readonly alongside: Loaded<AlongsideState>;
}

/** Every event is written at this schema version until an upcaster says otherwise. */
export const CURRENT_SCHEMA_VERSION = 1;
/**
 * Attempts to re-decide on a freshly read stream after another process appended first. Generous on
 * purpose: against another instance deciding on its cached state (one round trip per command) a
 * process that must read first (two) loses every race while the other's queue lasts, so a small bound
 * fails commands that would have gone through a moment later.
 */
export const MAX_CONFLICT_RETRIES = 64;
/**
 * Most commands on one stream decided together and written in one append (those queued while the
 * stream's previous append was in flight); the rest wait for the next append.
 */
export const MAX_DECISIONS_PER_APPEND = 64;
/** Aggregates kept warm in memory (least recently used dropped first). */
export const MAX_CACHED_AGGREGATES = 10_000;
/** Events read per page when loading a stream, so a cold load of a long stream never holds it all. */
export const LOAD_PAGE_EVENTS = 10_000;
/** Re-sends of one append whose outcome stayed unknown (lost reply, deadline, dropped connection). */
export const MAX_UNKNOWN_OUTCOME_RETRIES = 4;
/** Wait before the first re-send of an append with an unknown outcome, in ms (doubling after each). */
export const UNKNOWN_OUTCOME_RETRY_BASE_DELAY_MS = 50;

/**
 * Loads an aggregate from its own stream, decides, and appends with the expected revision: the one
 * generic command handler every aggregate uses. Commands on one stream queue in this process and those
 * queued behind an append in flight are decided together and written in the next one; the last
 * known state of each stream is cached with its revision, so a load reads only the events appended
 * since — the cost of a command does not grow with the stream's history. Only a cold load (the first
 * of a stream in this process, or after eviction) folds the stream from its start.
 */
export class AggregateRepository {
  /** Decisions waiting for their stream's append in flight, per stream with one running. */
  private readonly queues = new Map<string, QueuedDecision<unknown, unknown>[]>();
  /** A smaller next batch for a stream whose last one was too big for one append. */
  private readonly splitNext = new Map<string, number>();
  private readonly cache = new Map<string, Loaded<unknown>>();

  /**
   * `upcasters` turn events written under an older schema version into the current shape before a
   * decider sees them, and give each appended event the current version of its type.
   */
  constructor(
    private readonly store: EventStore,
    private readonly upcasters?: UpcasterRegistry,
  ) {}

  async load<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    refresh = true,
  ): Promise<Loaded<State>> {
    const cached = this.cache.get(streamName) as Loaded<State> | undefined;
    if (cached !== undefined && !refresh) return cached;
    // Cold: start from the latest snapshot, if the aggregate has them and one was written.
    const start = cached ?? (decider.snapshot === undefined ? undefined : await readLatestSnapshot(this.store, streamName, decider.snapshot));
    let state = start?.state ?? decider.initialState();
    let revision = start?.revision;
    for (;;) {
      const fromRevision = revision === undefined ? 0n : revision + 1n;
      const events = await this.store.readStream(streamName, { fromRevision, maxCount: LOAD_PAGE_EVENTS });
      for (const event of events) {
        state = decider.evolve(state, toDomainEvent(this.upcasters?.upcast(event) ?? event) as Event);
        revision = event.revision;
      }
      if (events.length < LOAD_PAGE_EVENTS) break;
    }
    const loaded = { state, revision };
    this.remember(streamName, loaded);
    return loaded;
  }

  /**
   * Runs `command` against the stream's current state and appends what the decider returns. A decider
   * that throws appends nothing.
   *
   * The first decision uses the cached state without reading the stream (unless `context.refresh`).
   * That is safe with other writers (other processes on EventStoreDB) because of what each outcome
   * rests on: an append carries the cached revision as its expected revision, so it commits only if
   * nobody wrote since, i.e. only if the state it was decided on was current; otherwise it fails with
   * ConcurrencyError and the command is decided again on the stream as read. A decision that appends
   * nothing (a refusal such as an admission the account cannot fit, or an idempotent no-op) has no such
   * check, so it is never accepted from a cached state: it is decided again on the stream as read, and
   * only that answer stands. Each fresh decision that loses a race is retried, up to MAX_CONFLICT_RETRIES.
   */
  handle<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    command: Command,
    context: CommandContext = {},
  ): Promise<Handled<Event, State>> {
    return this.decideAndAppend(streamName, decider, (state) => decider.decide(command, state), context);
  }

  /**
   * Decides several commands in order, each on the state the ones before it led to, and appends all
   * their events in ONE append: they commit together or not at all (the events stay one per
   * transition). Decided and checked exactly like `handle`; a command that throws appends nothing of
   * any of them. Use it for transitions the same process makes back to back with nothing to wait for
   * between them (reserve then dispatch; complete, pending, then settle): one commit instead of several.
   */
  handleAll<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    steps: readonly CommandStep<Command, State>[],
    context: CommandContext = {},
  ): Promise<Handled<Event, State>> {
    return this.decideAndAppend(streamName, decider, (initial) => decideSteps(decider, initial, steps).events as Event[], context);
  }

  /**
   * Decides `command` on its stream as `handle` does, and writes it in ONE commit with the `before`
   * and `after` steps of another stream (EventStore.appendTogether): all of it or nothing, in the
   * order before, command, after. `command` may be a function of the other stream's state after
   * `before` (a settlement that charges what the other stream settled at). The other stream's steps
   * are decided first, on its cached state (or, `newStream`, its initial state), and checked by the
   * commit's expected revision; when another writer moved it on, they are decided again on it as
   * read. A command refused (thrown) writes nothing of either.
   *
   * A store that cannot commit across streams gets the same appends in sequence: `before` (answered
   * at its commit), the command (at its commit when `after` follows), `after`. A refusal then leaves
   * `before` written, so the caller's next steps must not assume either way.
   */
  async handleAlongside<Command, Event extends DomainEvent, State, OtherCommand, OtherState>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    command: Command | ((other: OtherState) => Command),
    alongside: Alongside<OtherCommand, OtherState>,
    context: CommandContext = {},
  ): Promise<HandledAlongside<Event, State, OtherState>> {
    const commandOn = (other: OtherState): Command => (typeof command === 'function' ? (command as (other: OtherState) => Command)(other) : command);
    const other = alongside.context ?? {};
    const after = alongside.after ?? [];
    if (this.store.appendTogether === undefined) {
      const before =
        alongside.before.length > 0
          ? await this.handleAll(alongside.streamName, alongside.decider, alongside.before, { ...other, acknowledgeOnCommit: true })
          : await this.current(alongside.streamName, alongside.decider, other.newStream === true);
      const handled = await this.handle(streamName, decider, commandOn(before.state), after.length > 0 ? { ...context, acknowledgeOnCommit: true } : context);
      const done = after.length > 0 ? await this.handleAll(alongside.streamName, alongside.decider, after, { ...other, newStream: false }) : before;
      return { ...handled, alongside: { state: done.state, revision: done.revision } };
    }
    for (let conflicts = 0; ; conflicts++) {
      const start = conflicts === 0 ? await this.current(alongside.streamName, alongside.decider, other.newStream === true) : await this.load(alongside.streamName, alongside.decider);
      const before = decideSteps(alongside.decider, start.state, alongside.before);
      const then = decideSteps(alongside.decider, before.state, after);
      const written = before.events.length + then.events.length;
      const companion: Companion = {
        streamName: alongside.streamName,
        expectedRevision: start.revision ?? 'no_stream',
        before: before.events.map((event) => toNewEvent(event, other, this.upcasters?.currentVersion(event.type))),
        after: then.events.map((event) => toNewEvent(event, other, this.upcasters?.currentVersion(event.type))),
        loaded: { state: then.state, revision: written === 0 ? start.revision : (start.revision ?? -1n) + BigInt(written) },
      };
      const decide = (state: State): readonly Event[] => decider.decide(commandOn(before.state), state);
      try {
        const handled = await this.decideAndAppend(streamName, decider, decide, context, written === 0 ? undefined : companion);
        return { ...handled, alongside: companion.loaded as Loaded<OtherState> };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || error.streamName !== alongside.streamName || conflicts >= MAX_CONFLICT_RETRIES) throw error;
        if (error.actual === 'no_stream' || (start.revision !== undefined && error.actual < start.revision)) this.cache.delete(alongside.streamName);
      }
    }
  }

  private decideAndAppend<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    decide: (state: State) => readonly Event[],
    context: CommandContext,
    companion?: Companion,
  ): Promise<Handled<Event, State>> {
    return new Promise((resolve, reject) => {
      const entry = { decide, context, companion, resolve, reject } as QueuedDecision<unknown, unknown>;
      const queue = this.queues.get(streamName);
      if (queue !== undefined) {
        queue.push(entry);
        return;
      }
      this.queues.set(streamName, [entry]);
      void this.drain(streamName, decider);
    });
  }

  /**
   * Runs the stream's queue: each turn takes every decision queued while the last append was in
   * flight (up to MAX_DECISIONS_PER_APPEND) and appends them together. One hot stream (an account
   * that many calls hold on at once) so costs one append per batch instead of one per command. A turn
   * ends at its append's commit: on the embedded store under FULL the next batch is decided while
   * this one waits for its fsync (appendUntilCommitted), and this one's callers hear once it returned,
   * but for those that asked to hear of the commit (CommandContext.acknowledgeOnCommit).
   */
  private async drain<Command, Event extends DomainEvent, State>(streamName: string, decider: AggregateDecider<Command, Event, State>): Promise<void> {
    const queue = this.queues.get(streamName)!;
    while (queue.length > 0) {
      const size = this.splitNext.get(streamName) ?? MAX_DECISIONS_PER_APPEND;
      this.splitNext.delete(streamName);
      const batch = queue.splice(0, size) as unknown as QueuedDecision<Event, State>[];
      try {
        await this.decideBatch(streamName, decider, batch);
      } catch (error) {
        if (error instanceof InvalidEventStoreInputError && batch.length > 1) {
          // Together past the store's bounds on one append (events, bytes): nothing was written, so
          // each half is decided again on its own.
          queue.unshift(...(batch as unknown as QueuedDecision<unknown, unknown>[]));
          this.splitNext.set(streamName, Math.ceil(batch.length / 2));
          continue;
        }
        for (const entry of batch) entry.reject(error);
      }
    }
    this.queues.delete(streamName);
  }

  /**
   * Decides a batch in order, each decision on the state the ones before it led to, and appends all
   * their events in one append with the expected revision of the state the first was decided on.
   * A commit proves that state was current, so every decision in the batch stands, refusals
   * included; a batch that appends nothing (only refusals or no-ops) is decided again on the stream
   * as read, and only that answer stands. A conflict decides the whole batch again on the stream as
   * read, up to MAX_CONFLICT_RETRIES.
   *
   * Decisions with a companion (handleAlongside) that stand bring its events into the same commit
   * (EventStore.appendTogether): every companion's `before` part, then the batch's events, then
   * every companion's `after` part. A companion whose stream moved on fails its own decision alone
   * (removed from `batch`), and the rest are decided again on the same state.
   */
  private async decideBatch<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    batch: QueuedDecision<Event, State>[],
  ): Promise<void> {
    let fresh = batch.some((entry) => entry.context.refresh === true);
    const newStream = batch.every((entry) => entry.context.newStream === true);
    for (let conflicts = 0; ; ) {
      const { state, revision } = fresh ? await this.load(streamName, decider) : await this.current(streamName, decider, newStream);
      const { decided, after } = decideInOrder(decider, state, batch);
      const events = decided.flatMap((outcome, index) =>
        'events' in outcome ? outcome.events.map((event) => toNewEvent(event, batch[index]!.context, this.upcasters?.currentVersion(event.type))) : [],
      );
      const companions = batch.flatMap((entry, index) => (entry.companion !== undefined && 'events' in decided[index]! ? [entry.companion] : []));
      if (events.length === 0 && !fresh) {
        fresh = true;
        continue;
      }
      if (events.length === 0 && companions.length === 0) return settleBatch(batch, decided, revision);
      try {
        const appendStartedAt = performance.now();
        const options: AppendTogetherOptions = {
          ...(batch.every((entry) => entry.context.acknowledgeOnCommit === true) ? { acknowledge: 'committed' } : {}),
          ...(batch.some((entry) => entry.context.durableAtOnce === true) ? { durableAtOnce: true } : {}),
          ...(batch.every((entry) => entry.context.durableOffLoop === true) ? { durableOffLoop: true } : {}),
        };
        const own: StreamAppend | undefined = events.length === 0 ? undefined : { streamName, events, expectedRevision: revision ?? 'no_stream' };
        const { result, durable } = await this.appendBatch(streamName, own, companions, options);
        if (result !== undefined) {
          const next = { state: after, revision: result.nextExpectedRevision };
          this.remember(streamName, next);
          const codec = decider.snapshot;
          if (codec !== undefined && crossesSnapshotPoint(revision, next.revision, codec.everyEvents)) {
            writeSnapshot(this.store, streamName, codec, next.state, next.revision);
          }
        }
        for (const companion of companions) this.remember(companion.streamName, companion.loaded);
        const answer = (only?: (entry: QueuedDecision<Event, State>) => boolean): void => {
          if (appendTimingChannel.hasSubscribers) appendTimingChannel.publish({ durationMs: performance.now() - appendStartedAt });
          settleBatch(batch, decided, revision, only);
        };
        if (durable === undefined) return answer();
        // Committed, not yet durable: the stream's next batch is decided now, on this one's state.
        // A caller that asked to hear of the commit (acknowledgeOnCommit, in a batch another caller
        // made durable) is answered now; the others once the append is durable, or told it failed.
        const atCommit = (entry: QueuedDecision<Event, State>): boolean => entry.context.acknowledgeOnCommit === true;
        settleBatch(batch, decided, revision, atCommit);
        durable.then(
          () => answer((entry) => !atCommit(entry)),
          (error: unknown) => batch.filter((entry) => !atCommit(entry)).forEach((entry) => entry.reject(error)),
        );
        return;
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
        if (error.streamName !== streamName) {
          // A companion's stream moved on: its decision fails alone (handleAlongside decides it again).
          if (!failCompanionsOf(batch, error)) throw error;
          if (batch.length === 0) return;
          continue;
        }
        if (fresh && ++conflicts > MAX_CONFLICT_RETRIES) throw error;
        fresh = true;
        // The stream only grows, so the cached state stays a valid prefix to read on from; a stream
        // found shorter than the cache (rewritten underneath) is read again from its start.
        if (error.actual === 'no_stream' || (revision !== undefined && error.actual < revision)) this.cache.delete(streamName);
      }
    }
  }

  /**
   * Appends a batch's own events on `streamName` (`own`, absent when it decided none) with its
   * companions' parts when it has any, in one commit; returns once committed, with the own part's result.
   */
  private async appendBatch(streamName: string, own: StreamAppend | undefined, companions: readonly Companion[], options: AppendTogetherOptions): Promise<{ result?: AppendResult; durable?: Promise<unknown> }> {
    if (companions.length === 0) {
      const { events, expectedRevision } = own!;
      return this.appendUntilCommitted<AppendResult>(streamName, (onCommitted) => this.store.append(streamName, events, { ...options, expectedRevision, onCommitted }));
    }
    const parts = partsWith(own, companions);
    const { result, durable } = await this.appendUntilCommitted<readonly AppendResult[]>(streamName, (onCommitted) => this.store.appendTogether!(parts, { ...options, onCommitted }));
    return { ...(own === undefined ? {} : { result: result[parts.indexOf(own)]! }), ...(durable === undefined ? {} : { durable }) };
  }

  /**
   * Appends (`send`, given the store's commit callback), and returns once the append is committed:
   * with `durable` (what says it is on disk) when the store told the commit before its
   * acknowledgement (AppendOptions.onCommitted), so the stream's next batch need not wait for this
   * one's fsync; without it once the acknowledgement came.
   */
  private appendUntilCommitted<Result>(streamName: string, send: (onCommitted: (result: Result) => void) => Promise<Result>): Promise<{ result: Result; durable?: Promise<Result> }> {
    return new Promise((resolve, reject) => {
      let committed = false;
      const durable: Promise<Result> = this.appendSettlingUnknownOutcome(streamName, () =>
        send((result) => {
          committed = true;
          resolve({ result, durable });
        }),
      );
      durable.then(
        (result) => committed || resolve({ result }),
        (error: unknown) => committed || reject(error),
      );
    });
  }

  /**
   * Appends, and when the outcome is unknown (the store lost the reply) re-sends the very same events
   * (same ids) with the same exact / `no_stream` revision until the store says what happened: the
   * original result if the first send committed, a ConcurrencyError if it did not and another writer
   * went first (decided again as any conflict), or a commit now. Never new ids: that could write the
   * decision twice. Still unknown after MAX_UNKNOWN_OUTCOME_RETRIES: the cached state is dropped (the
   * next command reads the stream) and the error goes to the caller.
   */
  private async appendSettlingUnknownOutcome<Result>(streamName: string, send: () => Promise<Result>): Promise<Result> {
    for (let retry = 0; ; retry++) {
      try {
        return await send();
      } catch (error) {
        if (!(error instanceof AppendOutcomeUnknownError)) throw error;
        if (retry >= MAX_UNKNOWN_OUTCOME_RETRIES) {
          this.cache.delete(streamName);
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, UNKNOWN_OUTCOME_RETRY_BASE_DELAY_MS * 2 ** retry));
      }
    }
  }

  /** The cached state as it is, or (nothing cached) the initial state of a new stream or the stream as read. */
  private async current<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    newStream: boolean,
  ): Promise<Loaded<State>> {
    const cached = this.cache.get(streamName) as Loaded<State> | undefined;
    if (cached !== undefined) return cached;
    if (newStream) return { state: decider.initialState(), revision: undefined };
    return this.load(streamName, decider);
  }

  /** Drops cached state, e.g. after a test rewrites the store underneath. */
  forget(streamName?: string): void {
    if (streamName === undefined) this.cache.clear();
    else this.cache.delete(streamName);
  }

  private remember(streamName: string, loaded: Loaded<unknown>): void {
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.cache.delete(streamName);
    this.cache.set(streamName, loaded);
    if (this.cache.size > MAX_CACHED_AGGREGATES) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }
}

/** A command waiting for its stream: how it decides, and who hears the outcome. */
interface QueuedDecision<Event, State> {
  readonly decide: (state: State) => readonly Event[];
  readonly context: CommandContext;
  /** Another stream's events written in the same commit when this decision stands (handleAlongside). */
  readonly companion?: Companion;
  readonly resolve: (handled: Handled<Event, State>) => void;
  readonly reject: (error: unknown) => void;
}

/** A companion of a decision (handleAlongside): its stream's parts, decided, and the stream as they leave it. */
interface Companion {
  readonly streamName: string;
  readonly expectedRevision: ExpectedRevision;
  readonly before: readonly NewEvent[];
  readonly after: readonly NewEvent[];
  readonly loaded: Loaded<unknown>;
}

/** Rejects and removes from `batch` the decisions whose companion's stream `conflict` names; false when none has. */
function failCompanionsOf<Event, State>(batch: QueuedDecision<Event, State>[], conflict: ConcurrencyError): boolean {
  const lost = batch.filter((entry) => entry.companion?.streamName === conflict.streamName);
  for (const entry of lost) {
    entry.reject(conflict);
    batch.splice(batch.indexOf(entry), 1);
  }
  return lost.length > 0;
}

/** The parts of one commit: every companion's `before`, the batch's own events, every companion's `after`. */
function partsWith(own: StreamAppend | undefined, companions: readonly Companion[]): StreamAppend[] {
  const parts: StreamAppend[] = [];
  for (const { streamName, expectedRevision, before } of companions) if (before.length > 0) parts.push({ streamName, events: before, expectedRevision });
  if (own !== undefined) parts.push(own);
  for (const { streamName, expectedRevision, before, after } of companions) {
    if (after.length === 0) continue;
    const afterBefore = before.length === 0 ? expectedRevision : (expectedRevision === 'no_stream' ? -1n : (expectedRevision as bigint)) + BigInt(before.length);
    parts.push({ streamName, events: after, expectedRevision: afterBefore });
  }
  return parts;
}

/** Commands decided in order on `initial`, each on the state the ones before it led to: their events and the state after. */
function decideSteps<Command, State>(decider: AggregateDecider<Command, DomainEvent, State>, initial: State, steps: readonly CommandStep<Command, State>[]): { events: DomainEvent[]; state: State } {
  const events: DomainEvent[] = [];
  let state = initial;
  for (const step of steps) {
    const command = typeof step === 'function' ? (step as (state: State) => Command | undefined)(state) : step;
    if (command === undefined) continue;
    for (const event of decider.decide(command, state)) {
      events.push(event);
      state = decider.evolve(state, event);
    }
  }
  return { events, state };
}

/** One decision of a batch: its events and the state after them, or the error it threw. */
type DecidedOutcome<Event, State> = { readonly events: readonly Event[]; readonly state: State } | { readonly error: unknown };

function decideInOrder<Command, Event extends DomainEvent, State>(
  decider: AggregateDecider<Command, Event, State>,
  initial: State,
  batch: readonly QueuedDecision<Event, State>[],
): { readonly decided: DecidedOutcome<Event, State>[]; readonly after: State } {
  let state = initial;
  const decided = batch.map((entry): DecidedOutcome<Event, State> => {
    try {
      const events = entry.decide(state);
      state = events.reduce(decider.evolve, state);
      return { events, state };
    } catch (error) {
      return { error };
    }
  });
  return { decided, after: state };
}

/** Tells each command of a batch (those `only` selects) its outcome, with the stream's revision after its own events. */
function settleBatch<Event, State>(
  batch: readonly QueuedDecision<Event, State>[],
  decided: readonly DecidedOutcome<Event, State>[],
  revision: bigint | undefined,
  only: (entry: QueuedDecision<Event, State>) => boolean = () => true,
): void {
  let after = revision;
  decided.forEach((outcome, index) => {
    const entry = batch[index]!;
    if ('events' in outcome && outcome.events.length > 0) after = (after ?? -1n) + BigInt(outcome.events.length);
    if (!only(entry)) return;
    if ('error' in outcome) entry.reject(outcome.error);
    else entry.resolve({ state: outcome.state, revision: after, events: outcome.events });
  });
}

export function toNewEvent(event: DomainEvent, context: CommandContext = {}, schemaVersion = CURRENT_SCHEMA_VERSION): NewEvent {
  const metadata: EventMetadata = {
    schemaVersion,
    ...(context.correlationId === undefined ? {} : { correlationId: context.correlationId }),
    ...(context.causationId === undefined ? {} : { causationId: context.causationId }),
  };
  // Time-ordered ids append at the end of the store's event-id index instead of dirtying a random page of it.
  return { id: newEventId(), type: event.type, data: event.data, metadata };
}

export function toDomainEvent(event: RecordedEvent): DomainEvent {
  return { type: event.type, data: event.data };
}
