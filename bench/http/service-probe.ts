/**
 * Loaded into the service process by the HTTP benchmarks (`node --require …/service-probe.js
 * dist/src/main.js`), and nowhere else. It answers the benchmark over the IPC channel the benchmark
 * opened: the process's own CPU time and memory, a CPU profile of the measured window, a heap
 * snapshot. The service itself is started exactly as `npm start` starts it; the probe only reports.
 */
import { Session } from 'node:inspector';
import { readFileSync, writeFileSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';
import type { ProbeReply, ProbeRequest, ServiceUsage } from './service-probe.protocol';

let session: Session | undefined;

function post<T>(method: string): Promise<T> {
  return new Promise((resolve, reject) =>
    session!.post(method, (error, result) => (error === null ? resolve(result as T) : reject(error))),
  );
}

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

function usage(collectGarbage: boolean): ServiceUsage {
  // Only under --expose-gc (the soak): the heap after a full collection is what the process retains.
  const gc = (globalThis as { gc?: () => void }).gc;
  if (collectGarbage && gc !== undefined) gc();
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  return {
    // process.cpuUsage counts every thread of the process: the event loop and the projection worker.
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

async function answer(request: ProbeRequest): Promise<ProbeReply['result']> {
  switch (request.kind) {
    case 'usage':
      return usage(request.collectGarbage === true);
    case 'profile-start':
      session ??= new Session();
      session.connect();
      await post('Profiler.enable');
      await post('Profiler.start');
      return null;
    case 'profile-stop': {
      const { profile } = await post<{ profile: unknown }>('Profiler.stop');
      session!.disconnect();
      writeFileSync(request.path, JSON.stringify(profile));
      return null;
    }
    case 'heap-snapshot':
      return writeHeapSnapshot(request.path);
  }
}

process.on('message', (message: ProbeRequest) => {
  answer(message).then(
    (result) => process.send?.({ id: message.id, result } satisfies ProbeReply),
    (error: unknown) => process.send?.({ id: message.id, result: null, error: String(error) } satisfies ProbeReply),
  );
});
