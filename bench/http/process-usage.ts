/**
 * A benchmark child's own CPU time and memory, as the HTTP and gateway benchmarks read them over
 * IPC (the service through service-probe.ts, the gateway benchmark's own children directly).
 */
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import type { ServiceUsage } from './service-probe.protocol';

/** The resident set split by kind (Linux /proc/self/status), in bytes; zeros where it cannot be read. */
function residentByKind(): Pick<ServiceUsage, 'rssAnonBytes' | 'rssFileBytes' | 'rssShmemBytes'> {
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    // Not Linux: the split is unknown.
  }
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rssAnonBytes: kib('RssAnon'), rssFileBytes: kib('RssFile'), rssShmemBytes: kib('RssShmem') };
}

export function processUsage(collectGarbage: boolean): ServiceUsage {
  // Only under --expose-gc (the soaks): the heap after a full collection is what the process retains.
  const gc = (globalThis as { gc?: () => void }).gc;
  if (collectGarbage && gc !== undefined) gc();
  const own = process.cpuUsage();
  // A primary of several service workers (LEDGER_WORKERS) counts theirs with its own.
  const workers = clusterWorkersCpuMicros();
  const cpu = { user: own.user + workers.user, system: own.system + workers.system };
  const memory = process.memoryUsage();
  return {
    // process.cpuUsage counts every thread of the process: the event loop and any worker thread.
    cpuMicros: cpu.user + cpu.system,
    userCpuMicros: cpu.user,
    systemCpuMicros: cpu.system,
    rssBytes: memory.rss,
    heapUsedBytes: memory.heapUsed,
    heapTotalBytes: memory.heapTotal,
    externalBytes: memory.external,
    arrayBuffersBytes: memory.arrayBuffers,
    ...residentByKind(),
    afterGc: collectGarbage && gc !== undefined,
  };
}

/** Clock ticks per second of /proc/<pid>/stat's times (Linux's USER_HZ, 100 on every common build). */
const PROC_TICKS_PER_SECOND = 100;

/**
 * The CPU time of the cluster workers this process forked (LEDGER_WORKERS), user and system, in
 * microseconds, from /proc (zeros where it cannot be read, or with no workers). A worker replaced
 * during a run takes the time of the one it replaced with it.
 */
export function clusterWorkersCpuMicros(): { readonly user: number; readonly system: number } {
  let user = 0;
  let system = 0;
  for (const worker of Object.values(cluster.workers ?? {})) {
    const pid = worker?.process.pid;
    if (pid === undefined) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After "pid (name) ": state, ppid, …; utime and stime are the 14th and 15th fields of the line.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      user += (Number(fields[11]) * 1_000_000) / PROC_TICKS_PER_SECOND;
      system += (Number(fields[12]) * 1_000_000) / PROC_TICKS_PER_SECOND;
    } catch {
      // Gone, or not Linux.
    }
  }
  return { user, system };
}
