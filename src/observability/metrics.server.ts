/**
 * The tokenless metrics listener on `METRICS_PORT` (README.md "Metrics"): a bare node:http server answering
 * `GET /metrics` and nothing else, so a scrape network never reaches the API.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LedgerMetrics } from './ledger-metrics';

export class MetricsServer {
  private server: Server | undefined;

  constructor(private readonly metrics: LedgerMetrics) {}

  /** Listens; resolves with the port (the one asked for, or the one given for 0). */
  listen(port: number, host: string): Promise<number> {
    const server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0];
      if (request.method !== 'GET' || path !== '/metrics') {
        response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
        return;
      }
      this.metrics.registry.metrics().then(
        (body) => response.writeHead(200, { 'Content-Type': this.metrics.registry.contentType, 'Cache-Control': 'no-store' }).end(body),
        () => response.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics unavailable\n'),
      );
    });
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
