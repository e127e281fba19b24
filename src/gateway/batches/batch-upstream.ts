/**
 * A provider's Message Batches API, as the gateway's batches call it (the optional `batches` of a
 * GatewayProvider, gateway-provider.port.ts; docs/gateway.md "Providers"). Whatever the upstream's own
 * shapes, a provider answers here in the shapes the `/anthropic` batch routes speak: Anthropic's batch
 * object, Anthropic's results lines (`{ custom_id, result: { type, message: { usage } } }`), and its
 * failures as BatchUpstreamError with Anthropic's error type. Anthropic's own is
 * `providers/anthropic/anthropic-batches.upstream.ts`.
 */

/** How long one call to the batches API may take, in ms (a results file may be large). */
export const BATCH_UPSTREAM_TIMEOUT_MS = 120_000;

/** The batch object, in Anthropic's shape (its `id` is the upstream's). */
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

/** One request of a create, as the caller sent it: its params a Messages body. */
export interface UpstreamBatchRequest {
  readonly custom_id: string;
  readonly params: unknown;
}

/**
 * An upstream answer that was not a success: its status (undefined when none came) and the error type
 * in Anthropic's terms (a provider translates its own), which the routes pass on in Anthropic's shape.
 */
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
  create(requests: readonly UpstreamBatchRequest[]): Promise<UpstreamBatchObject>;
  retrieve(upstreamBatchId: string): Promise<UpstreamBatchObject>;
  cancel(upstreamBatchId: string): Promise<UpstreamBatchObject>;
  delete(upstreamBatchId: string): Promise<void>;
  /** Each line of the results file, parsed, in Anthropic's results shape, in order (fetchable as often as asked). */
  results(upstreamBatchId: string): AsyncIterable<unknown>;
  /** One page of upstream's batches, newest first, after `afterId` (the last batch of the page before). */
  list(page: { readonly limit: number; readonly afterId?: string }): Promise<UpstreamBatchPage>;
}

/** A page of upstream's batch list: its batches, newest first, and whether older ones follow. */
export interface UpstreamBatchPage {
  readonly data: readonly UpstreamBatchObject[];
  readonly hasMore: boolean;
  readonly lastId: string | null;
}
