import type { ProjectionsThread, TokenGrant } from '../config/ledger.config';
import type { SqliteSynchronous } from '../event-store/sqlite/sqlite-synchronous';

/**
 * LedgerModule's options. Each one left out falls back to its environment variable, then to the
 * service's default, exactly as the standalone service reads them.
 */
export interface LedgerModuleOptions {
  /**
   * The event log: `sqlite:<path>` (the embedded store; `sqlite::memory:` for a throw-away one) or an
   * `esdb://…` / `kurrentdb://…` connection string. `LEDGER_STORE`, default `sqlite:./var/ledger.sqlite`.
   */
  readonly store?: string;
  /**
   * The SQLite file of the read models. `LEDGER_READ_STORE`, default beside the log
   * (`var/ledger.sqlite` → `var/ledger.read.sqlite`), or `./var/read-models.sqlite` with EventStoreDB.
   */
  readonly readStore?: string;
  /**
   * The SQLite file of the answers kept for keyed repeats (only features that declare
   * `answerRetentionMs` keep any). `LEDGER_ANSWER_STORE`, default beside the log
   * (`var/ledger.sqlite` → `var/ledger.answers.sqlite`), or `./var/answers.sqlite` with EventStoreDB.
   */
  readonly answerStore?: string;
  /**
   * Durability of the embedded store. `LEDGER_SQLITE_SYNCHRONOUS`, default `FULL`: an acknowledged
   * append survives power loss. `NORMAL` skips the fsync: it survives a killed process, but an
   * operating-system crash or power loss may lose the latest acknowledged appends.
   */
  readonly synchronous?: SqliteSynchronous;
  /**
   * Where the projections run. `LEDGER_PROJECTIONS_THREAD`, default `worker` for the embedded store in
   * a file, `main` otherwise.
   */
  readonly projectionsThread?: ProjectionsThread;
  /** The Anthropic account. `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`; without a key, Anthropic routings fail as `unauthorized`. */
  readonly anthropic?: { readonly apiKey?: string; readonly baseURL?: string };
  /**
   * Recovery on start and on a period: every instance settles what a crash left in flight
   * (docs/lifecycle.md "Recovery"). `intervalMs`: `LEDGER_RECOVERY_INTERVAL_MS`, default 60,000
   * (1,000–86,400,000); `staleAfterMs`: `LEDGER_RECOVERY_STALE_AFTER_MS`, default 300,000
   * (1,000–604,800,000). `false` (or an interval of 0) turns it off: only the manual sweep then settles.
   */
  readonly recovery?: false | { readonly intervalMs?: number; readonly staleAfterMs?: number };
  /** Where the fallbacks are read from; `process.env` by default. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The HTTP API when mounted: its route prefix and its bearer tokens. */
export interface LedgerHttpOptions {
  /** A path every route of the API is mounted under (e.g. `ledger` → `/ledger/v1/invocations`); none by default. */
  readonly prefix?: string;
  /** Bearer token → grant. `LEDGER_TOKENS` when left out. */
  readonly tokens?: Readonly<Record<string, TokenGrant>>;
}

/**
 * What LedgerModule mounts. Given beside `forRoot`'s options or `forRootAsync`'s factory (never from
 * it), because they decide the module graph before any provider exists.
 */
export interface LedgerModuleExtras {
  /** The HTTP API of the service, or `false` (the default when embedded): the product keeps its own transport. */
  readonly http?: false | LedgerHttpOptions;
  /**
   * The demo: registers `demo.arithmetic` and, with `http`, seeds its catalog, organization and tokens
   * and prints them. `false` by default; the service turns it on with `LEDGER_DEMO=1`.
   */
  readonly demo?: boolean;
}
