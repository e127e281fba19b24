/**
 * Anthropic's Message Batches API as the gateway calls it (the Anthropic provider's `batches`,
 * docs/gateway.md "Message Batches"), with the service's own key (`ANTHROPIC_API_KEY`) at
 * `ANTHROPIC_BASE_URL`, through Anthropic's SDK. Its batch object and results lines are already in
 * the shapes the routes answer in, so they pass as they come. The SDK retries nothing here: the
 * create is decided once (its hold is in place), and the poller retries with its own backoff.
 */
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { BATCH_UPSTREAM_TIMEOUT_MS, BatchUpstreamError, type BatchUpstream, type UpstreamBatchObject, type UpstreamBatchPage, type UpstreamBatchRequest } from '../../batches/batch-upstream';

export class AnthropicBatchUpstream implements BatchUpstream {
  private readonly client: Anthropic | undefined;

  constructor(options: { readonly baseURL: string; readonly apiKey?: string }) {
    this.client = options.apiKey === undefined ? undefined : new Anthropic({ apiKey: options.apiKey, baseURL: options.baseURL, maxRetries: 0, timeout: BATCH_UPSTREAM_TIMEOUT_MS });
  }

  create(requests: readonly UpstreamBatchRequest[]): Promise<UpstreamBatchObject> {
    return this.call((client) => client.messages.batches.create({ requests } as unknown as Anthropic.Messages.BatchCreateParams));
  }

  retrieve(upstreamBatchId: string): Promise<UpstreamBatchObject> {
    return this.call((client) => client.messages.batches.retrieve(upstreamBatchId));
  }

  cancel(upstreamBatchId: string): Promise<UpstreamBatchObject> {
    return this.call((client) => client.messages.batches.cancel(upstreamBatchId));
  }

  async delete(upstreamBatchId: string): Promise<void> {
    await this.call((client) => client.messages.batches.delete(upstreamBatchId));
  }

  list(page: { readonly limit: number; readonly afterId?: string }): Promise<UpstreamBatchPage> {
    return this.call(async (client) => {
      const listed = await client.messages.batches.list({ limit: page.limit, ...(page.afterId === undefined ? {} : { after_id: page.afterId }) });
      return { data: listed.data, hasMore: listed.has_more, lastId: listed.last_id };
    });
  }

  async *results(upstreamBatchId: string): AsyncIterable<unknown> {
    const lines = await this.call((client) => client.messages.batches.results(upstreamBatchId));
    try {
      for await (const line of lines) yield line;
    } catch (error) {
      throw upstreamError(error);
    }
  }

  private async call<T>(send: (client: Anthropic) => PromiseLike<T>): Promise<T> {
    if (this.client === undefined) throw new BatchUpstreamError(undefined, undefined, 'ANTHROPIC_API_KEY is not set');
    try {
      return await send(this.client);
    } catch (error) {
      throw upstreamError(error);
    }
  }
}

/** The SDK's error as the batches' own: Anthropic's status and error type pass as they came. */
function upstreamError(error: unknown): BatchUpstreamError {
  if (error instanceof APIError) {
    const body = error.error as { error?: { type?: unknown } } | undefined;
    const type = typeof body?.error?.type === 'string' ? body.error.type : undefined;
    return new BatchUpstreamError(error.status, type, error.message);
  }
  return new BatchUpstreamError(undefined, undefined, error instanceof Error ? error.message : String(error));
}
