import type { RecordedEvent } from '../../../src/event-store/event-store.port';
import type { Projection, PutOptions, ReadModelTx } from '../../../src/projection-runner';

interface StoredEntry {
  readonly json: string;
  readonly indexKey: string | undefined;
}

/**
 * A ReadModelTx over a Map, for projection unit tests. Documents go through JSON on the way in (as
 * the SQLite store serialises them) and come out deeply frozen, so a projection that mutates what
 * `get` returned fails loudly instead of corrupting its read model.
 */
export class InMemoryReadModelTx implements ReadModelTx {
  private readonly entries = new Map<string, StoredEntry>();

  get<T = unknown>(collection: string, id: string): T | undefined {
    const entry = this.entries.get(key(collection, id));
    return entry === undefined ? undefined : deepFreeze(JSON.parse(entry.json) as T);
  }

  put(collection: string, id: string, document: unknown, options?: PutOptions): void {
    const json = JSON.stringify(document);
    if (json === undefined) throw new Error(`${collection}/${id}: not a JSON document`);
    this.entries.set(key(collection, id), { json, indexKey: options?.indexKey });
  }

  delete(collection: string, id: string): void {
    this.entries.delete(key(collection, id));
  }

  /** The index key the document was last written with. */
  indexKeyOf(collection: string, id: string): string | undefined {
    return this.entries.get(key(collection, id))?.indexKey;
  }

  /** Ids of a collection's documents, sorted. */
  ids(collection: string): string[] {
    const prefix = `${collection}\u0000`;
    return [...this.entries.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)).sort();
  }

  /** Every document as JSON text, by `collection/id`, for comparing two replays. */
  snapshot(): Record<string, string> {
    return Object.fromEntries([...this.entries].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k.replace('\u0000', '/'), v.json]));
  }
}

/** Feeds the events a projection handles to it, as the runner would. */
export function project(projection: Projection, events: readonly RecordedEvent[], tx = new InMemoryReadModelTx()): InMemoryReadModelTx {
  const handles = new Set<string>(projection.handles);
  for (const event of events) if (handles.has(event.type)) projection.apply(event, tx);
  return tx;
}

function key(collection: string, id: string): string {
  return `${collection}\u0000${id}`;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
