/**
 * The gateway benchmark's load generator, in a process of its own so its CPU is neither a peer's nor
 * the upstream's (and is reported). `run` drives one target with `concurrency` closed loops over an
 * undici pool of as many keep-alive connections: each loop sends its next call when the previous
 * answer has been read to its end. It counts a call only when it ended as expected (200 and a usage
 * block, or a stream through message_stop), and returns the latency percentiles and, for streams,
 * each stamped event's trip from the upstream (messages-wire.ts).
 */
import { Pool } from 'undici';
import { processUsage } from '../http/process-usage';
import { serveRequests, type ChildRequest } from './child.protocol';
import { percentiles, round, type Percentiles } from './percentiles';
import { StreamReader } from './messages-wire';
import { loopHeaders } from './loop-keys';

/** Bounds of one run, whatever it is asked: no run sends more calls or keeps more event samples. */
const MAX_CALLS_PER_RUN = 2_000_000;
const MAX_EVENT_SAMPLES = 4_000_000;
const CALL_TIMEOUT_MS = 60_000;

export interface LoadSpec {
  readonly origin: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The `x-api-key` of each loop in turn, when the calls are spread over organizations (loop-keys.ts). */
  readonly apiKeys?: readonly string[];
  readonly bodyBase64: string;
  readonly stream: boolean;
  readonly concurrency: number;
  readonly durationMs: number;
  readonly maxCalls: number;
}

export interface LoadResult {
  readonly seconds: number;
  /** Calls that ended as expected. */
  readonly completed: number;
  readonly callsPerSecond: number;
  /** Answers that were not 200, by status, and calls that ended otherwise (errors, a stream cut short). */
  readonly statuses: Readonly<Record<string, number>>;
  readonly failed: number;
  /** The first failing answer's status and opening bytes, to say what went wrong. */
  readonly firstFailure?: string;
  /** From sending the request to the answer's last byte, completed calls only, in milliseconds. */
  readonly latencyMs: Percentiles;
  /** Stamped stream events: from the upstream's write to the client's read, in microseconds. */
  readonly eventTripMicros?: Percentiles;
  /** SSE events read per completed stream. */
  readonly eventsPerStream?: number;
  /** The load generator's own CPU over the run, in milliseconds per completed call. */
  readonly clientCpuMsPerCall: number;
}

async function readAnswer(
  spec: LoadSpec,
  body: AsyncIterable<Buffer> & { text(): Promise<string> },
  trips: number[],
): Promise<{ ok: boolean; excerpt: string; events: number }> {
  if (!spec.stream) {
    const text = await body.text();
    return { ok: text.includes('"usage"'), excerpt: text.slice(0, 300), events: 0 };
  }
  const reader = new StreamReader();
  let excerpt = '';
  for await (const chunk of body) {
    const receivedAt = process.hrtime.bigint();
    const text = chunk.toString('utf8');
    if (excerpt.length < 300) excerpt += text.slice(0, 300);
    reader.push(text, receivedAt, trips.length < MAX_EVENT_SAMPLES ? trips : []);
  }
  return { ok: reader.stopped, excerpt, events: reader.events };
}

async function run(spec: LoadSpec): Promise<LoadResult> {
  const pool = new Pool(spec.origin, { connections: spec.concurrency, headersTimeout: CALL_TIMEOUT_MS, bodyTimeout: CALL_TIMEOUT_MS });
  const body = Buffer.from(spec.bodyBase64, 'base64');
  const maxCalls = Math.min(spec.maxCalls, MAX_CALLS_PER_RUN);
  const latencies: number[] = [];
  const trips: number[] = [];
  const statuses: Record<string, number> = {};
  let started = 0;
  let failed = 0;
  let events = 0;
  let firstFailure: string | undefined;
  const cpuBefore = process.cpuUsage();
  const begin = performance.now();
  const deadline = begin + spec.durationMs;
  const loop = async (index: number): Promise<void> => {
    const headers = loopHeaders(spec.headers, spec.apiKeys, index);
    while (performance.now() < deadline && started < maxCalls) {
      started++;
      const sentAt = performance.now();
      try {
        const answer = await pool.request({ method: 'POST', path: spec.path, headers, body });
        const read = await readAnswer(spec, answer.body, trips);
        if (answer.statusCode === 200 && read.ok) {
          latencies.push(performance.now() - sentAt);
          events += read.events;
          continue;
        }
        statuses[answer.statusCode] = (statuses[answer.statusCode] ?? 0) + 1;
        firstFailure ??= `${answer.statusCode}: ${read.excerpt}`;
      } catch (error) {
        firstFailure ??= String(error);
      }
      failed++;
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, (_, index) => loop(index)));
  const seconds = (performance.now() - begin) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await pool.close();
  return {
    seconds: round(seconds),
    completed: latencies.length,
    callsPerSecond: Math.round(latencies.length / seconds),
    statuses,
    failed,
    ...(firstFailure === undefined ? {} : { firstFailure }),
    latencyMs: percentiles(latencies),
    ...(spec.stream ? { eventTripMicros: percentiles(trips), eventsPerStream: round(events / Math.max(1, latencies.length)) } : {}),
    clientCpuMsPerCall: round((cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length)),
  };
}

serveRequests((request: ChildRequest) => {
  if (request.kind !== 'run') throw new Error(`load: unknown request ${request.kind}`);
  return run(request.spec as LoadSpec);
}, processUsage);
process.send?.({ kind: 'listening', port: 0 });
