/**
 * Loaded into the service process by the HTTP benchmarks (`node --require …/service-probe.js
 * dist/src/main.js`), and nowhere else. It answers the benchmark over the IPC channel the benchmark
 * opened: the process's own CPU time and memory, a CPU profile of the measured window, a heap
 * snapshot, the gateway's per-phase trace (../gateway/phase-trace.ts). The service itself is started exactly as `npm start` starts it; the probe only reports.
 */
import cluster from 'node:cluster';
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';
import { PhaseTracer } from '../gateway/phase-trace';
import { processUsage } from './process-usage';
import type { ProbeReply, ProbeRequest } from './service-probe.protocol';

let session: Session | undefined;
const phases = new PhaseTracer();

function post<T>(method: string): Promise<T> {
  return new Promise((resolve, reject) =>
    session!.post(method, (error, result) => (error === null ? resolve(result as T) : reject(error))),
  );
}

async function answer(request: ProbeRequest): Promise<ProbeReply['result']> {
  switch (request.kind) {
    case 'usage':
      return processUsage(request.collectGarbage === true);
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
    case 'phases-start':
      phases.start();
      return null;
    case 'phases-stop':
      return phases.stop();
  }
}

// A service worker of several (LEDGER_WORKERS) inherits this file from its primary, which answers
// for all of them (its usage counts theirs); the IPC channel of a worker is its primary's, not the benchmark's.
if (!cluster.isWorker) listen();

function listen(): void {
  process.on('message', (message: ProbeRequest) => {
    answer(message).then(
      (result) => process.send?.({ id: message.id, result } satisfies ProbeReply),
      (error: unknown) => process.send?.({ id: message.id, result: null, error: String(error) } satisfies ProbeReply),
    );
  });

  // The benchmark gone (its channel closed, even by SIGKILL) stops the service as SIGTERM would.
  process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
