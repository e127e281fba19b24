import { randomUUID } from 'node:crypto';
import { ConcurrencyError, EventMetadata, EventStore, NewEvent, RecordedEvent } from '../event-store/event-store.port';
import { KeyedLock } from './keyed-lock';

/** A domain event as deciders produce it: plain JSON data, no store fields. */
export interface DomainEvent {
  readonly type: string;
  readonly data: unknown;
}

/** The three pure functions of an aggregate (STYLE.md, Emmett's deciders). */
export interface AggregateDecider<Command, Event extends DomainEvent, State> {
  decide(command: Command, state: State): readonly Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

export interface Loaded<State> {
  readonly state: State;
  /** Revision of the last event folded into `state`; undefined when the stream does not exist. */
  readonly revision: bigint | undefined;
}

export interface Handled<Event, State> extends Loaded<State> {
  /** What this command appended (empty when the decider decided nothing needed to happen). */
  readonly events: readonly Event[];
}

export interface CommandContext {
  readonly correlationId?: string;
  readonly causationId?: string;
  /**
   * Read the stream for events appended since the cached revision before deciding (default true).
   * A caller that owns the stream for the duration of a flow (an invocation it is running) passes false:
   * the expected revision still catches any other writer, and the command is then decided again.
   */
  readonly refresh?: boolean;
}

/** Every event is written at this schema version until an upcaster says otherwise. */
export const CURRENT_SCHEMA_VERSION = 1;
/** Attempts to re-decide after another process appended first. */
export const MAX_CONFLICT_RETRIES = 8;
/** Aggregates kept warm in memory (least recently used dropped first). */
export const MAX_CACHED_AGGREGATES = 10_000;

/**
 * Loads an aggregate from its own stream, decides, and appends with the expected revision: the one
 * generic command handler of STYLE.md. Streams are serialised per name in this process, and the last
 * known state of each stream is cached with its revision, so a load reads only the events appended
 * since — the cost of a command does not grow with the stream's history.
 */
export class AggregateRepository {
  private readonly lock = new KeyedLock();
  private readonly cache = new Map<string, Loaded<unknown>>();

  constructor(private readonly store: EventStore) {}

  async load<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    refresh = true,
  ): Promise<Loaded<State>> {
    const cached = this.cache.get(streamName) as Loaded<State> | undefined;
    if (cached !== undefined && !refresh) return cached;
    let state = cached?.state ?? decider.initialState();
    let revision = cached?.revision;
    const fromRevision = revision === undefined ? 0n : revision + 1n;
    const events = await this.store.readStream(streamName, { fromRevision });
    for (const event of events) {
      state = decider.evolve(state, toDomainEvent(event) as Event);
      revision = event.revision;
    }
    const loaded = { state, revision };
    this.remember(streamName, loaded);
    return loaded;
  }

  /**
   * Runs `command` against the stream's current state and appends what the decider returns. A decider
   * that throws appends nothing. On a concurrent append from another process the command is decided
   * again against the fresh state, up to MAX_CONFLICT_RETRIES times.
   */
  async handle<Command, Event extends DomainEvent, State>(
    streamName: string,
    decider: AggregateDecider<Command, Event, State>,
    command: Command,
    context: CommandContext = {},
  ): Promise<Handled<Event, State>> {
    return this.lock.run(streamName, async () => {
      for (let attempt = 0; ; attempt++) {
        const { state, revision } = await this.load(streamName, decider, attempt > 0 || context.refresh !== false);
        const events = decider.decide(command, state);
        if (events.length === 0) return { state, revision, events };
        try {
          const result = await this.store.append(streamName, events.map((event) => toNewEvent(event, context)), {
            expectedRevision: revision ?? 'no_stream',
          });
          const next = { state: events.reduce(decider.evolve, state), revision: result.nextExpectedRevision };
          this.remember(streamName, next);
          return { ...next, events };
        } catch (error) {
          if (!(error instanceof ConcurrencyError) || attempt >= MAX_CONFLICT_RETRIES) throw error;
          this.cache.delete(streamName);
        }
      }
    });
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

export function toNewEvent(event: DomainEvent, context: CommandContext = {}): NewEvent {
  const metadata: EventMetadata = {
    schemaVersion: CURRENT_SCHEMA_VERSION,
    ...(context.correlationId === undefined ? {} : { correlationId: context.correlationId }),
    ...(context.causationId === undefined ? {} : { causationId: context.causationId }),
  };
  return { id: randomUUID(), type: event.type, data: event.data, metadata };
}

export function toDomainEvent(event: RecordedEvent): DomainEvent {
  return { type: event.type, data: event.data };
}
