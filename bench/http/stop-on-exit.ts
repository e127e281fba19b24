/**
 * Every process a benchmark starts is ended when the benchmark's own process exits, however it
 * exits (a thrown error, process.exit, Ctrl-C), and its scratch folders are removed, so a failed or
 * interrupted run leaves no server and no store behind. A child stopped normally leaves the set when
 * it exits.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

const running = new Set<ChildProcess>();
const scratch = new Set<string>();
let installed = false;

function cleanUp(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
  for (const directory of scratch) rmSync(directory, { recursive: true, force: true });
  scratch.clear();
}

function install(): void {
  if (installed) return;
  installed = true;
  process.once('exit', cleanUp);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      cleanUp();
      process.exit(130);
    });
  }
}

export function stopOnExit(child: ChildProcess): void {
  install();
  running.add(child);
  child.once('exit', () => running.delete(child));
}

/** Removes `directory` when the benchmark exits, unless keepOnExit is called for it first. */
export function removeOnExit(directory: string): void {
  install();
  scratch.add(directory);
}

export function keepOnExit(directory: string): void {
  scratch.delete(directory);
}
