/**
 * What a failed run prints: the seed and the command that replays it, the broken invariant, and the
 * shortest history that shows it — only the streams involved, merged in log order, an account stream
 * narrowed to its credit entries and the events naming the invocations involved.
 */
import type { EventStore, RecordedEvent } from '../event-store/event-store.port';
import type { Violation } from './log-audit';
import { MAX_PRINTED_HISTORY_EVENTS } from './simulation.bounds';

export interface ViolationContext {
  readonly seed: number;
  readonly invocations: number;
  /** Options of `npm run simulate` the run used beside the seed and the count, e.g. `--every-boundary`. */
  readonly flags: readonly string[];
  /** The log, read through a handle that outlived the process. */
  readonly store: EventStore;
}

export async function formatViolation(violation: Violation, context: ViolationContext): Promise<string> {
  const focus = new Set(violation.invocations);
  const events: RecordedEvent[] = [];
  for (const stream of new Set(violation.streams)) {
    for (const event of await context.store.readStream(stream)) {
      if (stream.startsWith('account-') && focus.size > 0 && !namesFocus(event, focus)) continue;
      events.push(event);
    }
  }
  events.sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0));
  const shown = events.slice(-MAX_PRINTED_HISTORY_EVENTS);
  const lines = [
    `SIMULATION FAILED: ${violation.invariant}`,
    `seed ${context.seed}; replay with: npm run simulate -- ${['--seed', context.seed, '--invocations', context.invocations, ...context.flags].join(' ')}`,
    `what: ${violation.detail}`,
    violation.streams.length === 0
      ? 'history: no stream is involved (the run itself broke down; replay the seed to look closer)'
      : `history: ${events.length} events of ${[...new Set(violation.streams)].join(', ')}${focus.size > 0 ? ` (account events naming ${[...focus].join(', ')} and credit entries)` : ''}` +
        (shown.length < events.length ? `; the last ${shown.length} shown` : ''),
    ...shown.map((event) => `  #${event.position} ${event.streamName}@${event.revision} ${event.type} ${JSON.stringify(event.data)}`),
  ];
  return lines.join('\n');
}

/** Account events kept in a narrowed history: grants, adjustments, settings, and holds of the invocations involved. */
function namesFocus(event: RecordedEvent, focus: ReadonlySet<string>): boolean {
  const invocationId = (event.data as { invocationId?: unknown } | null)?.invocationId;
  return typeof invocationId !== 'string' || focus.has(invocationId);
}
