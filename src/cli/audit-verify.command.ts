import { ALL_PROJECTIONS } from '../../projections';
import type { EventStore } from '../event-store/event-store.port';
import {
  openReadModelStore,
  verifyReadModel,
  type ProjectionCheckpoint,
  type Projection,
  type ReadModelComparison,
  type SqliteReadModelStore,
} from '../projection-runner';
import { EXIT_DIFFERENCES, EXIT_OK, writeLine, type CliIo } from './cli-io';
import { auditLedger, type LedgerDifference } from './ledger-audit';
import { progressReporter } from './progress';
import { countOf } from '../domain/wording';

/** Longest JSON text of a document quoted in a text-mode difference line, in characters. */
export const MAX_QUOTED_DOCUMENT_CHARS = 300;

/** A checkpoint as JSON: the position as decimal text (it is a bigint). */
export interface CheckpointJson {
  readonly version: number;
  readonly position: string | null;
}

/** A disagreement between a live read model and its rebuild from position 0. */
export type ReadModelDifference =
  | {
      readonly kind: 'projection_checkpoint';
      readonly projection: string;
      readonly live: CheckpointJson | null;
      readonly rebuilt: CheckpointJson | null;
    }
  | {
      readonly kind: 'projection_document';
      readonly projection: string;
      readonly collection: string;
      readonly id: string;
      /** The parsed document; null when it is missing on that side. */
      readonly live: unknown;
      readonly rebuilt: unknown;
      readonly liveIndexKey: string | null;
      readonly rebuiltIndexKey: string | null;
    }
  | {
      /** Differing documents beyond the reported bound (the count is exact). */
      readonly kind: 'projection_more_differences';
      readonly projection: string;
      readonly notShown: number;
    };

/** Everything `audit verify` can report. */
export type AuditDifference = ReadModelDifference | LedgerDifference;

export interface AuditVerifyOptions {
  readonly eventStore: EventStore;
  /** The live read models under audit; only read. */
  readonly readStore: SqliteReadModelStore;
  readonly io: CliIo;
  /** One JSON object per line instead of text. */
  readonly json: boolean;
  /** Default ALL_PROJECTIONS. */
  readonly projections?: readonly Projection[];
  /** See ProgressOptions.positionsCountEvents. */
  readonly positionsCountEvents?: boolean;
}

/** The outcome of an audit, for callers that want more than the exit code. */
export interface AuditVerifyResult {
  readonly exitCode: number;
  readonly differences: readonly AuditDifference[];
}

/**
 * `llm-ledger audit verify`: rebuilds every projection from position 0 into a scratch in-memory store
 * and compares it with the live read models, then audits the money (ledger-audit.ts). Prints one line
 * per difference and a summary on stdout; exits EXIT_DIFFERENCES when anything differs.
 */
export async function auditVerify(options: AuditVerifyOptions): Promise<AuditVerifyResult> {
  const projections = options.projections ?? ALL_PROJECTIONS;
  const progress = progressReporter(options.io, { label: 'audit verify', positionsCountEvents: options.positionsCountEvents ?? false });
  // Progress writes are chained, so lines keep their order and memory stays constant.
  let progressWrites = Promise.resolve();
  const scratch = openReadModelStore({ path: ':memory:' });
  let comparison: ReadModelComparison;
  try {
    comparison = await verifyReadModel({
      eventStore: options.eventStore,
      live: options.readStore,
      scratch,
      projections,
      // Progress only on a terminal: a log gains nothing from an audit's page-by-page lines.
      onProgress: options.io.interactive
        ? (page) => {
            progressWrites = progressWrites.then(() => progress.update(page));
          }
        : undefined,
    });
  } finally {
    scratch.close();
  }
  await progressWrites;
  await progress.finish();

  const ledger = await auditLedger({ eventStore: options.eventStore, readStore: options.readStore });
  const differences: AuditDifference[] = [...readModelDifferences(comparison), ...ledger.differences];
  for (const difference of differences) {
    await writeLine(options.io.stdout, options.json ? JSON.stringify(difference) : describeDifference(difference));
  }
  const summary = {
    kind: 'summary',
    differences: differences.length,
    projections: projections.length,
    organizations: ledger.organizations,
    invocations: ledger.invocations,
    events: ledger.events,
    headPosition: ledger.headPosition === undefined ? null : ledger.headPosition.toString(),
  };
  await writeLine(options.io.stdout, options.json ? JSON.stringify(summary) : auditSummaryLine(summary));
  return { exitCode: differences.length === 0 ? EXIT_OK : EXIT_DIFFERENCES, differences };
}

