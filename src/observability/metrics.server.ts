/**
 * The tokenless metrics listener on `METRICS_PORT` (README.md "Metrics"): a bare node:http server answering
 * `GET /metrics` and nothing else, so a scrape network never reaches the API.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { answerClientErrorInTheErrorShape } from '../http-kit/client-error.answer';
import { errorBodyOf } from '../http-kit/http-error.filter';
import type { MetricsExposition } from './cluster-metrics';

export class MetricsServer {
  private server: Server | undefined;

  constructor(private readonly metrics: MetricsExposition) {}

  /** Listens; resolves with the port (the one asked for, or the one given for 0). */
  listen(port: number, host: string): Promise<number> {
    const server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0];
      if (request.method !== 'GET' || path !== '/metrics') {
        const body = errorBodyOf(404, 'only GET /metrics is served on this port', undefined, randomUUID());
        response.writeHead(404, { 'Content-Type': 'application/json; charset=utf-8', 'X-Request-Id': body.requestId }).end(JSON.stringify(body));
        return;
      }
      this.metrics.exposition().then(
        (body) => response.writeHead(200, { 'Content-Type': this.metrics.contentType, 'Cache-Control': 'no-store' }).end(body),
        () => response.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics unavailable\n'),
      );
    });
    // A request Node cannot parse (a NUL in a header) is answered in the API's error shape, not Node's bare 400.
    server.on('clientError', answerClientErrorInTheErrorShape);
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  }

  get port(): number | undefined {
    const address = this.server?.address();
    return address !== null && typeof address === 'object' ? address.port : undefined;
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
