/**
 * A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for driving the real SDK in tests.
 *
 * Each incoming request takes the next scripted reply (in order) and is recorded with its headers and
 * JSON body. A reply can be a JSON answer with any status and headers, a stall (no answer until the
 * server closes), a stall after the headers and part of the body, or a reset socket. A request with
 * nothing scripted gets a 500 `api_error` naming it, so a test that under-scripts fails loudly.
 *
 * ```ts
 * const server = await MessagesApiServer.start();
 * server.reply(errorReply(529, 'overloaded_error', 'busy'), messageReply({ content: [textBlock('hi')] }));
 * const provider = new AnthropicProvider({ apiKey: 'test-key', baseURL: server.baseURL });
 * // ... send, then assert on server.requests[i].body / .headers
 * await server.close(); // in afterEach: also ends stalled exchanges so jest can exit
 * ```
 */
import { once } from 'node:events';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Request bodies beyond this are refused with 413, so a runaway test cannot exhaust memory. */
export const MAX_REQUEST_BODY_BYTES = 8 * 1024 * 1024;

const LOOPBACK_HOST = '127.0.0.1';

export interface RecordedRequest {
  /** 1-based arrival number. */
  readonly sequence: number;
  readonly method: string;
  /** Path and query, e.g. `/v1/messages`. */
  readonly path: string;
  /** Lower-cased header names, as node:http gives them. */
  readonly headers: IncomingHttpHeaders;
  /** The body exactly as it arrived (UTF-8). */
  readonly rawBody: string;
  /** The parsed JSON body, or undefined when it was not JSON. */
  readonly body: unknown;
}

export type ScriptedReply =
  /** Answer with this status, JSON body and headers. */
  | { readonly kind: 'json'; readonly status: number; readonly body: unknown; readonly headers?: Readonly<Record<string, string>> }
  /** Answer with a non-JSON body (e.g. a proxy's HTML page). */
  | { readonly kind: 'raw'; readonly status: number; readonly body: string; readonly headers?: Readonly<Record<string, string>> }
  /** Read the request and never answer. */
  | { readonly kind: 'stall' }
  /** Send 200 headers and the first bytes of a JSON body, then never finish it. */
  | { readonly kind: 'stall-body' }
  /** Destroy the socket without answering (the client sees a reset / socket hang-up). */
  | { readonly kind: 'reset' };

/** A reply, or a function choosing one from the request it answers. */
export type ReplyScript = ScriptedReply | ((request: RecordedRequest) => ScriptedReply);

export interface ApiUsage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_creation_input_tokens?: number | null;
  readonly cache_read_input_tokens?: number | null;
  readonly cache_creation?: { readonly ephemeral_5m_input_tokens: number; readonly ephemeral_1h_input_tokens: number } | null;
  readonly server_tool_use?: { readonly web_search_requests: number } | null;
  readonly service_tier?: string | null;
}

export type ApiResponseBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'tool_use'; readonly id: string; readonly name: string; readonly input: unknown }
  /** Any other block the API returns (thinking, server_tool_use, web_search_tool_result…), as it returns it. */
  | { readonly type: string; readonly [field: string]: unknown };

export function textBlock(text: string): ApiResponseBlock {
  return { type: 'text', text };
}

export function toolUseBlock(id: string, name: string, input: unknown): ApiResponseBlock {
  return { type: 'tool_use', id, name, input };
}

/** A 200 Messages API answer shaped like the real one. */
export function messageReply(options: {
  readonly content?: readonly ApiResponseBlock[];
  readonly stopReason?: string | null;
  readonly usage?: ApiUsage | null;
  readonly model?: string;
  readonly id?: string;
  readonly headers?: Readonly<Record<string, string>>;
}): ScriptedReply {
  const body: Record<string, unknown> = {
    id: options.id ?? 'msg_fake_0001',
    type: 'message',
    role: 'assistant',
    model: options.model ?? 'claude-test-model',
    content: options.content ?? [textBlock('ok')],
    stop_reason: options.stopReason === undefined ? 'end_turn' : options.stopReason,
    stop_sequence: null,
  };
  if (options.usage !== null) {
    body.usage = options.usage ?? { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: null, cache_read_input_tokens: null };
  }
  return { kind: 'json', status: 200, body, headers: options.headers };
}

