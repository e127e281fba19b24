/**
 * The machine's floor for a durable hold: how long a 4 KiB write and its fsync take on the disk the
 * service's store uses (the system's temporary directory), in milliseconds.
 *
 * Measured two ways, since on this project's machine they differ by 2–3 ×: one write after the
 * other (the floor under load, when the log's fsyncs follow each other closely), and each after a
 * pause of FSYNC_PAUSE_MS with the disk untouched (the floor of a call at low load, whose fsyncs
 * are far apart). The second is what one call alone meets (bench/README.md, "The floor of one call").
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentiles, type Percentiles } from './percentiles';

/** Writes timed one after the other. */
const FSYNC_SAMPLES = 300;
/** Writes timed each after a pause (FSYNC_PAUSE_MS each, so about a second in all). */
const FSYNC_AFTER_PAUSE_SAMPLES = 100;
/**
 * The pause before each write of the second measurement, in ms: past the 5 ms after which this
 * machine's fsyncs were already slower, and shorter than the 50 ms between one call's two fsyncs.
 */
const FSYNC_PAUSE_MS = 10;
/** Bytes per write: one SQLite page. */
const FSYNC_WRITE_BYTES = 4_096;

export interface FsyncFloor {
  /** Each write and fsync right after the one before. */
  readonly backToBack: Percentiles;
  /** Each after FSYNC_PAUSE_MS without touching the disk. */
  readonly afterPause: Percentiles;
  readonly pauseMs: number;
}

export function fsyncFloor(): FsyncFloor {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-fsync-'));
  const file = openSync(join(directory, 'probe'), 'w');
  const page = Buffer.alloc(FSYNC_WRITE_BYTES, 1);
  // A synchronous sleep: the probe runs between measured runs, with nothing else on this thread.
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  let offset = 0;
  const timed = (): number => {
    const started = performance.now();
    writeSync(file, page, 0, page.length, offset);
    fsyncSync(file);
    offset += FSYNC_WRITE_BYTES;
    return performance.now() - started;
  };
  try {
    const backToBack = Array.from({ length: FSYNC_SAMPLES }, timed);
    const afterPause = Array.from({ length: FSYNC_AFTER_PAUSE_SAMPLES }, () => {
      Atomics.wait(sleeper, 0, 0, FSYNC_PAUSE_MS);
      return timed();
    });
    return { backToBack: percentiles(backToBack), afterPause: percentiles(afterPause), pauseMs: FSYNC_PAUSE_MS };
  } finally {
    closeSync(file);
    rmSync(directory, { recursive: true, force: true });
  }
}
