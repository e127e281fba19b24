/**
 * How the gateway benchmark talks to the children it starts (upstream, bare proxy, load generator):
 * each request carries an id and gets one reply with that id; a server child announces its port once,
 * unasked, when it listens. The service and Portkey answer the same request shape through
 * ../http/service-probe.ts.
 */
import type { ServiceUsage } from '../http/service-probe.protocol';

export interface ChildRequest {
  readonly id: number;
  readonly kind: string;
  readonly [field: string]: unknown;
}

export interface ChildReply {
  readonly id: number;
  readonly result: unknown;
  readonly error?: string;
}

export interface ListeningNotice {
  readonly kind: 'listening';
  readonly port: number;
}

/** What the upstream is told before each measured run. */
export interface UpstreamSettings {
  /** How long a call takes: a non-streamed answer comes after it; a stream's deltas are spread over it. */
  readonly delayMs: number;
  /**
   * Each call's delay drawn uniformly from `delayMs ± delayJitterMs`, in ms (0 or absent: every call
   * takes `delayMs`); from a seeded generator restarted by each `configure`, so every peer's run meets
   * the same sequence of delays.
   */
  readonly delayJitterMs?: number;
  /** Text deltas per streamed answer. */
  readonly streamDeltas: number;
  /** The body every caller sends in this run (base64): the upstream counts the ones that arrive altered. */
  readonly expectedBodyBase64: string;
}

/** What the upstream counted since it was last configured. */
export interface UpstreamCounters {
  readonly requests: number;
  readonly streamed: number;
  /** Requests whose body differed from the expected bytes (a peer that re-serialises the JSON). */
  readonly bodiesAltered: number;
  /** Requests that did not carry the upstream's own key (a peer that leaked the caller's). */
  readonly wrongKey: number;
}

/**
 * Serves a child's own requests, and `usage`, which every child answers alike: its CPU and memory
 * (../http/process-usage.ts).
 */
export function serveRequests(
  handle: (request: ChildRequest) => Promise<unknown> | unknown,
  usage: (collectGarbage: boolean) => ServiceUsage,
): void {
  process.on('message', (request: ChildRequest) => {
    Promise.resolve()
      .then(() => (request.kind === 'usage' ? usage(request.collectGarbage === true) : handle(request)))
      .then(
        (result) => process.send?.({ id: request.id, result } satisfies ChildReply),
        (error: unknown) => process.send?.({ id: request.id, result: null, error: String(error) } satisfies ChildReply),
      );
  });
  // The benchmark gone (its channel closed) leaves nothing behind.
  process.on('disconnect', () => process.exit(0));
}
