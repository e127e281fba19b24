/**
 * Anthropic's Message Batches API as the gateway calls it, with the service's own key
 * (`ANTHROPIC_API_KEY`) at `ANTHROPIC_BASE_URL`, through Anthropic's SDK. The SDK retries nothing
 * here: the create is decided once (its hold is in place), and the poller retries with its own backoff.
 */
import Anthropic, { APIError } from '@anthropic-ai/sdk';

/** How long one call to the batches API may take, in ms (a results file may be large). */
export const BATCH_UPSTREAM_TIMEOUT_MS = 120_000;

/** The upstream's batch object, as Anthropic answers it. */
export interface UpstreamBatchObject {
  readonly id: string;
  readonly type: 'message_batch';
  readonly processing_status: 'in_progress' | 'canceling' | 'ended';
  readonly request_counts: Readonly<Record<'processing' | 'succeeded' | 'errored' | 'canceled' | 'expired', number>>;
  readonly ended_at: string | null;
  readonly created_at: string;
  readonly expires_at: string;
  readonly archived_at: string | null;
  readonly cancel_initiated_at: string | null;
  readonly results_url: string | null;
}

/** An upstream answer that was not a success: its status (undefined when none came) and Anthropic's error type. */
export class BatchUpstreamError extends Error {
  override readonly name = 'BatchUpstreamError';

  constructor(
    readonly status: number | undefined,
    readonly errorType: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

export interface BatchUpstream {
  readonly configured: boolean;
  create(requests: readonly { readonly custom_id: string; readonly params: unknown }[]): Promise<UpstreamBatchObject>;
  retrieve(upstreamBatchId: string): Promise<UpstreamBatchObject>;
  cancel(upstreamBatchId: string): Promise<UpstreamBatchObject>;
  delete(upstreamBatchId: string): Promise<void>;
  /** Each line of the results file, parsed, in order (fetchable as often as asked). */
  results(upstreamBatchId: string): AsyncIterable<unknown>;
}

export const BATCH_UPSTREAM = Symbol('BATCH_UPSTREAM');

export class AnthropicBatchUpstream implements BatchUpstream {
  private readonly client: Anthropic | undefined;

  constructor(options: { readonly baseURL: string; readonly apiKey?: string }) {
    this.client = options.apiKey === undefined ? undefined : new Anthropic({ apiKey: options.apiKey, baseURL: options.baseURL, maxRetries: 0, timeout: BATCH_UPSTREAM_TIMEOUT_MS });
  }

  get configured(): boolean {
    return this.client !== undefined;
  }

  create(requests: readonly { readonly custom_id: string; readonly params: unknown }[]): Promise<UpstreamBatchObject> {
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

function upstreamError(error: unknown): BatchUpstreamError {
  if (error instanceof APIError) {
    const body = error.error as { error?: { type?: unknown } } | undefined;
    const type = typeof body?.error?.type === 'string' ? body.error.type : undefined;
    return new BatchUpstreamError(error.status, type, error.message);
  }
  return new BatchUpstreamError(undefined, undefined, error instanceof Error ? error.message : String(error));
}