/** An error answer in the Messages API's error shape: `{ type: 'error', error: { type, message }, request_id }`. */
export function errorReply(
  status: number,
  type: string,
  message: string,
  options: { readonly headers?: Readonly<Record<string, string>>; readonly details?: Record<string, unknown> } = {},
): ScriptedReply {
  const error: Record<string, unknown> = { type, message };
  if (options.details) error.details = options.details;
  return { kind: 'json', status, body: { type: 'error', error, request_id: 'req_fake_error' }, headers: options.headers };
}

export class MessagesApiServer {
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  private readonly script: ReplyScript[] = [];
  private readonly arrivalWaiters: Array<{ count: number; resolve: () => void }> = [];

  private constructor(
    private readonly server: Server,
    /** e.g. `http://127.0.0.1:43125` — pass as the SDK's baseURL. */
    readonly baseURL: string,
  ) {}

  /** Starts a server on 127.0.0.1 with a port the OS picks. */
  static async start(): Promise<MessagesApiServer> {
    let instance: MessagesApiServer | undefined;
    const server = createServer((req, res) => {
      void instance?.handle(req, res);
    });
    server.listen(0, LOOPBACK_HOST);
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    instance = new MessagesApiServer(server, `http://${LOOPBACK_HOST}:${port}`);
    return instance;
  }

  /** Appends replies to the script; request n gets the n-th reply. */
  reply(...replies: ReplyScript[]): this {
    this.script.push(...replies);
    return this;
  }

  /** Resolves once at least `count` requests have arrived (and been recorded). */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.arrivalWaiters.push({ count, resolve }));
  }

  /** Stops listening and destroys every open connection, stalled ones included. */
  async close(): Promise<void> {
    const closed = once(this.server, 'close');
    this.server.close();
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    if (rawBody === undefined) {
      sendJson(res, 413, { type: 'error', error: { type: 'request_too_large', message: 'test server body limit' } }, {});
      return;
    }
    const request: RecordedRequest = {
      sequence: this.requests.length + 1,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      rawBody,
      body: parseJson(rawBody),
    };
    this.requests.push(request);
    for (const waiter of this.arrivalWaiters.filter((w) => this.requests.length >= w.count)) {
      this.arrivalWaiters.splice(this.arrivalWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }

    const next = this.script.shift();
    const reply: ScriptedReply =
      next === undefined
        ? errorReply(500, 'api_error', `test server: no reply scripted for request #${request.sequence}`)
        : typeof next === 'function'
          ? next(request)
          : next;
    const requestId = `req_fake_${String(request.sequence).padStart(4, '0')}`;

    switch (reply.kind) {
      case 'json':
        sendJson(res, reply.status, reply.body, { 'request-id': requestId, ...reply.headers });
        return;
      case 'raw':
        res.writeHead(reply.status, { 'content-type': 'text/html', 'request-id': requestId, ...reply.headers });
        res.end(reply.body);
        return;
      case 'stall':
        return;
      case 'stall-body':
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
        res.write('{"id":"msg_fake_stalled","type":"message",');
        return;
      case 'reset':
        req.socket.destroy();
        return;
    }
  }
}

/**
 * A base URL on 127.0.0.1 where nothing listens: a server is bound to an OS-chosen port and closed,
 * so a connection to it is refused.
 */
export async function closedPortBaseURL(): Promise<string> {
  const server = await MessagesApiServer.start();
  const { baseURL } = server;
  await server.close();
  return baseURL;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>>): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
