import type { EventStore } from '../event-store/event-store.port';
import { AnthropicUsageReportClient, type UsageBucketWidth } from '../providers/anthropic/anthropic-usage-report';
import { compareUsage, ledgerUsageByBucket, normaliseBucket, type UsageDifference } from '../reconcile/provider-reconciliation';
import { EXIT_DIFFERENCES, EXIT_OK, writeLine, type CliIo } from './cli-io';
import { countOf } from '../domain/wording';

export interface ReconcileAnthropicOptions {
  readonly eventStore: EventStore;
  readonly io: CliIo;
  readonly adminApiKey: string;
  readonly baseURL?: string;
  /** First UTC day, `YYYY-MM-DD`, included. */
  readonly from: string;
  /** Last UTC day, `YYYY-MM-DD`, included. */
  readonly to: string;
  readonly bucket: UsageBucketWidth;
  readonly apiKeyId?: string;
  /** Largest difference per bucket, model and kind that is not reported, in tokens (or searches); 0: exact. */
  readonly toleranceTokens: number;
  readonly json: boolean;
}

const MS_PER_DAY = 86_400_000;

/**
 * `llm-ledger reconcile anthropic`: Anthropic's usage report for the period against the usage of the
 * attempts the ledger recorded for invocations routed to Anthropic and of the gateway's Message Batch
 * results, by model, bucket and kind.
 * Prints each difference past the tolerance and a summary; exit 1 when there is any.
 */
export async function reconcileAnthropic(options: ReconcileAnthropicOptions): Promise<{ exitCode: number; differences: readonly UsageDifference[] }> {
  const fromMs = Date.parse(`${options.from}T00:00:00Z`);
  const toMs = Date.parse(`${options.to}T00:00:00Z`) + MS_PER_DAY;
  const client = new AnthropicUsageReportClient({ adminApiKey: options.adminApiKey, ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }) });
  const reported = await client.read({
    startingAt: new Date(fromMs).toISOString(),
    endingAt: new Date(toMs).toISOString(),
    bucketWidth: options.bucket,
    ...(options.apiKeyId === undefined ? {} : { apiKeyId: options.apiKeyId }),
  });
  const ledger = await ledgerUsageByBucket({ eventStore: options.eventStore, provider: 'anthropic', fromMs, toMs, width: options.bucket });
  const provider = reported.map((row) => ({ ...row, bucket: normaliseBucket(row.bucket) }));
  const differences = compareUsage(ledger.rows, provider, options.toleranceTokens);

  const { io } = options;
  if (options.json) {
    for (const difference of differences) await writeLine(io.stdout, JSON.stringify({ record: 'usage_difference', ...difference }));
  } else if (differences.length > 0) {
    await writeTable(io, differences);
  }
  const summary = {
    period: `${options.from}..${options.to}`,
    bucket: options.bucket,
    ledgerAttempts: ledger.attempts,
    providerRows: reported.length,
    differences: differences.length,
    toleranceTokens: options.toleranceTokens,
    truncatedInvocations: ledger.truncatedInvocations,
    ledgerBatchResults: ledger.batchResults,
    unmeasuredBatchResults: ledger.unmeasuredBatchResults,
  };
  if (options.json) {
    await writeLine(io.stdout, JSON.stringify({ record: 'summary', ...summary }));
  } else {
    const verdict = differences.length === 0 ? 'OK — the ledger and Anthropic agree' : countOf(differences.length, 'difference');
    const tolerance = options.toleranceTokens === 0 ? 'exact' : `tolerance ${options.toleranceTokens}`;
    await writeLine(io.stdout, `reconcile anthropic: ${verdict} (${summary.period}, ${options.bucket} buckets, ${tolerance}; ${countOf(ledger.attempts, 'ledger attempt')}, ${countOf(ledger.batchResults, 'batch result')}, ${countOf(reported.length, 'report row')}).`);
  }
  if (ledger.truncatedInvocations > 0) {
    // Their attempts past the 64 retained have no record: the ledger side undercounts them.
    await writeLine(io.stderr, `reconcile anthropic: ${countOf(ledger.truncatedInvocations, 'invocation')} had attempts beyond the retained records; their usage is counted only as far as it was recorded.`);
  }
  if (ledger.unmeasuredBatchResults > 0) {
    // Charged their hold, their usage unknown: the ledger side cannot count them.
    await writeLine(io.stderr, `reconcile anthropic: ${countOf(ledger.unmeasuredBatchResults, 'batch result')} succeeded without usage the gateway could read; charged their hold, they are not counted.`);
  }
  return { exitCode: differences.length === 0 ? EXIT_OK : EXIT_DIFFERENCES, differences };
}

async function writeTable(io: CliIo, differences: readonly UsageDifference[]): Promise<void> {
  const header = ['bucket', 'model', 'kind', 'ledger', 'anthropic', 'difference'];
  const rows = differences.map((d) => [d.bucket, d.model, d.kind, String(d.ledger), String(d.provider), d.difference > 0 ? `+${d.difference}` : String(d.difference)]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const format = (row: readonly string[]): string =>
    row.map((cell, column) => (column >= 3 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ').trimEnd();
  await writeLine(io.stdout, format(header));
  for (const row of rows) await writeLine(io.stdout, format(row));
}
