import { Controller, Delete, Get, Optional, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { GATEWAY_ROUTE_PREFIX } from '../../http-kit/http-route-prefix';
import { takeOverResponse, type HttpResponse } from '../../http-kit/http.types';
import { ReadsOwnBody } from '../../http-kit/reads-own-body.decorator';
import { contextOf, type LedgerRequest } from '../../http-kit/request-context';
import { readGatewayBody } from '../anthropic-body.reader';
import { anthropicErrorTypeOf, sendAnthropicError } from '../anthropic-error.body';
import { AnthropicErrorFilter } from '../anthropic-error.filter';
import { presentedKeyOf } from '../anthropic-key';
import { page, readPageQuery, sendJson } from '../anthropic-list-page';
import { ApiGatewayPassThrough, ApiGatewayRead, ApiGatewayTag } from '../gateway-http.openapi';
import { incomingOf, repeatedHeaderProblem } from '../gateway-http.request';
import type { UpstreamBatchObject } from './batch-upstream';
import { GatewayBatches, unavailableMessage, type BatchAnswer, type BatchRefusal } from './gateway-batches.service';

/** The routes' own path: the results route's URL is built from where the request came in, under any prefix. */
const BATCHES_PATH = `${GATEWAY_ROUTE_PREFIX}/v1/messages/batches`;

/** A request whose key has the form of one: its response, id and key; undefined once answered. */
interface Caller {
  readonly response: ServerResponse;
  readonly requestId: string;
  readonly key: string;
  /** `http(s)://host/…/anthropic/v1/messages/batches`: where this gateway serves its batches. */
  readonly base: string;
}

/**
 * Message Batches through the gateway (docs/gateway.md "Message Batches"): create (checked and held
 * before anything goes upstream), retrieve, list, cancel, delete and the results (JSONL). Each batch
 * object is upstream's under the gateway's own id, its `results_url` the gateway's own results route:
 * Anthropic's SDK fetches that URL with the caller's key, which must never go to Anthropic.
 */
@Controller(BATCHES_PATH)
@UseFilters(AnthropicErrorFilter)
@ApiGatewayTag()
export class AnthropicBatchesController {
  // Absent where the routes are mounted without the gateway's own accounting module (an embedder's
  // accounting under GATEWAY_ACCOUNTING alone): then there are no batches here, and every route is a 404.
  constructor(@Optional() private readonly gatewayBatches?: GatewayBatches) {}

  private get batches(): GatewayBatches {
    return this.gatewayBatches!;
  }

  @Post()
  @ReadsOwnBody()
  @ApiGatewayPassThrough('Create a Message Batch', 'Every request checked as a Message is, every worst case held at batch rates in one decision, then sent upstream.')
  async create(@Req() request: LedgerRequest, @Res() reply: HttpResponse): Promise<void> {
    const caller = this.caller(request, reply);
    if (caller === undefined) return;
    const read = await readGatewayBody(request, incomingOf(request));
    if (read.problem !== undefined) return this.refuse(caller, { ok: false, status: read.problem.status, errorType: anthropicErrorTypeOf(read.problem.status), message: read.problem.message });
    if (!this.batches.configured) return this.refuse(caller, { ok: false, status: 500, errorType: 'api_error', message: 'The gateway has no Anthropic key of its own to forward with.' });
    const created = await this.batches.create(caller.key, read.bytes);
    if (!created.ok) return this.refuse(caller, created);
    sendJson(caller.response, viewOf(created.value.batchId, created.value.upstream, caller.base));
  }

  @Get()
  @ApiGatewayRead('List Message Batches', 'The batches the key’s organization created, newest first, in Anthropic’s list shape.', [[400, 'A `limit` that is not a whole number from 1 to 1000.']])
  async list(
    @Req() request: LedgerRequest,
    @Res() reply: HttpResponse,
    @Query('limit') limit?: unknown,
    @Query('after_id') afterId?: unknown,
    @Query('before_id') beforeId?: unknown,
  ): Promise<void> {
    const caller = this.caller(request, reply);
    if (caller === undefined) return;
    const query = readPageQuery(limit, afterId, beforeId);
    if ('problem' in query) return this.refuse(caller, { ok: false, status: 400, errorType: 'invalid_request_error', message: query.problem });
    const listed = await this.batches.list(caller.key);
    if (!listed.ok) return this.refuse(caller, listed);
    const chosen = page(listed.value.map((batch) => ({ ...batch, id: batch.batchId })), query.size, query.afterId, query.beforeId);
    const data: unknown[] = [];
    for (const batch of chosen.data) {
      const found = await this.batches.retrieve(caller.key, batch.batchId);
      if (!found.ok) return this.refuse(caller, found);
      data.push(viewOf(batch.batchId, found.value, caller.base));
    }
    sendJson(caller.response, { ...chosen, data });
  }

  @Get(':batchId')
  @ApiGatewayRead('Retrieve a Message Batch', 'The batch as upstream has it now, under the gateway’s id.', [[404, 'No batch of this organization by that id.']])
  async retrieve(@Req() request: LedgerRequest, @Res() reply: HttpResponse, @Param('batchId') batchId: string): Promise<void> {
    await this.answerBatch(request, reply, batchId, (key) => this.batches.retrieve(key, batchId));
  }

  @Post(':batchId/cancel')
  @ApiGatewayRead('Cancel a Message Batch', 'Cancellation asked of upstream; requests it cancels are charged nothing.', [[404, 'No batch of this organization by that id.']])
  async cancel(@Req() request: LedgerRequest, @Res() reply: HttpResponse, @Param('batchId') batchId: string): Promise<void> {
    await this.answerBatch(request, reply, batchId, (key) => this.batches.cancel(key, batchId));
  }

  @Delete(':batchId')
  @ApiGatewayRead('Delete a Message Batch', 'Settled first (its results recorded), then deleted upstream and here.', [[404, 'No batch of this organization by that id.']])
  async delete(@Req() request: LedgerRequest, @Res() reply: HttpResponse, @Param('batchId') batchId: string): Promise<void> {
    const caller = this.caller(request, reply);
    if (caller === undefined) return;
    const deleted = await this.batches.delete(caller.key, batchId);
    if (!deleted.ok) return this.refuse(caller, deleted);
    sendJson(caller.response, deleted.value);
  }

  @Get(':batchId/results')
  @ApiGatewayRead('Retrieve Message Batch results', 'The results as JSONL, each request charged once at its usage (however often they are fetched).', [[404, 'No batch of this organization by that id.']])
  async results(@Req() request: LedgerRequest, @Res() reply: HttpResponse, @Param('batchId') batchId: string): Promise<void> {
    const caller = this.caller(request, reply);
    if (caller === undefined) return;
    const lines = await this.batches.results(caller.key, batchId);
    if (!lines.ok) return this.refuse(caller, lines);
    const { response } = caller;
    response.statusCode = 200;
    response.setHeader('content-type', 'application/binary');
    try {
      for await (const line of lines.value) {
        if (!response.write(`${JSON.stringify(line)}\n`)) await new Promise((resolve) => response.once('drain', resolve));
      }
      response.end();
    } catch {
      // Upstream broke off mid-file: the caller sees a cut answer (its results were recorded before).
      response.destroy();
    }
  }

  private async answerBatch(request: LedgerRequest, reply: HttpResponse, batchId: string, ask: (key: string) => Promise<BatchAnswer<UpstreamBatchObject>>): Promise<void> {
    const caller = this.caller(request, reply);
    if (caller === undefined) return;
    const answer = await ask(caller.key);
    if (!answer.ok) return this.refuse(caller, answer);
    sendJson(caller.response, viewOf(batchId, answer.value, caller.base));
  }

  /** Node's response taken over and the key's form checked (401), no single-valued header twice (400). */
  private caller(request: LedgerRequest, reply: HttpResponse): Caller | undefined {
    const response = takeOverResponse(reply);
    const { requestId } = contextOf(request);
    const presented = presentedKeyOf(request.headers);
    const problem =
      this.gatewayBatches === undefined
        ? { status: 404, message: `Not found: ${request.method} ${request.url.split('?', 1)[0]}` }
        : !this.gatewayBatches.available
          ? { status: 404, message: unavailableMessage(this.gatewayBatches.providerName) }
          : presented.problem !== undefined
          ? { status: 401, message: presented.problem }
          : repeatedOnce(request);
    if (problem !== undefined) {
      incomingOf(request).resume();
      sendAnthropicError(response, problem.status, anthropicErrorTypeOf(problem.status), problem.message, requestId);
      return undefined;
    }
    return { response, requestId, key: presented.key!, base: baseOf(request) };
  }

  private refuse(caller: Caller, refusal: BatchRefusal): void {
    sendAnthropicError(caller.response, refusal.status, refusal.errorType, refusal.message, caller.requestId, refusal.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: refusal.retryAfterSeconds });
  }
}

function repeatedOnce(request: LedgerRequest): { readonly status: number; readonly message: string } | undefined {
  const repeated = repeatedHeaderProblem(request);
  return repeated === undefined ? undefined : { status: 400, message: repeated };
}

/** Where this request reached the batch routes: scheme, host and path up to `…/messages/batches`. */
function baseOf(request: LedgerRequest): string {
  const forwarded = request.headers['x-forwarded-proto'];
  const scheme = typeof forwarded === 'string' && /^https?$/.test(forwarded) ? forwarded : 'http';
  const path = request.url.split('?', 1)[0]!;
  const prefix = path.slice(0, path.indexOf(BATCHES_PATH) + BATCHES_PATH.length);
  return `${scheme}://${request.headers.host ?? 'localhost'}${prefix}`;
}

/** Upstream's batch object under the gateway's id, with the gateway's own results route. */
export function viewOf(batchId: string, upstream: UpstreamBatchObject, base: string): UpstreamBatchObject {
  return { ...upstream, id: batchId, results_url: upstream.results_url === null ? null : `${base}/${batchId}/results` };
}
