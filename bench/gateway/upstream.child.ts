/**
 * The gateway benchmark's upstream: Anthropic's Messages API on 127.0.0.1, in a process of its own
 * so its cost is neither the peers' nor the load generator's. `POST /v1/messages` answers after the
 * configured delay (or one drawn around it, `delayJitterMs`), as JSON with its usage block, or (with `"stream": true`) as SSE: the head at
 * once, the deltas spread evenly over the delay (all in one write at 0 ms), then the tail. It does
 * as little as it can per call: no JSON parse, answers built from templates.
 *
 * Every run the benchmark first sends `configure` (UpstreamSettings) and afterwards reads `counters`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { processUsage } from '../http/process-usage';
import { serveRequests, type ChildRequest, type UpstreamCounters, type UpstreamSettings } from './child.protocol';
import { UPSTREAM_API_KEY, messageJson, streamDelta, streamHead, streamTail } from './messages-wire';

/** Longer than any pause between runs, so the peers' pooled connections stay open. */
const KEEP_ALIVE_TIMEOUT_MS = 120_000;
/** Request bodies beyond this are refused with 413. */
const MAX_REQUEST_BODY_BYTES = 1024 * 1024;
const STREAM_FLAG = /"stream"\s*:\s*true/;

let settings: UpstreamSettings = { delayMs: 0, streamDeltas: 20, expectedBodyBase64: '' };
let expectedBody = Buffer.alloc(0);
let counters = { requests: 0, streamed: 0, bodiesAltered: 0, wrongKey: 0 } satisfies UpstreamCounters;
let sequence = 0;
/** The seed each run's sequence of jittered delays starts from. */
const JITTER_SEED = 0x5eed;
let jitterState = JITTER_SEED;

/** The next call's delay: `delayMs`, or uniform in `delayMs ± delayJitterMs` (mulberry32, seeded per run). */
function nextDelayMs(): number {
  const { delayMs, delayJitterMs = 0 } = settings;
  if (delayJitterMs === 0) return delayMs;
  jitterState = (jitterState + 0x6d2b79f5) | 0;
  let t = Math.imul(jitterState ^ (jitterState >>> 15), 1 | jitterState);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  const uniform = ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  return Math.max(0, delayMs - delayJitterMs + uniform * 2 * delayJitterMs);
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

function answer(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
  counters.requests++;
  if (!body.equals(expectedBody)) counters.bodiesAltered++;
  if (req.headers['x-api-key'] !== UPSTREAM_API_KEY) counters.wrongKey++;
  const id = `msg_bench_${(++sequence).toString(36)}`;
  const requestId = `req_bench_${sequence.toString(36)}`;
  const { streamDeltas } = settings;
  const delayMs = nextDelayMs();
  if (!STREAM_FLAG.test(body.toString('latin1'))) {
    const send = (): void => {
      const json = messageJson(id, body.length);
      res.writeHead(200, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(json), 'request-id': requestId });
      res.end(json);
    };
    if (delayMs > 0) setTimeout(send, delayMs);
    else send();
    return;
  }
  counters.streamed++;
  res.writeHead(200, { ...SSE_HEADERS, 'request-id': requestId });
  if (delayMs === 0) {
    let stream = streamHead(id, body.length);
    for (let delta = 0; delta < streamDeltas; delta++) stream += streamDelta();
    res.end(stream + streamTail(body.length, streamDeltas));
    return;
  }
  res.write(streamHead(id, body.length));
  const gapMs = delayMs / streamDeltas;
  let sent = 0;
  const timer = setInterval(() => {
    sent++;
    if (sent < streamDeltas) {
      res.write(streamDelta());
      return;
    }
    clearInterval(timer);
    res.end(streamDelta() + streamTail(body.length, streamDeltas));
  }, gapMs);
  res.once('close', () => clearInterval(timer));
}

const server = createServer({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS }, (req, res) => {
  if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
    res.writeHead(404, JSON_HEADERS).end('{"type":"error","error":{"type":"not_found_error","message":"bench upstream: only POST /v1/messages"}}');
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_REQUEST_BODY_BYTES) chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > MAX_REQUEST_BODY_BYTES) {
      res.writeHead(413, JSON_HEADERS).end('{"type":"error","error":{"type":"request_too_large","message":"bench upstream body limit"}}');
      return;
    }
    answer(req, res, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  });
});

serveRequests((request: ChildRequest) => {
  switch (request.kind) {
    case 'configure': {
      settings = request.settings as UpstreamSettings;
      expectedBody = Buffer.from(settings.expectedBodyBase64, 'base64');
      counters = { requests: 0, streamed: 0, bodiesAltered: 0, wrongKey: 0 };
      jitterState = JITTER_SEED;
      return null;
    }
    case 'counters':
      return { ...counters } satisfies UpstreamCounters;
    default:
      throw new Error(`upstream: unknown request ${request.kind}`);
  }
}, processUsage);

server.listen(0, '127.0.0.1', () => process.send?.({ kind: 'listening', port: (server.address() as AddressInfo).port }));
