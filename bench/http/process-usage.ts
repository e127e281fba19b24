/**
 * A benchmark child's own CPU time and memory, as the HTTP and gateway benchmarks read them over
 * IPC (the service through service-probe.ts, the gateway benchmark's own children directly).
 */
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
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return {
    // process.cpuUsage counts every thread of the process: the event loop and any worker.
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
