import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedDelivery {
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: string;
  readonly body: { deliveryId: string; type: string; organizationId: string; occurredAt: string; data: Record<string, unknown> };
}

/**
 * A webhook receiver on 127.0.0.1, port 0. `answer` decides each response's status from the number of
 * the request (1-based); `hold` keeps a request unanswered (the kill test). `connections` counts the
 * TCP connections accepted, so a test can prove that none was even opened.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  connections = 0;
  private waiters: { count: number; resolve: () => void }[] = [];
  private server: Server | undefined;

  constructor(private answer: (request: number) => number | 'hold' = () => 200) {}

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const rawBody = Buffer.concat(chunks).toString('utf8');
        this.received.push({ headers: request.headers, rawBody, body: JSON.parse(rawBody) });
        const status = this.answer(this.received.length);
        if (status !== 'hold') response.writeHead(status).end();
        this.waiters = this.waiters.filter((waiter) => (this.received.length >= waiter.count ? (waiter.resolve(), false) : true));
      });
    });
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/ledger`;
  }

  answerWith(answer: (request: number) => number | 'hold'): void {
    this.answer = answer;
  }

  /** Resolves once `count` requests have arrived in all. */
  requests(count: number): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
