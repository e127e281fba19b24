/**
 * The read side's invariant: replaying the whole log into fresh projections gives exactly the live
 * read models (README.md "Invoicing"), and the live balances and invocation views say what the audit's
 * own fold says. Run when the node is quiet (between waves, after restarts, at the end), so both sides
 * stand at the same log position.
 */
import {
  ALL_PROJECTIONS,
  BALANCE_COLLECTION,
  BALANCES_PROJECTION,
  INVOCATION_COLLECTION,
  INVOCATIONS_PROJECTION,
  type StoredBalance,
  type InvocationView,
} from '../../projections';
import { compareReadModels, openReadModelStore, rebuildProjections } from '../projection-runner';
import type { LedgerNode } from './ledger-node';
import type { LogAudit, Violation } from './log-audit';
import { MAX_PRINTED_DIFFERENCES } from './simulation.bounds';

/** `committedHead`: on PostgreSQL, the log's committed head, which the live read models must reach first (a replay reads past it). */
export async function checkReadModels(node: LedgerNode, audit: LogAudit, committedHead?: bigint): Promise<Violation | undefined> {
  await node.runner.caughtUp();
  if (committedHead !== undefined) await node.runner.waitFor(committedHead);
  const scratch = openReadModelStore({ path: ':memory:' });
  try {
    await rebuildProjections({ eventStore: node.store, store: scratch, projections: ALL_PROJECTIONS });
    const comparison = compareReadModels({
      actual: node.readModels,
      expected: scratch,
      projections: ALL_PROJECTIONS.map((projection) => projection.name),
      maxDifferencesPerProjection: MAX_PRINTED_DIFFERENCES,
    });
    if (!comparison.equal) {
      const lines: string[] = [];
      const ids: string[] = [];
      for (const projection of comparison.projections.filter((entry) => !entry.equal)) {
        if (!projection.checkpointsEqual) {
          lines.push(`${projection.projection}: live checkpoint ${String(projection.actualCheckpoint?.position)}, replay ${String(projection.expectedCheckpoint?.position)}`);
        }
        for (const difference of projection.differences) {
          ids.push(difference.id);
          lines.push(`${projection.projection}/${difference.collection}/${difference.id}: live ${difference.actual ?? '(missing)'} — replay ${difference.expected ?? '(missing)'}`);
        }
      }
      return { invariant: 'read-models.replay-equals-live', detail: lines.join('\n'), ...streamsOf(audit, ids) };
    }
  } finally {
    scratch.close();
  }

  for (const account of audit.accounts.values()) {
    const view = node.readModels.get<StoredBalance>(BALANCES_PROJECTION, BALANCE_COLLECTION, account.organizationId);
    const expected = { granted: account.granted, adjustments: account.adjustments, held: account.held, charged: account.charged, available: account.available, running: account.running };
    const actual = view === undefined ? undefined : { granted: view.granted, adjustments: view.adjustments, held: view.held, charged: view.charged, available: view.available, running: view.running };
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      return {
        invariant: 'read-models.balance-equals-log',
        detail: `balance of ${account.organizationId}: read model ${JSON.stringify(actual)}, log ${JSON.stringify(expected)}`,
        streams: [account.stream],
        invocations: [],
      };
    }
  }
  for (const invocation of audit.invocations.values()) {
    const view = node.readModels.get<InvocationView>(INVOCATIONS_PROJECTION, INVOCATION_COLLECTION, invocation.invocationId);
    const charge = invocation.settlement?.charge ?? 0;
    if (view?.state !== invocation.status || view.charge !== charge) {
      return {
        invariant: 'read-models.invocation-equals-log',
        detail: `invocation ${invocation.invocationId}: read model ${view?.state ?? '(missing)'} charge ${String(view?.charge)}, log ${invocation.status} charge ${charge}`,
        streams: [invocation.stream],
        invocations: [invocation.invocationId],
      };
    }
  }
  return undefined;
}

/** Read-model documents are keyed by invocation, organization or operation id: back to their streams. */
function streamsOf(audit: LogAudit, ids: readonly string[]): Pick<Violation, 'streams' | 'invocations'> {
  const streams = new Set<string>();
  const invocations = new Set<string>();
  for (const id of ids) {
    const invocation = audit.invocations.get(id);
    if (invocation !== undefined) {
      streams.add(invocation.stream);
      invocations.add(id);
    } else if (audit.accounts.has(id)) streams.add(`account-${id}`);
    else streams.add(`operation-${id}`);
  }
  return { streams: [...streams], invocations: [...invocations] };
}
