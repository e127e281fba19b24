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
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback-server';

/** Request bodies beyond this are refused with 413, so a runaway test cannot exhaust memory. */
export const MAX_REQUEST_BODY_BYTES = 8 * 1024 * 1024;


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
  /** The body's bytes exactly as they arrived. */
  readonly bytes: Buffer;
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
  | { readonly kind: 'reset' }
  /** A 200 event stream, written step by step as the Messages API streams (see messageStream). */
  | { readonly kind: 'sse'; readonly steps: readonly SseStep[]; readonly headers?: Readonly<Record<string, string>> }
  /** The test writes the answer itself. */
  | { readonly kind: 'custom'; readonly respond: (request: RecordedRequest, res: ServerResponse) => void | Promise<void> };

/**
 * One step of a scripted event stream: an event, raw bytes, a wait for the test (`until`), or an
 * end other than a clean one (`stall`: the stream stays open and silent; `reset`: the socket is cut).
 */
export type SseStep =
  | { readonly event: string; readonly data: unknown }
  | { readonly raw: string }
  | { readonly until: Promise<unknown> }
  | { readonly end: 'stall' | 'reset' };

/** An SSE event as the Messages API writes it. */
export function sseEvent(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export interface MessageStreamOptions {
  readonly texts?: readonly string[];
  readonly model?: string;
  /** message_start's usage (the input side, with output_tokens 1). */
  readonly startUsage?: ApiUsage;
  /** The last message_delta's cumulative usage. */
  readonly deltaUsage?: Partial<ApiUsage>;
  readonly stopReason?: string;
  /** Written after the first text delta, before the rest: the stream waits for it. */
  readonly after?: readonly SseStep[];
}

/** The steps of a streamed Messages answer: message_start, a ping, one text block's deltas, message_delta, message_stop. */
export function messageStream(options: MessageStreamOptions = {}): SseStep[] {
  const texts = options.texts ?? ['Hello', ', world'];
  const [first, ...rest] = texts;
  return [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: 'msg_fake_stream',
          type: 'message',
          role: 'assistant',
          model: options.model ?? 'claude-test-model',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: options.startUsage ?? { input_tokens: 25, output_tokens: 1, cache_creation_input_tokens: null, cache_read_input_tokens: null },
        },
      },
    },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'ping', data: { type: 'ping' } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: first ?? '' } } },
    ...(options.after ?? []),
    ...rest.map((text) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } })),
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    {
      event: 'message_delta',
      data: { type: 'message_delta', delta: { stop_reason: options.stopReason ?? 'end_turn', stop_sequence: null }, usage: options.deltaUsage ?? { output_tokens: 12 } },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
}

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
  readonly speed?: string | null;
  readonly inference_geo?: string | null;
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
    const { server, baseURL } = await listenOnLoopback((req, res) => {
      void instance?.handle(req, res);
    });
    instance = new MessagesApiServer(server, baseURL);
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
  close(): Promise<void> {
    return closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const bytes = await readBody(req);
    if (bytes === undefined) {
      sendJson(res, 413, { type: 'error', error: { type: 'request_too_large', message: 'test server body limit' } }, {});
      return;
    }
    const request: RecordedRequest = {
      sequence: this.requests.length + 1,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      rawBody: bytes.toString('utf8'),
      bytes,
      body: parseJson(bytes.toString('utf8')),
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
      case 'sse':
        await writeStream(req, res, requestId, reply.steps, reply.headers ?? {});
        return;
      case 'custom':
        await reply.respond(request, res);
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

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Writes the steps in order, each event as its own write (a pause between writes the network keeps). */
async function writeStream(req: IncomingMessage, res: ServerResponse, requestId: string, steps: readonly SseStep[], headers: Readonly<Record<string, string>>): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': requestId, ...headers });
  res.flushHeaders();
  for (const step of steps) {
    if (res.destroyed) return;
    if ('until' in step) await step.until;
    else if ('end' in step) {
      // What was written reaches the socket first; then the connection is cut mid-answer.
      if (step.end === 'reset') res.write('', () => req.socket.destroy());
      return;
    } else if (!res.write('raw' in step ? step.raw : sseEvent(step.event, step.data))) await once(res, 'drain');
  }
  res.end();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
