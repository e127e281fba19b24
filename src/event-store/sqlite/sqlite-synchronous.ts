/**
 * SQLite's `synchronous` setting, as the embedded log, the read models and the answers use it:
 * `NORMAL` in WAL mode survives a process crash, `FULL` also a power loss (an fsync per commit).
 */
export type SqliteSynchronous = 'NORMAL' | 'FULL';
