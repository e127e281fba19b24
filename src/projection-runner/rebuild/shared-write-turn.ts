import type { WriteTurn } from './projection-group-replay';

/**
 * Longest wait for the write turn, in milliseconds. A turn lasts one commit (a page of documents and a
 * WAL checkpoint at worst, well under a second); a wait this long means the holder is gone.
 */
export const MAX_WRITE_TURN_WAIT_MS = 120_000;

/** Int32 cells of the shared buffer. */
const TURN_CELL = 0;
const STOP_CELL = 1;
const CELLS = 2;

/**
 * What the threads of one parallel rebuild share: a mutex that lets one of them commit at a time,
 * and a stop flag. SQLite would serialise the commits anyway (BEGIN IMMEDIATE waits up to its busy
 * timeout), but its busy handler sleeps in growing steps and so wakes late; a thread waiting here is
 * woken the moment the turn is released.
 */
export class SharedRebuildState implements WriteTurn {
  private readonly cells: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(CELLS * Int32Array.BYTES_PER_ELEMENT)) {
    this.cells = new Int32Array(buffer);
  }

  acquire(): void {
    const deadline = Date.now() + MAX_WRITE_TURN_WAIT_MS;
    while (Atomics.compareExchange(this.cells, TURN_CELL, 0, 1) !== 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`Waited ${MAX_WRITE_TURN_WAIT_MS} ms for the read-model write turn`);
      Atomics.wait(this.cells, TURN_CELL, 1, left);
    }
  }

  release(): void {
    Atomics.store(this.cells, TURN_CELL, 0);
    Atomics.notify(this.cells, TURN_CELL, 1);
  }

  /** Asks every thread to stop after its current page. */
  stop(): void {
    Atomics.store(this.cells, STOP_CELL, 1);
  }

  get stopped(): boolean {
    return Atomics.load(this.cells, STOP_CELL) === 1;
  }
}
