/**
 * A gateway provider of the tests' own (src/gateway/gateway-provider.port.ts), over an upstream API
 * that is not Anthropic's in any shape, to show the seam carries everything upstream-specific:
 * - calls: `POST /gen/v2/models/{model}:generate`, a bearer credential, usage as `metering.tokens_in` /
 *   `tokens_out`, the request id in `x-tp-request-id`;
 * - errors: `{ problem, code }` (`QUOTA`, `BUSY`, `NO_SUCH_JOB`), which the provider translates into
 *   Anthropic's error shape (`errorAnswer`, and its batches' BatchUpstreamError);
 * - batches ("jobs"): `POST /gen/v2/jobs` with `{ items: [{ ref, model, body }] }`, a job as
 *   `{ name, phase: RUNNING | CANCELLING | DONE, created (epoch s), tallies: { pending, ok, failed } }`,
 *   `GET …/jobs` (every job, newest first, in one page), `GET …/jobs/{name}`, `POST …/jobs/{name}:cancel`, `DELETE …/jobs/{name}`, and its output as NDJSON
 *   lines `{ ref, status: OK | FAILED, text, metering }`; the provider answers in Anthropic's batch
 *   object and results lines.
 */
import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import { anthropicErrorBody, anthropicErrorTypeOf } from '../../../src/gateway/anthropic-error.body';
import { BatchUpstreamError, type BatchUpstream, type UpstreamBatchObject, type UpstreamBatchPage, type UpstreamBatchRequest } from '../../../src/gateway/batches/batch-upstream';
import type { AnthropicErrorType } from '../../../src/gateway/gateway-call.port';
import type { GatewayAnswer, GatewayAnswerReader, GatewayProvider } from '../../../src/gateway/gateway-provider.port';
import { JsonAnswerReader } from '../../../src/gateway/json-answer.reader';
import { NO_USAGE } from '../../../src/runtime/usage';
import { closeServer, listenOnLoopback } from '../../support/loopback-server';

/** The service's own credential for the test upstream, sent as a bearer token (never the caller's key). */
export const UPSTREAM_TOKEN = 'tp-own-credential';
/** What a job's lifetime is, in ms, as Anthropic's batches expire: 24 hours. */
const JOB_LIFETIME_MS = 24 * 60 * 60 * 1_000;

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** One item of a job, and its output once the test ends the job. */
export interface TestJobItem {
  readonly ref: string;
  readonly model: string;
  readonly body: unknown;
}
export interface TestJobOutput {
  readonly ref: string;
  readonly status: 'OK' | 'FAILED';
  readonly text?: string;
  readonly metering?: { readonly tokens_in: number; readonly tokens_out: number };
}

interface TestJob {
  readonly name: string;
  readonly items: readonly TestJobItem[];
  readonly created: number;
  phase: 'RUNNING' | 'CANCELLING' | 'DONE';
  output?: TestJobOutput[];
}

/** The test upstream's error answers: `{ problem, code }`. */
export interface TestError {
  readonly status: number;
  readonly problem: string;
  readonly code: string;
}

/** The generation and jobs API on 127.0.0.1; `refuseNext` makes its next answer an error in its own shape. */
export class TestUpstream {
  readonly seen: SeenRequest[] = [];
  readonly jobs = new Map<string, TestJob>();
  private refusal: TestError | undefined;
  private raw: { readonly status: number; readonly body: Buffer } | undefined;

  private constructor(
    readonly server: Server,
    readonly url: string,
    private readonly generated: Record<string, unknown>,
  ) {}

  static async start(generated: Record<string, unknown>): Promise<TestUpstream> {
    let upstream: TestUpstream | undefined;
    const { server, baseURL } = await listenOnLoopback((request, response) => upstream!.handle(request, response));
    upstream = new TestUpstream(server, baseURL, generated);
    return upstream;
  }

  refuseNext(error: TestError): void {
    this.refusal = error;
  }

  /** The next answer: these bytes as JSON with this status, whatever was asked. */
  answerNext(status: number, body: Buffer): void {
    this.raw = { status, body };
  }

  /** The one job created so far. */
  onlyJob(): TestJob {
    const [job, ...more] = this.jobs.values();
    if (job === undefined || more.length > 0) throw new Error(`expected one job, found ${this.jobs.size}`);
    return job;
  }

