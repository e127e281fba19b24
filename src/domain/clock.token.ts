import type { Clock } from '../runtime';

/** The one clock of the service: admission, conversations and the sweep read time through it. */
export const CLOCK = Symbol('CLOCK');

/** ISO-8601 text of a clock reading, as events carry it. */
export function isoAt(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