/** The closing line of `audit verify`: `audit verify: OK — 8 projections rebuilt and compared; 1 organization, …`. */
export function auditSummaryLine(summary: { differences: number; projections: number; organizations: number; invocations: number; events: number }): string {
  const checked =
    `${countOf(summary.projections, 'projection')} rebuilt and compared; ` +
    `${countOf(summary.organizations, 'organization')}, ${countOf(summary.invocations, 'invocation')}, ${countOf(summary.events, 'event')} audited`;
  return summary.differences === 0 ? `audit verify: OK — ${checked}.` : `audit verify: ${countOf(summary.differences, 'difference')} — ${checked}.`;
}

/** The read-model comparison as difference records. */
export function readModelDifferences(comparison: ReadModelComparison): ReadModelDifference[] {
  const differences: ReadModelDifference[] = [];
  for (const projection of comparison.projections) {
    if (!projection.checkpointsEqual) {
      differences.push({
        kind: 'projection_checkpoint',
        projection: projection.projection,
        live: checkpointJson(projection.actualCheckpoint),
        rebuilt: checkpointJson(projection.expectedCheckpoint),
      });
    }
    for (const document of projection.differences) {
      differences.push({
        kind: 'projection_document',
        projection: projection.projection,
        collection: document.collection,
        id: document.id,
        live: parsed(document.actual),
        rebuilt: parsed(document.expected),
        liveIndexKey: document.actualIndexKey ?? null,
        rebuiltIndexKey: document.expectedIndexKey ?? null,
      });
    }
    const notShown = projection.differenceCount - projection.differences.length;
    if (notShown > 0) differences.push({ kind: 'projection_more_differences', projection: projection.projection, notShown });
  }
  return differences;
}