  end(name: string, output: (item: TestJobItem) => TestJobOutput): void {
    const job = this.jobs.get(name)!;
    job.output = job.items.map(output);
    job.phase = 'DONE';
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = request.url ?? '';
      this.seen.push({ method: request.method ?? '', path, headers: request.headers, body });
      const refusal = request.headers.authorization === `Bearer ${UPSTREAM_TOKEN}` ? this.refusal : { status: 401, problem: 'unauthorized', code: 'AUTH' };
      this.refusal = undefined;
      const raw = this.raw;
      this.raw = undefined;
      if (raw !== undefined) {
        response.writeHead(raw.status, { 'content-type': 'application/json', 'x-tp-request-id': 'tp-req-1' });
        return void response.end(raw.body);
      }
      if (refusal !== undefined) return answer(response, refusal.status, { problem: refusal.problem, code: refusal.code });
      if (path.startsWith('/gen/v2/models/')) return answer(response, 200, this.generated);
      this.jobsRoute(request.method ?? '', path, body, response);
    });
  }

  private jobsRoute(method: string, path: string, body: string, response: ServerResponse): void {
    const [, name, action] = /^\/gen\/v2\/jobs(?:\/([^/:]+))?(?::cancel|\/(output))?$/.exec(path) ?? [];
    if (method === 'POST' && path === '/gen/v2/jobs') {
      const created: TestJob = { name: `job-${this.jobs.size + 1}`, items: (JSON.parse(body) as { items: TestJobItem[] }).items, created: Math.floor(Date.now() / 1_000), phase: 'RUNNING' };
      this.jobs.set(created.name, created);
      return answer(response, 200, jobView(created));
    }
    if (method === 'GET' && path === '/gen/v2/jobs') return answer(response, 200, { jobs: [...this.jobs.values()].reverse().map(jobView) });
    const job = name === undefined ? undefined : this.jobs.get(name);
    if (job === undefined) return answer(response, 404, { problem: `no job ${name}`, code: 'NO_SUCH_JOB' });
    if (method === 'POST' && path.endsWith(':cancel')) job.phase = job.phase === 'DONE' ? 'DONE' : 'CANCELLING';
    if (method === 'DELETE') this.jobs.delete(job.name);
    if (action !== 'output') return answer(response, 200, jobView(job));
    response.writeHead(200, { 'content-type': 'application/x-ndjson' });
    response.end((job.output ?? []).map((line) => `${JSON.stringify(line)}\n`).join(''));
  }
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json', 'x-tp-request-id': 'tp-req-1' });
  response.end(JSON.stringify(body));
}

function jobView(job: TestJob): Record<string, unknown> {
  const ok = (job.output ?? []).filter((line) => line.status === 'OK').length;
  const failed = (job.output?.length ?? 0) - ok;
  return { name: job.name, phase: job.phase, created: job.created, tallies: { pending: job.items.length - ok - failed, ok, failed } };
}

/** The test upstream's answers: JSON only, `metering` in its own field names. */
class TestAnswerReader implements GatewayAnswerReader {
  readonly streamed = false;
  readonly atEventBoundary = false;
  private readonly json = new JsonAnswerReader(new Set(['metering', 'served_by']));

  feed(chunk: Buffer): number {
    this.json.feed(chunk);
    return -1;
  }

  read(status: number): GatewayAnswer {
    const body = this.json.answer;
    if (status < 200 || status >= 300) return { classification: status === 429 ? 'rate_limited' : 'server_error' };
    const metering = body?.metering as { tokens_in?: unknown; tokens_out?: unknown } | undefined;
    const usage =
      typeof metering?.tokens_in === 'number' && typeof metering.tokens_out === 'number' ? { ...NO_USAGE, inputTokens: metering.tokens_in, outputTokens: metering.tokens_out } : undefined;
    return { classification: 'ok', ...(usage === undefined ? {} : { usage }), ...(typeof body?.served_by === 'string' ? { responseModel: body.served_by } : {}) };
  }
}

/** The test upstream's error codes, as Anthropic's error types. */
const ERROR_TYPE_OF_CODE: Readonly<Record<string, AnthropicErrorType>> = { QUOTA: 'rate_limit_error', BUSY: 'overloaded_error', NO_SUCH_JOB: 'not_found_error', AUTH: 'authentication_error' };

/** An error answer of the test upstream (`{ problem, code }`) in Anthropic's terms. */
export function translatedError(status: number, body: string): { readonly type: AnthropicErrorType; readonly message: string } {
  let parsed: { problem?: unknown; code?: unknown } = {};
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    // Not JSON: the status alone says what it was.
  }
  const code = typeof parsed.code === 'string' ? parsed.code : '';
  return { type: ERROR_TYPE_OF_CODE[code] ?? anthropicErrorTypeOf(status), message: typeof parsed.problem === 'string' ? `${parsed.problem} (${code})` : `upstream answered ${status}` };
}

/** The jobs API in Anthropic's batch shapes. */
class TestBatches implements BatchUpstream {
  constructor(private readonly baseURL: string) {}

