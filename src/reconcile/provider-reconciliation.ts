/**
 * Reconciliation of the ledger's attempts against a provider's own usage report: both sides summed
 * by model and time bucket, compared kind by kind. Reads the log only; writes nothing.
 */
import type { EventStore } from '../event-store/event-store.port';
import type { InvocationEvent } from '../invocations/invocation.events';
import type { ProviderName } from '../catalog/operation.events';
import { USAGE_KINDS, type Usage, type UsageKind } from '../runtime/provider.port';
import { addUsage, NO_USAGE } from '../runtime/usage';
import { currentLedgerEvent } from '../upcasters/ledger.upcasters';
import { GATEWAY_BATCH_STREAM_PREFIX, type GatewayBatchEvent } from '../gateway/batches/gateway-batch';

/** Events read from the log per page. */
export const RECONCILE_PAGE_EVENTS = 5_000;

export type BucketWidth = '1h' | '1d';
const BUCKET_MS: Readonly<Record<BucketWidth, number>> = { '1h': 3_600_000, '1d': 86_400_000 };

/** Usage of one model in one bucket: the bucket is its start, as an ISO-8601 instant ending in Z. */
export interface BucketUsage {
  readonly bucket: string;
  readonly model: string;
  readonly usage: Usage;
}

/** One kind of usage that differs in one bucket for one model. */
export interface UsageDifference {
  readonly bucket: string;
  readonly model: string;
  readonly kind: UsageKind;
  readonly ledger: number;
  readonly provider: number;
  /** ledger − provider. */
  readonly difference: number;
}

/** The start of the UTC bucket holding `ms`, as `YYYY-MM-DDTHH:00:00Z`. */
export function bucketOf(ms: number, width: BucketWidth): string {
  const start = Math.floor(ms / BUCKET_MS[width]) * BUCKET_MS[width];
  return `${new Date(start).toISOString().slice(0, 19)}Z`;
}

