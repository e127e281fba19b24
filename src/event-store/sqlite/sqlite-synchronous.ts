/**
 * SQLite's `synchronous` setting, as the embedded log, the read models and the answers use it:
 * `NORMAL` in WAL mode survives a process crash, `FULL` also a power loss (an fsync per commit).
 * The log defaults to `FULL` (an acknowledged append is on disk); the read models to `NORMAL`
 * (they are rebuilt from the log).
 */
export type SqliteSynchronous = 'NORMAL' | 'FULL';

/** The embedded log's default: an acknowledged append survives power loss, not only a killed process. */
export const DEFAULT_LOG_SYNCHRONOUS: SqliteSynchronous = 'FULL';
