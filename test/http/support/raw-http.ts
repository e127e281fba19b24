/** HTTP over a raw socket (net.connect), for requests a client library would tidy up or refuse to send. */
import { connect } from 'node:net';

export interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly statusLine: string;
  /** Everything the server sent, every answer on the connection. */
  readonly raw: string;
  /** The server ended the connection (its FIN), rather than the test. */
  readonly closedByServer: boolean;
}

/**
 * Writes `text` as it is and reads until the server closes the connection. No timer: a server that
 * holds the socket fails the test by the test's own timeout.
 */
export function rawExchange(port: number, text: string | Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      socket.destroy();
      const raw = Buffer.concat(chunks).toString('utf8');
      resolve({ ...parseAnswer(raw), raw, closedByServer: true });
    });
    socket.write(text);
  });
}

function parseAnswer(text: string): Omit<RawAnswer, 'closedByServer' | 'raw'> {
  const split = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  let body = text.slice(split + 4);
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { status: Number(statusLine!.split(' ')[1]), statusLine: statusLine!, headers, body };
}

function dechunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, lineEnd), 16);
    if (!(size > 0)) return out;
    out += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    rest = rest.slice(lineEnd + 2 + size + 2);
  }
}
