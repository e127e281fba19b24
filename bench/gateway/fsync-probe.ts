/**
 * The machine's floor for a durable hold: how long a 4 KiB write and its fsync take on the disk the
 * service's store uses (the system's temporary directory), in milliseconds, over FSYNC_SAMPLES writes.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentiles, type Percentiles } from './percentiles';

/** Writes timed, one after the other. */
const FSYNC_SAMPLES = 300;
/** Bytes per write: one SQLite page. */
const FSYNC_WRITE_BYTES = 4_096;

export function fsyncMs(): Percentiles {
  const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-fsync-'));
  const file = openSync(join(directory, 'probe'), 'w');
  const page = Buffer.alloc(FSYNC_WRITE_BYTES, 1);
  const samples: number[] = [];
  try {
    for (let index = 0; index < FSYNC_SAMPLES; index++) {
      const started = performance.now();
      writeSync(file, page, 0, page.length, index * FSYNC_WRITE_BYTES);
      fsyncSync(file);
      samples.push(performance.now() - started);
    }
  } finally {
    closeSync(file);
    rmSync(directory, { recursive: true, force: true });
  }
  return percentiles(samples);
}