/** A report's bucket start in the same form (the report may write `…T00:00:00.000Z` or an offset). */
export function normaliseBucket(instant: string): string {
  const ms = Date.parse(instant);
  if (Number.isNaN(ms)) throw new RangeError(`not an instant: ${instant}`);
  return `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** What the ledger's side of a reconciliation counted. */
export interface LedgerUsage {
  readonly rows: BucketUsage[];
  readonly attempts: number;
  readonly truncatedInvocations: number;
  /** Message Batch results counted: succeeded with usage, their batch ended in the period. */
  readonly batchResults: number;
  /** Succeeded batch results without usage the gateway could read (charged their hold): not counted. */
  readonly unmeasuredBatchResults: number;
}

/** Sums usage by bucket and model, counting what it was given. */
class UsageSums {
  readonly byKey = new Map<string, BucketUsage>();
  attempts = 0;
  truncatedInvocations = 0;
  batchResults = 0;
  unmeasuredBatchResults = 0;

  constructor(private readonly options: { readonly fromMs: number; readonly toMs: number; readonly width: BucketWidth }) {}

  inPeriod(ms: number): boolean {
    return ms >= this.options.fromMs && ms < this.options.toMs;
  }

  add(atMs: number, model: string, usage: Usage): void {
    const bucket = bucketOf(atMs, this.options.width);
    const key = `${bucket}\n${model}`;
    this.byKey.set(key, { bucket, model, usage: addUsage(this.byKey.get(key)?.usage ?? NO_USAGE, usage) });
  }
}

/**
 * The usage of every attempt the ledger recorded for invocations routed to `provider` whose start
 * lies in [fromMs, toMs), summed by the model that answered and the bucket of the attempt's start;
 * and, for Anthropic, every Message Batch result's usage (batchUsage). Attempts past
 * MAX_RETAINED_ATTEMPTS have no record, so they cannot be placed in a bucket: their invocations are
 * counted in `truncatedInvocations` and the reader is told.
 */
export async function ledgerUsageByBucket(options: {
  readonly eventStore: EventStore;
  readonly provider: ProviderName;
  readonly fromMs: number;
  readonly toMs: number;
  readonly width: BucketWidth;
  readonly pageEvents?: number;
}): Promise<LedgerUsage> {
  const sums = new UsageSums(options);
  // Invocations routed to the provider and not yet finished: attempts only happen in between.
  const routed = new Set<string>();
  const head = await options.eventStore.headPosition();
  let after: bigint | undefined;
  while (head !== undefined && (after === undefined || after < head)) {
    const page = await options.eventStore.readAll({ ...(after === undefined ? {} : { after }), maxCount: options.pageEvents ?? RECONCILE_PAGE_EVENTS });
    if (page.length === 0) break;
    for (const recorded of page) {
      if (recorded.position > head) continue;
      if (options.provider === 'anthropic' && recorded.streamName.startsWith(GATEWAY_BATCH_STREAM_PREFIX)) batchUsage(sums, recorded as unknown as GatewayBatchEvent);
      if (recorded.streamName.startsWith('invocation-')) attemptUsage(sums, routed, recorded.streamName.slice('invocation-'.length), currentLedgerEvent(recorded) as unknown as InvocationEvent, options.provider);
    }
    after = page[page.length - 1]!.position;
  }
  const { attempts, truncatedInvocations, batchResults, unmeasuredBatchResults } = sums;
  return { rows: [...sums.byKey.values()], attempts, truncatedInvocations, batchResults, unmeasuredBatchResults };
}

function attemptUsage(sums: UsageSums, routed: Set<string>, invocationId: string, event: InvocationEvent, provider: ProviderName): void {
  switch (event.type) {
    case 'InvocationEstimated':
      if (event.data.publication?.routing.provider === provider) routed.add(invocationId);
      break;
    case 'AttemptRecorded': {
      const { usage, startedAtMs, model } = event.data;
      if (!routed.has(invocationId) || usage === undefined || !sums.inPeriod(startedAtMs)) break;
      sums.attempts += 1;
      sums.add(startedAtMs, model, usage);
      break;
    }
    case 'InvocationCompleted':
    case 'InvocationFailed':
      if (routed.has(invocationId) && event.data.attemptsTruncated) sums.truncatedInvocations += 1;
      routed.delete(invocationId);
      break;
    case 'InvocationRefused':
    case 'InvocationSettled':
      routed.delete(invocationId);
      break;
    default:
      break;
  }
}

/**
 * A Message Batch's results (docs/gateway.md "Message Batches"): each succeeded request's usage, as
 * charged at batch rates, under its model, in the bucket of the instant upstream ended the batch (its
 * `ended_at`; for results recorded before that was kept, when they were recorded). Anthropic's report
 * places each request where it ran, somewhere between the batch's creation and its end, so a batch
 * running across a bucket's edge differs between the two buckets by what ran before the edge.
 */
function batchUsage(sums: UsageSums, event: GatewayBatchEvent): void {
  if (event.type !== 'GatewayBatchResultsRecorded') return;
  const atMs = Date.parse(event.data.endedAt ?? event.data.recordedAt);
  if (!sums.inPeriod(atMs)) return;
  for (const result of event.data.results) {
    if (result.type !== 'succeeded') continue;
    if (result.usage === undefined) {
      sums.unmeasuredBatchResults += 1;
      continue;
    }
    sums.batchResults += 1;
    sums.add(atMs, result.model, result.usage);
  }
}

/**
 * Every (bucket, model, kind) where the two sides differ by more than `toleranceTokens`, ordered by
 * bucket, model and kind. A bucket or model one side lacks counts as zero usage there.
 */
export function compareUsage(ledger: readonly BucketUsage[], provider: readonly BucketUsage[], toleranceTokens = 0): UsageDifference[] {
  const sum = (rows: readonly BucketUsage[]): Map<string, BucketUsage> => {
    const byKey = new Map<string, BucketUsage>();
    for (const row of rows) {
      const key = `${row.bucket}\n${row.model}`;
      byKey.set(key, { bucket: row.bucket, model: row.model, usage: addUsage(byKey.get(key)?.usage ?? NO_USAGE, row.usage) });
    }
    return byKey;
  };
  const ours = sum(ledger);
  const theirs = sum(provider);
  const differences: UsageDifference[] = [];
  for (const key of [...new Set([...ours.keys(), ...theirs.keys()])].sort()) {
    const [bucket, model] = key.split('\n') as [string, string];
    const a = ours.get(key)?.usage ?? NO_USAGE;
    const b = theirs.get(key)?.usage ?? NO_USAGE;
    for (const kind of USAGE_KINDS) {
      const difference = a[kind] - b[kind];
      if (Math.abs(difference) > toleranceTokens) differences.push({ bucket, model, kind, ledger: a[kind], provider: b[kind], difference });
    }
  }
  return differences;
}
