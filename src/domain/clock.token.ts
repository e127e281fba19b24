import type { Clock } from '../runtime';

/** The one clock of the service: admission, conversations and the sweep read time through it. */
export const CLOCK = Symbol('CLOCK');

let lastMs = Number.NaN;
let lastIso = '';

/**
 * ISO-8601 text of a clock reading, as events carry it. An invocation stamps several events within
 * the same millisecond, so the last conversion is reused while the reading has not moved.
 */
export function isoAt(clock: Clock): string {
  const ms = clock.now();
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
