/**
 * A local HTTP server on 127.0.0.1 at a port the OS picks, for the test stand-ins of upstream APIs
 * (messages-api-server.ts, batches-api-server.ts), and its close, stalled connections included.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listenOnLoopback(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ readonly server: Server; readonly baseURL: string }> {
  const server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { server, baseURL: `http://127.0.0.1:${port}` };
}

/** Stops listening and destroys every open connection, stalled ones included. */
export async function closeServer(server: Server): Promise<void> {
  const closed = once(server, 'close');
  server.close();
  server.closeAllConnections();
  await closed;
}