/** One line a person reads. */
export function describeDifference(difference: AuditDifference): string {
  switch (difference.kind) {
    case 'projection_checkpoint':
      return `read model ${difference.projection}: live checkpoint ${checkpointText(difference.live)} != rebuilt ${checkpointText(difference.rebuilt)}`;
    case 'projection_document': {
      const keys =
        difference.liveIndexKey === difference.rebuiltIndexKey
          ? ''
          : ` (index key live ${String(difference.liveIndexKey)}, rebuilt ${String(difference.rebuiltIndexKey)})`;
      return `read model ${difference.projection} ${difference.collection}/${difference.id}: ${documentChanges(difference.live, difference.rebuilt)}${keys}`;
    }
    case 'projection_more_differences':
      return `read model ${difference.projection}: ${difference.notShown} more differing documents not shown`;
    case 'charges_total':
      return `organization ${difference.organizationId}: account charged ${difference.accountCharged} != ${difference.invocationCharges} charged by its settled invocations`;
    case 'hold_open_after_settlement':
      return `invocation ${difference.invocationId} (organization ${difference.organizationId}): settled at ${difference.chargeCredits} credits, but its account still holds ${difference.heldCredits} credits for it`;
    case 'hold_charge_mismatch':
      return `invocation ${difference.invocationId} (organization ${difference.organizationId}): account charged its hold ${difference.holdCharged} != invocation charge ${difference.invocationCharge}`;
    case 'hold_settled_before_invocation':
      return `invocation ${difference.invocationId} (organization ${difference.organizationId}): account settled its hold (charged ${difference.holdCharged}) but the invocation was not settled`;
    case 'hold_for_unknown_invocation':
      return `invocation ${difference.invocationId}: account of organization ${difference.organizationId} placed a hold for it, but no such invocation is open in that organization`;
    case 'settled_without_hold':
      return `invocation ${difference.invocationId} (organization ${difference.organizationId}): settled with ${difference.heldCredits} credits held, but its account held none for it`;
    case 'attempt_price':
      return `invocation ${difference.invocationId} (organization ${difference.organizationId}): attempt turn ${difference.turn} retry ${difference.retry} recorded at ${difference.recordedCredits} credits, but its usage costs ${difference.recomputedCredits < 0 ? 'nothing computable (invalid counts)' : `${difference.recomputedCredits} credits`} at its rate version`;
    case 'batch_result_price':
      return `message batch ${difference.batchId} (organization ${difference.organizationId}): request ${difference.customId} recorded at ${difference.recordedCredits} credits, but its result costs ${difference.recomputedCredits < 0 ? 'nothing computable' : `${difference.recomputedCredits} credits`} at its rate card version`;
    case 'charge_vs_attempts':
      return `invocation ${difference.invocationId} (organization ${difference.organizationId}): charged ${difference.chargeCredits} credits${difference.overrunCredits === undefined ? '' : ` with an overrun of ${difference.overrunCredits} on record`}, but its attempts cost ${difference.attemptCredits}`;
    case 'statement_credits':
      return `usage statement ${difference.organizationId} ${difference.day}: ${difference.statementCredits} credits, but its invocations were charged ${difference.invocationCharges} that day`;
    case 'balance_identity':
      return `balance ${difference.organizationId}: ${difference.rule} fails: stored ${difference.stored}, derived ${difference.derived}`;
    case 'balance_mismatch':
      return `balance ${difference.organizationId}: ${difference.field} is ${difference.readModel} in the read model, ${difference.accountStream} from the account stream`;
    case 'total_out_of_range': {
      const { granted, adjustments, charged, held } = difference.totals;
      return `organization ${difference.organizationId}: after its account's event ${difference.afterEvents} the totals leave the exact-integer range (granted ${granted}, adjustments ${adjustments}, charged ${charged}, held ${held}: a figure or a partial sum of available is past ±${Number.MAX_SAFE_INTEGER})`;
    }
    case 'balance_missing':
      return difference.missingFrom === 'read_model'
        ? `balance ${difference.organizationId}: the account stream exists but the read model has no balance`
        : `balance ${difference.organizationId}: the read model has a balance but there is no account stream`;
  }
}

function checkpointJson(checkpoint: ProjectionCheckpoint | undefined): CheckpointJson | null {
  if (checkpoint === undefined) return null;
  return { version: checkpoint.version, position: checkpoint.position === undefined ? null : checkpoint.position.toString() };
}

function checkpointText(checkpoint: CheckpointJson | null): string {
  if (checkpoint === null) return 'none';
  return `v${checkpoint.version} at ${checkpoint.position ?? 'nothing applied'}`;
}

function parsed(body: string | undefined): unknown {
  if (body === undefined) return null;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    // A row that is not JSON is itself the difference; show it as text.
    return body;
  }
}

/** The top-level fields that differ (`available: live 7 != rebuilt 8`), or the whole documents. */
function documentChanges(live: unknown, rebuilt: unknown): string {
  if (isRecord(live) && isRecord(rebuilt)) {
    const fields = [...new Set([...Object.keys(live), ...Object.keys(rebuilt)])].sort();
    const changed = fields.filter((field) => JSON.stringify(live[field]) !== JSON.stringify(rebuilt[field]));
    // Key order alone never makes a difference; when nothing top-level differs, show the documents.
    if (changed.length > 0) {
      return changed.map((field) => `${field}: live ${quoted(live[field] ?? null)} != rebuilt ${quoted(rebuilt[field] ?? null)}`).join('; ');
    }
  }
  return `live ${quoted(live)} != rebuilt ${quoted(rebuilt)}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function quoted(document: unknown): string {
  if (document === null) return 'missing';
  const text = JSON.stringify(document);
  return text.length <= MAX_QUOTED_DOCUMENT_CHARS ? text : `${text.slice(0, MAX_QUOTED_DOCUMENT_CHARS)}…`;
}
