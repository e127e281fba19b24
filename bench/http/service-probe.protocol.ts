import type { PhaseTrace } from '../gateway/phase-trace';

/** What the HTTP benchmarks ask the service's probe (service-probe.ts), and what it answers. */
export type ProbeRequest =
  | { readonly id: number; readonly kind: 'usage'; readonly collectGarbage?: boolean }
  | { readonly id: number; readonly kind: 'profile-start' }
  | { readonly id: number; readonly kind: 'profile-stop'; readonly path: string }
  | { readonly id: number; readonly kind: 'heap-snapshot'; readonly path: string }
  | { readonly id: number; readonly kind: 'phases-start' }
  | { readonly id: number; readonly kind: 'phases-stop' };

export interface ProbeReply {
  readonly id: number;
  readonly result: ServiceUsage | PhaseTrace | string | null;
  readonly error?: string;
}

/** The service process's own CPU time (all threads) and memory at one moment. */
export interface ServiceUsage {
  readonly cpuMicros: number;
  /** The same split into user and system (kernel) time: sockets and pipes show as system time. */
  readonly userCpuMicros: number;
  readonly systemCpuMicros: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly heapTotalBytes: number;
  readonly externalBytes: number;
  readonly arrayBuffersBytes: number;
  /** The resident set by kind (Linux only, else 0): anonymous memory (heaps, malloc), file pages, shared memory. */
  readonly rssAnonBytes: number;
  readonly rssFileBytes: number;
  readonly rssShmemBytes: number;
  /** True when the heap figures were taken right after a full collection (service run with --expose-gc). */
  readonly afterGc: boolean;
}
