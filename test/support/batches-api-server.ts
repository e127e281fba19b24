/**
 * A stateful stand-in for Anthropic's Message Batches API on 127.0.0.1, for driving the gateway's
 * batch routes with the real SDK in tests: create, retrieve, list (`before_id`, `after_id`, `limit`),
 * cancel, delete and the results (JSONL, fetchable as often as asked).
 *
 * A batch stays `in_progress` until the test ends it (`end`), choosing each request's result; a batch
 * canceled meanwhile is `canceling` until then, and its unanswered requests end `canceled`. Faults:
 * `failNext(n)` answers the next n requests of a route with an error (529 `overloaded_error` unless
 * named), so a poller meets upstream errors; `loseNextCreateAnswer` cuts the next create's connection
 * without an answer, after creating the batch or before; every request is recorded (path, method, key).
 * A batch's `created_at` and `ended_at` are the wall clock's, as Anthropic's are.
 *
 * ```ts
 * const upstream = await BatchesApiServer.start();
 * // gateway's ANTHROPIC_BASE_URL = upstream.baseURL; after the gateway created a batch:
 * upstream.end(upstream.onlyBatch().id, (request) => succeeded(request, { input_tokens: 10, output_tokens: 5 }));
 * ```
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback-server';

/** Request bodies beyond this are refused with 413, so a runaway test cannot exhaust memory. */
export const MAX_BATCHES_REQUEST_BODY_BYTES = 64 * 1024 * 1024;

export interface UpstreamBatchRequest {
  readonly custom_id: string;
  readonly params: Record<string, unknown>;
}

/** One line of a batch's results, as Anthropic writes it. */
export interface UpstreamBatchResult {
  readonly custom_id: string;
  readonly result: { readonly type: 'succeeded'; readonly message: Record<string, unknown> } | { readonly type: 'errored'; readonly error: unknown } | { readonly type: 'canceled' } | { readonly type: 'expired' };
}

export interface UpstreamBatch {
  readonly id: string;
  readonly requests: readonly UpstreamBatchRequest[];
  processingStatus: 'in_progress' | 'canceling' | 'ended';
  readonly createdAt: string;
  endedAt: string | null;
  cancelInitiatedAt: string | null;
  results?: UpstreamBatchResult[];
  deleted: boolean;
}

export interface RecordedBatchesRequest {
  readonly method: string;
  readonly path: string;
  /** The key presented, as `x-api-key` or `Authorization: Bearer` (Anthropic's SDK sends the latter). */
  readonly apiKey: string | undefined;
}

/** The route a fault is injected on. */
export type BatchesRoute = 'create' | 'retrieve' | 'list' | 'cancel' | 'delete' | 'results';

/** One request of a create, as a caller sends it: a small Messages body for `model` with `max_tokens` 100. */
export function batchRequest(customId: string, model: string): { readonly custom_id: string; readonly params: { readonly model: string; readonly max_tokens: number; readonly messages: { role: 'user'; content: string }[] } } {
  return { custom_id: customId, params: { model, max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] } };
}

/** A request that succeeded with this usage (Anthropic's field names). */
export function succeeded(request: UpstreamBatchRequest, usage: Record<string, unknown>): UpstreamBatchResult {
  const model = String(request.params.model);
  return {
    custom_id: request.custom_id,
    result: {
      type: 'succeeded',
      message: { id: `msg_${request.custom_id}`, type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { service_tier: 'batch', ...usage } },
    },
  };
}

