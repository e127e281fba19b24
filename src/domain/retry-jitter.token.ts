/**
 * The source of chance for retry waits (runToolLoop's jitter), in [0, 1): Math.random in the service;
 * the simulator provides a seeded stream so a seed replays the same waits.
 */
export const RETRY_JITTER = Symbol('RETRY_JITTER');