  async create(requests: readonly UpstreamBatchRequest[]): Promise<UpstreamBatchObject> {
    const items = requests.map((request) => ({ ref: request.custom_id, model: (request.params as { model: string }).model, body: request.params }));
    return batchOf(await this.call('POST', '/gen/v2/jobs', { items }));
  }

  async retrieve(id: string): Promise<UpstreamBatchObject> {
    return batchOf(await this.call('GET', `/gen/v2/jobs/${id}`));
  }

  async cancel(id: string): Promise<UpstreamBatchObject> {
    return batchOf(await this.call('POST', `/gen/v2/jobs/${id}:cancel`));
  }

  async delete(id: string): Promise<void> {
    await this.call('DELETE', `/gen/v2/jobs/${id}`);
  }

  async list(): Promise<UpstreamBatchPage> {
    const { jobs } = (await this.call('GET', '/gen/v2/jobs')) as unknown as { jobs: Record<string, unknown>[] };
    return { data: jobs.map(batchOf), hasMore: false, lastId: null };
  }

  async *results(id: string): AsyncIterable<unknown> {
    const answer = await this.send('GET', `/gen/v2/jobs/${id}/output`);
    for await (const line of createInterface({ input: Readable.fromWeb(answer.body! as Parameters<typeof Readable.fromWeb>[0]) })) {
      if (line !== '') yield resultOf(JSON.parse(line) as TestJobOutput);
    }
  }

  private async call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    return (await (await this.send(method, path, body)).json()) as Record<string, unknown>;
  }

  /** One request; an error answer thrown in Anthropic's terms. */
  private async send(method: string, path: string, body?: unknown): Promise<Response> {
    const answer = await fetch(`${this.baseURL}${path}`, {
      method,
      headers: { authorization: `Bearer ${UPSTREAM_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (answer.ok) return answer;
    const { type, message } = translatedError(answer.status, await answer.text());
    throw new BatchUpstreamError(answer.status, type, message);
  }
}

function isoOf(epochSeconds: number): string {
  return new Date(epochSeconds * 1_000).toISOString();
}

/** A job as Anthropic's batch object. */
function batchOf(job: Record<string, unknown>): UpstreamBatchObject {
  const tallies = job.tallies as { pending: number; ok: number; failed: number };
  const created = job.created as number;
  const ended = job.phase === 'DONE';
  return {
    id: job.name as string,
    type: 'message_batch',
    processing_status: ended ? 'ended' : job.phase === 'CANCELLING' ? 'canceling' : 'in_progress',
    request_counts: { processing: tallies.pending, succeeded: tallies.ok, errored: tallies.failed, canceled: 0, expired: 0 },
    ended_at: ended ? isoOf(created) : null,
    created_at: isoOf(created),
    expires_at: new Date(created * 1_000 + JOB_LIFETIME_MS).toISOString(),
    archived_at: null,
    cancel_initiated_at: null,
    // The gateway puts its own results route here.
    results_url: ended ? `/gen/v2/jobs/${String(job.name)}/output` : null,
  };
}

/** A job's output line as Anthropic's results line. */
function resultOf(line: TestJobOutput): unknown {
  if (line.status === 'FAILED') return { custom_id: line.ref, result: { type: 'errored', error: { type: 'error', error: { type: 'api_error', message: 'the job item failed' } } } };
  const usage = { input_tokens: line.metering?.tokens_in, output_tokens: line.metering?.tokens_out };
  const message = { id: `msg_${line.ref}`, type: 'message', role: 'assistant', model: 'test-model', content: [{ type: 'text', text: line.text ?? '' }], stop_reason: 'end_turn', stop_sequence: null, usage };
  return { custom_id: line.ref, result: { type: 'succeeded', message } };
}

/** The test upstream as a GatewayProvider; with `batches`, its jobs API as the provider's Message Batches. */
export function testProvider(baseURL: string, options: { readonly batches?: boolean } = {}): GatewayProvider {
  return {
    name: 'test-generation-api',
    baseURL,
    configured: true,
    requestIdHeader: 'x-tp-request-id',
    upstreamPath: (call) => (call.route === 'messages' ? `/gen/v2/models/${encodeURIComponent(call.model ?? '')}:generate${call.query}` : `/gen/v2/count${call.query}`),
    upstreamHeaders: () => ['authorization', `Bearer ${UPSTREAM_TOKEN}`, 'content-type', 'application/json'],
    answerReader: () => new TestAnswerReader(),
    errorAnswer: ({ status, body, requestId }) => {
      const { type, message } = translatedError(status, body.toString('utf8'));
      return { contentType: 'application/json', body: Buffer.from(JSON.stringify(anthropicErrorBody(type, message, requestId))) };
    },
    ...(options.batches === true ? { batches: new TestBatches(baseURL) } : {}),
  };
}
