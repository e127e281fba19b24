import type { RebuildProgress } from '../projection-runner';
import type { CliIo } from './cli-io';

/** Width of the drawn bar, in characters. */
export const PROGRESS_BAR_WIDTH_CHARS = 30;

export interface ProgressReporter {
  /** Reports a committed page of a replay. */
  update(progress: RebuildProgress): Promise<void>;
  /** Ends the bar's line (a no-op for plain lines). */
  finish(): Promise<void>;
}

export interface ProgressOptions {
  /** What is progressing, e.g. `rebuild`. */
  readonly label: string;
  /**
   * True when log positions count events (the embedded store numbers them 1, 2, 3…), so the head
   * position is the number of events to replay; EventStoreDB positions are byte offsets, and then only
   * the fraction done is shown.
   */
  readonly positionsCountEvents: boolean;
}

/**
 * Progress of a replay on stderr: on a terminal one line redrawn in place,
 * `rebuild [###########-------------------]  37% 3700/10000 events, 12400 events/s`; otherwise one
 * plain line per page, `rebuild: 3700/10000 events (37%), 12400 events/s`, which reads well in a log.
 */
export function progressReporter(io: CliIo, options: ProgressOptions): ProgressReporter {
  const startedMs = io.now();
  let drawn = false;
  return {
    async update(progress) {
      const text = describe(progress, io.now() - startedMs, options.positionsCountEvents);
      if (io.interactive) {
        drawn = true;
        await io.stderr.write(`\r${options.label} ${bar(fraction(progress))} ${text}\u001b[K`);
      } else {
        await io.stderr.write(`${options.label}: ${text}\n`);
      }
    },
    async finish() {
      if (drawn) await io.stderr.write('\n');
      drawn = false;
    },
  };
}

function describe(progress: RebuildProgress, elapsedMs: number, positionsCountEvents: boolean): string {
  const percent = `${Math.floor(fraction(progress) * 100)}%`;
  const done =
    positionsCountEvents && progress.targetPosition !== undefined
      ? `${progress.eventsDone}/${progress.targetPosition} events`
      : `${progress.eventsDone} events`;
  const rate = elapsedMs > 0 ? `, ${Math.round((progress.eventsDone * 1_000) / elapsedMs)} events/s` : '';
  return `${percent.padStart(4)} ${done}${rate}`;
}

/** Share of the log replayed, from 0 to 1. */
function fraction(progress: RebuildProgress): number {
  const target = progress.targetPosition;
  if (target === undefined || target <= 0n) return 1;
  if (progress.position >= target) return 1;
  // Positions may exceed 2^53 (EventStoreDB); a ratio in thousandths stays exact enough.
  return Number((progress.position * 1_000n) / target) / 1_000;
}

function bar(share: number): string {
  const filled = Math.round(share * PROGRESS_BAR_WIDTH_CHARS);
  return `[${'#'.repeat(filled)}${'-'.repeat(PROGRESS_BAR_WIDTH_CHARS - filled)}]`;
}
