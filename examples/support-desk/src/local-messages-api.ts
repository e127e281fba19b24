import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for Anthropic's Messages API on 127.0.0.1 (an ephemeral port), so the desk can route its
 * operation to `anthropic` without a network: the ledger's real Anthropic client talks to it. The
 * first reply of a conversation calls `submit_triage`; it answers nothing else.
 */
export class LocalMessagesApi {
  private constructor(
    private readonly server: Server,
    readonly baseURL: string,
  ) {}

  /** Requests received, by path. */
  readonly paths: string[] = [];

  static async start(): Promise<LocalMessagesApi> {
    let api: LocalMessagesApi | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        api?.paths.push(request.url ?? '');
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { model?: string };
        response.writeHead(200, { 'content-type': 'application/json', 'request-id': `req-${api?.paths.length ?? 0}` });
        response.end(
          JSON.stringify({
            id: `msg-${api?.paths.length ?? 0}`,
            type: 'message',
            role: 'assistant',
            model: body.model ?? 'claude-sonnet-4-5',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'submit_triage', input: { queue: 'billing', priority: 'normal' } }],
            stop_reason: 'tool_use',
            stop_sequence: null,
            usage: { input_tokens: 500, output_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    api = new LocalMessagesApi(server, `http://127.0.0.1:${port}`);
    return api;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
