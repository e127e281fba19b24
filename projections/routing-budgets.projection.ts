import type { OperationEvent, Routing } from '../src/catalog/operation.events';
import type { RecordedEvent } from '../src/event-store/event-store.port';
import type { Projection } from '../src/projection-runner';
import type { ConversationLimits, Prices } from '../src/runtime';
import { currentLedgerEvent } from '../src/upcasters/ledger.upcasters';
import { streamId } from './stream-names';

export const ROUTING_BUDGETS_PROJECTION = 'routing-budgets';
/** One document per operation (docs/http.md `GET /v1/operations/:operationId/publications`). */
export const ROUTING_BUDGETS_COLLECTION = 'operation';

/** One published version and the window it was in force. */
export interface RoutingBudgetVersion {
  readonly version: number;
  readonly routing: Routing;
  readonly limits: ConversationLimits;
  readonly prices: Prices;
  /** Integer credits held at admission. */
  readonly creditHold: number;
  readonly enabled: boolean;
  /** ISO-8601: when this version was published, the start of its window. */
  readonly from: string;
  /** ISO-8601: when the next version was published; absent for the version in force. */
  readonly until?: string;
}

/**
 * Every version of an operation, oldest first: its historical routing budgets (docs/http.md, `GET
 * …/publications`).
 */
export interface RoutingBudgetsView {
  readonly operationId: string;
  readonly versions: readonly RoutingBudgetVersion[];
}

type OperationRecordedEvent = RecordedEvent<OperationEvent['type']> & OperationEvent;

/**
 * Historical routing budgets, folded from the operation streams. A publication is immutable, so a
 * version's entry changes once only: when the next version closes its window. The document grows by
 * one entry per publication (a few hundred characters), within the store's MAX_DOCUMENT_CHARS for
 * thousands of versions.
 */
export const routingBudgetsProjection: Projection<OperationRecordedEvent> = {
  name: ROUTING_BUDGETS_PROJECTION,
  // 2: each version shows its complete rate version (1-hour writes, web searches, long context).
  version: 2,
  handles: ['OperationPublished'],
  apply(recorded, tx) {
    const event = currentLedgerEvent(recorded);
    const operationId = streamId(event.streamName, 'operation');
    if (operationId === undefined) return;
    const before = tx.get<RoutingBudgetsView>(ROUTING_BUDGETS_COLLECTION, operationId) ?? { operationId, versions: [] };
    const { version, routing, limits, prices, creditHold, enabled, publishedAt } = event.data;
    const previous = before.versions[before.versions.length - 1];
    // Versions only ever grow by one; anything else is a replayed or foreign event and changes nothing.
    if (previous !== undefined && version <= previous.version) return;
    const closed = previous === undefined ? [] : [...before.versions.slice(0, -1), { ...previous, until: publishedAt }];
    const entry: RoutingBudgetVersion = {
      version,
      routing: { ...routing },
      limits: { ...limits },
      prices: copyPrices(prices),
      creditHold,
      enabled,
      from: publishedAt,
    };
    const after: RoutingBudgetsView = { operationId, versions: [...closed, entry] };
    tx.put(ROUTING_BUDGETS_COLLECTION, operationId, after);
  },
};

function copyPrices(prices: Prices): Prices {
  const { longContext, ...rates } = prices;
  return longContext === undefined ? { ...rates } : { ...rates, longContext: { ...longContext } };
}
