import type {
  AppendOptions,
  AppendResult,
  EventStore,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeOptions,
  Subscription,
  SubscriptionHandler,
} from './event-store.port';

/**
 * Upcasting: how an event written under an old shape is read as the current one.
 *
 * The log is immutable, so an event type whose data changes shape keeps its old events as they were
 * written, each stamped with `metadata.schemaVersion`. To change a shape:
 *   1. write new events with `schemaVersion: n + 1` (the registry's `currentVersion(type)` tells
 *      writers which version is current);
 *   2. register one upcaster for `(type, n)` that turns version-`n` data into version-`n + 1` data;
 *   3. read through `withUpcasting(store, registry)`, so deciders and projections only ever see the
 *      current version.
 * Upcasters chain (1 → 2 → 3), run on read only, must be pure, and never write back to the log.
 */

/** Turns the data of a version-`fromVersion` event into the data of version `fromVersion + 1`. */
export type Upcaster = (data: unknown, event: RecordedEvent) => unknown;

/** Thrown when registering a second upcaster for the same step, or a step that is not a positive integer. */
export class UpcasterRegistrationError extends Error {
  override readonly name = 'UpcasterRegistrationError';
}

export class UpcasterRegistry {
  private readonly steps = new Map<string, Map<number, Upcaster>>();

  /** Registers the step from `fromVersion` to `fromVersion + 1` for events of `type`. */
  register(type: string, fromVersion: number, upcast: Upcaster): this {
    if (!Number.isInteger(fromVersion) || fromVersion < 1) {
      throw new UpcasterRegistrationError(`fromVersion of "${type}" must be a positive integer, got ${fromVersion}`);
    }
    const byVersion = this.steps.get(type) ?? new Map<number, Upcaster>();
    if (byVersion.has(fromVersion)) {
      throw new UpcasterRegistrationError(`"${type}" already has an upcaster from version ${fromVersion}`);
    }
    byVersion.set(fromVersion, upcast);
    this.steps.set(type, byVersion);
    return this;
  }

  /** The version new events of `type` should be written with: one past the last registered step, else 1. */
  currentVersion(type: string): number {
    const byVersion = this.steps.get(type);
    return byVersion === undefined ? 1 : Math.max(...byVersion.keys()) + 1;
  }

  /**
   * The event as the current version of its type. Returns the same object when no step applies; each
   * applied step raises `schemaVersion` by one, so the chain ends after at most one step per registration.
   */
  upcast(event: RecordedEvent): RecordedEvent {
    const byVersion = this.steps.get(event.type);
    if (byVersion === undefined) return event;
    let current = event;
    for (let step = byVersion.get(current.metadata.schemaVersion); step !== undefined; step = byVersion.get(current.metadata.schemaVersion)) {
      current = {
        ...current,
        data: step(current.data, current),
        metadata: { ...current.metadata, schemaVersion: current.metadata.schemaVersion + 1 },
      };
    }
    return current;
  }
}

/** The store, with every read (streams, `$all`, subscriptions) upcast through the registry. Writes pass through. */
export function withUpcasting(store: EventStore, registry: UpcasterRegistry): EventStore {
  const upcastAll = (events: RecordedEvent[]): RecordedEvent[] => events.map((event) => registry.upcast(event));
  return {
    append: (streamName: string, events: readonly NewEvent[], options: AppendOptions): Promise<AppendResult> =>
      store.append(streamName, events, options),
    readStream: async (streamName: string, options?: ReadStreamOptions) => upcastAll(await store.readStream(streamName, options)),
    streamRevision: (streamName: string) => store.streamRevision(streamName),
    readAll: async (options?: ReadAllOptions) => upcastAll(await store.readAll(options)),
    subscribeToAll: (handler: SubscriptionHandler, options?: SubscribeOptions): Subscription =>
      store.subscribeToAll((event) => handler(registry.upcast(event)), options),
    headPosition: () => store.headPosition(),
    close: () => store.close(),
  };
}
