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

/**
 * The usage of every attempt the ledger recorded for invocations routed to `provider` whose start
 * lies in [fromMs, toMs), summed by the model that answered and the bucket of the attempt's start.
 * Attempts past MAX_RETAINED_ATTEMPTS have no record, so they cannot be placed in a bucket: their
 * invocations are counted in `truncatedInvocations` and the reader is told.
 */
export async function ledgerUsageByBucket(options: {
  readonly eventStore: EventStore;
  readonly provider: ProviderName;
  readonly fromMs: number;
  readonly toMs: number;
  readonly width: BucketWidth;
  readonly pageEvents?: number;
}): Promise<{ readonly rows: BucketUsage[]; readonly attempts: number; readonly truncatedInvocations: number }> {
  const sums = new Map<string, BucketUsage>();
  // Invocations routed to the provider and not yet finished: attempts only happen in between.
  const routed = new Set<string>();
  let attempts = 0;
  let truncatedInvocations = 0;
  const head = await options.eventStore.headPosition();
  let after: bigint | undefined;
  while (head !== undefined && (after === undefined || after < head)) {
    const page = await options.eventStore.readAll({ ...(after === undefined ? {} : { after }), maxCount: options.pageEvents ?? RECONCILE_PAGE_EVENTS });
    if (page.length === 0) break;
    for (const recorded of page) {
      if (recorded.position > head || !recorded.streamName.startsWith('invocation-')) continue;
      const invocationId = recorded.streamName.slice('invocation-'.length);
      const event = currentLedgerEvent(recorded) as unknown as InvocationEvent;
      switch (event.type) {
        case 'InvocationEstimated':
          if (event.data.publication?.routing.provider === options.provider) routed.add(invocationId);
          break;
        case 'AttemptRecorded': {
          const { usage, startedAtMs, model } = event.data;
          if (!routed.has(invocationId) || usage === undefined || startedAtMs < options.fromMs || startedAtMs >= options.toMs) break;
          attempts += 1;
          const bucket = bucketOf(startedAtMs, options.width);
          const key = `${bucket}\n${model}`;
          sums.set(key, { bucket, model, usage: addUsage(sums.get(key)?.usage ?? NO_USAGE, usage) });
          break;
        }
        case 'InvocationCompleted':
        case 'InvocationFailed':
          if (routed.has(invocationId) && event.data.attemptsTruncated) truncatedInvocations += 1;
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
    after = page[page.length - 1]!.position;
  }
  return { rows: [...sums.values()], attempts, truncatedInvocations };
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
