import type { EventStore } from './event-store.port';
import { openEventStoreDb } from './eventstoredb/eventstoredb-event-store';
import { openPostgresEventStore } from './postgres/postgres-event-store';
import { openSqliteEventStore } from './sqlite/sqlite-event-store';
import type { SqliteSynchronous } from './sqlite/sqlite-synchronous';

/** Where the log lives, as `LEDGER_STORE` names it. */
export type StoreLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'eventstoredb'; readonly connectionString: string }
  | { readonly kind: 'postgres'; readonly connectionString: string };

/** The path that keeps an embedded log in memory, thrown away when the process ends. */
export const IN_MEMORY_LOG_PATH = ':memory:';

/**
 * The embedded SQLite log's path, when the log is one (`:memory:` for a throw-away log); undefined for
 * a server's log. What the embedded log alone can do (positions that count events, files beside it,
 * a worker thread reading it) is asked here, never of `kind`.
 */
export function embeddedLogPath(store: StoreLocation): string | undefined {
  return store.kind === 'sqlite' ? store.path : undefined;
}

/** The embedded log's file, when it is one on disk (not `:memory:`). */
export function embeddedLogFile(store: StoreLocation): string | undefined {
  const path = embeddedLogPath(store);
  return path === IN_MEMORY_LOG_PATH ? undefined : path;
}

/** How the service names the log it writes to, for its start-up line (no connection string: it may carry a password). */
export function storeName(store: StoreLocation): string {
  return store.kind === 'sqlite' ? `sqlite:${store.path}` : store.kind === 'postgres' ? 'PostgreSQL' : 'EventStoreDB';
}

/** Thrown for a `LEDGER_STORE` value that names no store this build can open. */
export class InvalidStoreUrlError extends Error {
  override readonly name = 'InvalidStoreUrlError';
}

const ACCEPTED_FORMS =
  'sqlite:<path>, a PostgreSQL URL (postgres://… or postgresql://…), or a KurrentDB connection string: ' +
  'esdb://…, kurrentdb://…, kurrent://… or kdb://… (each also +discover); the KurrentDB connection uses TLS unless it says ?tls=false';
const POSTGRES_SCHEME = /^(postgres|postgresql):\/\/(.*)$/i;
const EVENTSTOREDB_SCHEME = /^(esdb|kurrentdb|kurrent|kdb)(\+discover)?:\/\/(.*)$/i;

/**
 * Parses a `LEDGER_STORE` value:
 * - `sqlite:<path>` — the embedded store; `sqlite://<path>` is read the same way (so `sqlite:///abs`
 *   is `/abs`), and `sqlite::memory:` is a throw-away in-memory store;
 * - `postgres://…` or `postgresql://…` — PostgreSQL (a libpq connection URL, passed on as given);
 * - `esdb://`, `kurrentdb://`, `kurrent://`, `kdb://`, each also with `+discover` — a
 *   KurrentDB/EventStoreDB connection string, passed on as given (TLS unless it says `?tls=false`).
 * Anything else throws InvalidStoreUrlError naming LEDGER_STORE. The message repeats only the
 * scheme, since a connection string can carry a password.
 */
export function parseStoreUrl(value: string): StoreLocation {
  const trimmed = typeof value === 'string' ? value.trim() : '';
  if (trimmed.length === 0) throw new InvalidStoreUrlError(`LEDGER_STORE is empty; expected ${ACCEPTED_FORMS}`);
  if (/^sqlite:/i.test(trimmed)) {
    let path = trimmed.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path.length === 0) throw new InvalidStoreUrlError('LEDGER_STORE: "sqlite:" needs a file path, e.g. sqlite:./var/ledger.sqlite');
    return { kind: 'sqlite', path };
  }
  const postgres = POSTGRES_SCHEME.exec(trimmed);
  if (postgres) {
    if ((postgres[2] ?? '').replace(/^[^@/]*@/, '').split(/[/?]/, 1)[0]?.length === 0 && !/[?&]host=/i.test(trimmed)) {
      throw new InvalidStoreUrlError(`LEDGER_STORE: the ${postgres[1]}:// URL names no host`);
    }
    return { kind: 'postgres', connectionString: trimmed };
  }
  const eventStoreDb = EVENTSTOREDB_SCHEME.exec(trimmed);
  if (eventStoreDb) {
    const rest = eventStoreDb[3] ?? '';
    const host = rest.split(/[/?]/, 1)[0]?.replace(/^[^@]*@/, '') ?? '';
    if (host.length === 0) {
      throw new InvalidStoreUrlError(`LEDGER_STORE: the ${eventStoreDb[1]}${eventStoreDb[2] ?? ''}:// connection string names no host`);
    }
    return { kind: 'eventstoredb', connectionString: trimmed };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed)?.[1];
  const got = scheme === undefined ? 'a value with no scheme' : `the scheme "${scheme}:"`;
  throw new InvalidStoreUrlError(`LEDGER_STORE: unsupported store URL (${got}); expected ${ACCEPTED_FORMS}`);
}

export interface OpenEventStoreOptions {
  /** Durability of the embedded store (ignored for EventStoreDB). Default 'FULL' (DEFAULT_LOG_SYNCHRONOUS). */
  readonly synchronous?: SqliteSynchronous;
  /** See SqliteEventStoreOptions.eagerCommitsPerTurn (ignored for EventStoreDB). */
  readonly eagerCommitsPerTurn?: number;
  /** See PostgresEventStoreOptions.allowAsyncCommit (PostgreSQL only; LEDGER_POSTGRES_ALLOW_ASYNC_COMMIT). */
  readonly allowAsyncCommit?: boolean;
}

/** Opens the store a `LEDGER_STORE` value (or an already parsed location) names. */
export async function openEventStore(
  url: string | StoreLocation,
  options: OpenEventStoreOptions = {},
): Promise<EventStore> {
  const location = typeof url === 'string' ? parseStoreUrl(url) : url;
  switch (location.kind) {
    case 'sqlite':
      return openSqliteEventStore({
        path: location.path,
        synchronous: options.synchronous,
        ...(options.eagerCommitsPerTurn === undefined ? {} : { eagerCommitsPerTurn: options.eagerCommitsPerTurn }),
      });
    case 'eventstoredb':
      return openEventStoreDb(location.connectionString);
    case 'postgres':
      return openPostgresEventStore({ connectionString: location.connectionString, allowAsyncCommit: options.allowAsyncCommit === true });
  }
}
