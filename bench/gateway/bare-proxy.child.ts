/**
 * The limit the gateway is measured against: a pass-through proxy that forwards the same bytes and
 * accounts for nothing. node:http in front, an undici keep-alive pool behind (bounded sockets), the
 * request body streamed upstream as it arrives, the answer (JSON or SSE) piped back chunk by chunk,
 * the caller's key replaced with the proxy's own, as any gateway must.
 *
 * Environment: BENCH_UPSTREAM_URL (the upstream's origin).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { Pool } from 'undici';
import { processUsage } from '../http/process-usage';
import { serveRequests } from './child.protocol';
import { UPSTREAM_API_KEY } from './messages-wire';

/** Sockets to the upstream: above the benchmark's 64 calls in flight, so none waits for a socket. */
const UPSTREAM_CONNECTIONS = 256;
const KEEP_ALIVE_TIMEOUT_MS = 120_000;
/** The call's time bound, as a gateway has one. */
const UPSTREAM_TIMEOUT_MS = 60_000;
/** Request headers passed upstream, and answer headers passed back. */
const FORWARDED_REQUEST_HEADERS = ['content-type', 'content-length', 'anthropic-version', 'anthropic-beta'] as const;
const RELAYED_ANSWER_HEADERS = ['content-type', 'content-length', 'request-id', 'retry-after'] as const;

const upstreamUrl = process.env.BENCH_UPSTREAM_URL;
if (upstreamUrl === undefined) throw new Error('BENCH_UPSTREAM_URL is not set');
const pool = new Pool(upstreamUrl, {
  connections: UPSTREAM_CONNECTIONS,
  keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
  headersTimeout: UPSTREAM_TIMEOUT_MS,
  bodyTimeout: UPSTREAM_TIMEOUT_MS,
});

const server = createServer({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS }, (req, res) => {
  const headers: Record<string, string> = { 'x-api-key': UPSTREAM_API_KEY };
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  pool.request({ method: 'POST', path: req.url ?? '/', headers, body: req }).then(
    (answer) => {
      const relayed: Record<string, string> = {};
      for (const name of RELAYED_ANSWER_HEADERS) {
        const value = answer.headers[name];
        if (typeof value === 'string') relayed[name] = value;
      }
      res.writeHead(answer.statusCode, relayed);
      pipeline(answer.body, res, () => undefined);
    },
    () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end('{"type":"error","error":{"type":"api_error","message":"bare proxy: upstream unreachable"}}');
    },
  );
});

serveRequests(() => {
  throw new Error('bare proxy: no requests but usage');
}, processUsage);

server.listen(0, '127.0.0.1', () => process.send?.({ kind: 'listening', port: (server.address() as AddressInfo).port }));