export function errored(request: UpstreamBatchRequest): UpstreamBatchResult {
  return { custom_id: request.custom_id, result: { type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error', message: 'bad request' } } } };
}

export function expired(request: UpstreamBatchRequest): UpstreamBatchResult {
  return { custom_id: request.custom_id, result: { type: 'expired' } };
}

/** Anthropic expires a batch 24 hours after its creation. */
const EXPIRY_MS = 24 * 60 * 60 * 1_000;

export class BatchesApiServer {
  readonly requests: RecordedBatchesRequest[] = [];
  readonly batches = new Map<string, UpstreamBatch>();
  private readonly faults = new Map<BatchesRoute, { count: number; status: number; type: string }>();
  private lostCreate: { readonly created: boolean } | undefined;
  private sequence = 0;

  private constructor(
    private readonly server: Server,
    readonly baseURL: string,
  ) {}

  static async start(): Promise<BatchesApiServer> {
    let instance: BatchesApiServer | undefined;
    const { server, baseURL } = await listenOnLoopback((req, res) => void instance?.handle(req, res));
    instance = new BatchesApiServer(server, baseURL);
    return instance;
  }

  /** The next `count` requests of `route` are answered with this error. */
  failNext(route: BatchesRoute, count: number, status = 529, type = 'overloaded_error'): this {
    this.faults.set(route, { count, status, type });
    return this;
  }

  /** The next create's connection is cut without an answer: after the batch was created (`created`), or before. */
  loseNextCreateAnswer(created: boolean): this {
    this.lostCreate = { created };
    return this;
  }

  /** The one batch created so far (a test that created one). */
  onlyBatch(): UpstreamBatch {
    if (this.batches.size !== 1) throw new Error(`expected one upstream batch, found ${this.batches.size}`);
    return [...this.batches.values()][0]!;
  }

  /** Ends the batch: each request's result is `resultOf`'s; one canceled meanwhile ends `canceled`. */
  end(batchId: string, resultOf: (request: UpstreamBatchRequest, index: number) => UpstreamBatchResult): void {
    const batch = this.batches.get(batchId)!;
    const canceling = batch.processingStatus === 'canceling';
    batch.results = batch.requests.map((request, index) => (canceling ? { custom_id: request.custom_id, result: { type: 'canceled' } } : resultOf(request, index)));
    batch.processingStatus = 'ended';
    batch.endedAt = new Date().toISOString();
  }

  /** How often each route was called. */
  count(route: BatchesRoute): number {
    return this.requests.filter((request) => routeOf(request.method, request.path)?.route === route).length;
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const method = req.method ?? '';
    const path = req.url ?? '';
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    this.requests.push({ method, path, apiKey: (req.headers['x-api-key'] as string | undefined) ?? bearer?.[1] });
    const found = routeOf(method, path);
    if (found === undefined) return send(res, 404, errorBody('not_found_error', `no route ${method} ${path}`));
    const fault = this.faults.get(found.route);
    if (fault !== undefined && fault.count > 0) {
      fault.count -= 1;
      return send(res, fault.status, errorBody(fault.type, 'injected fault'));
    }
    if (found.route === 'create' && this.lostCreate !== undefined) {
      if (this.lostCreate.created) this.create(body);
      this.lostCreate = undefined;
      req.socket.destroy();
      return;
    }
    const batch = found.batchId === undefined ? undefined : this.batches.get(found.batchId);
    if (found.batchId !== undefined && (batch === undefined || batch.deleted)) return send(res, 404, errorBody('not_found_error', `no batch ${found.batchId}`));
    switch (found.route) {
      case 'create':
        return send(res, 200, this.view(this.create(body)));
      case 'retrieve':
        return send(res, 200, this.view(batch!));
      case 'list':
        return send(res, 200, this.list(new URL(path, this.baseURL).searchParams));
      case 'cancel':
        if (batch!.processingStatus === 'in_progress') {
          batch!.processingStatus = 'canceling';
          batch!.cancelInitiatedAt = new Date().toISOString();
        }
        return send(res, 200, this.view(batch!));
      case 'delete':
        if (batch!.processingStatus !== 'ended') return send(res, 400, errorBody('invalid_request_error', 'a batch in progress cannot be deleted; cancel it first'));
        batch!.deleted = true;
        return send(res, 200, { id: batch!.id, type: 'message_batch_deleted' });
      case 'results':
        if (batch!.results === undefined) return send(res, 400, errorBody('invalid_request_error', 'the batch has not ended'));
        res.writeHead(200, { 'content-type': 'application/binary' });
        res.end(batch!.results.map((line) => JSON.stringify(line)).join('\n') + '\n');
        return;
    }
  }

  private create(body: unknown): UpstreamBatch {
    const requests = (body as { requests: UpstreamBatchRequest[] }).requests;
    this.sequence += 1;
    const batch: UpstreamBatch = {
      id: `msgbatch_upstream${String(this.sequence).padStart(4, '0')}`,
      requests,
      processingStatus: 'in_progress',
      createdAt: new Date().toISOString(),
      endedAt: null,
      cancelInitiatedAt: null,
      deleted: false,
    };
    this.batches.set(batch.id, batch);
    return batch;
  }

  private list(query: URLSearchParams): unknown {
    const all = [...this.batches.values()].filter((batch) => !batch.deleted).reverse();
    const limit = Number(query.get('limit') ?? 20);
    const after = query.get('after_id');
    const start = after === null ? 0 : all.findIndex((batch) => batch.id === after) + 1;
    const page = all.slice(start, start + limit);
    return { data: page.map((batch) => this.view(batch)), has_more: start + limit < all.length, first_id: page[0]?.id ?? null, last_id: page[page.length - 1]?.id ?? null };
  }

  private view(batch: UpstreamBatch): Record<string, unknown> {
    const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
    if (batch.results === undefined) counts.processing = batch.requests.length;
    else for (const line of batch.results) counts[line.result.type] += 1;
    return {
      id: batch.id,
      type: 'message_batch',
      processing_status: batch.processingStatus,
      request_counts: counts,
      ended_at: batch.endedAt,
      created_at: batch.createdAt,
      expires_at: new Date(Date.parse(batch.createdAt) + EXPIRY_MS).toISOString(),
      archived_at: null,
      cancel_initiated_at: batch.cancelInitiatedAt,
      results_url: batch.results === undefined ? null : `${this.baseURL}/v1/messages/batches/${batch.id}/results`,
    };
  }
}

function routeOf(method: string, url: string): { readonly route: BatchesRoute; readonly batchId?: string } | undefined {
  const path = url.split('?')[0]!;
  const parts = path.split('/').filter((part) => part !== '');
  if (parts[0] !== 'v1' || parts[1] !== 'messages' || parts[2] !== 'batches') return undefined;
  const batchId = parts[3];
  if (batchId === undefined) return method === 'POST' ? { route: 'create' } : method === 'GET' ? { route: 'list' } : undefined;
  if (parts.length === 4) return method === 'GET' ? { route: 'retrieve', batchId } : method === 'DELETE' ? { route: 'delete', batchId } : undefined;
  if (parts[4] === 'cancel' && method === 'POST') return { route: 'cancel', batchId };
  if (parts[4] === 'results' && method === 'GET') return { route: 'results', batchId };
  return undefined;
}

function errorBody(type: string, message: string): unknown {
  return { type: 'error', error: { type, message }, request_id: 'req_fake_batches' };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), 'request-id': 'req_fake_batches' });
  res.end(payload);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BATCHES_REQUEST_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}
