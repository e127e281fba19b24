import { readdirSync, readFileSync } from 'node:fs';

/** A thread of this process's nice value, from /proc (Linux, where CI runs): field 19 of its stat line. */
export function niceOfThread(thread: string): number {
  const stat = readFileSync(`/proc/self/task/${thread}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** The nice value of each thread of this process. */
export function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').map(niceOfThread);
}

/** The main thread's nice value (its thread id is the process's). */
export function mainThreadNice(): number {
  return niceOfThread(String(process.pid));
}
