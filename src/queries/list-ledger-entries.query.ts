import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { LEDGER_ENTRIES_PROJECTION, LEDGER_ENTRY_COLLECTION, type LedgerEntryView } from '../../projections';
import { FieldChecks } from '../domain/field-checks';
import { LiveProjections, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
import { cursorScope, pageOf, readPageRequest } from './list-cursor';
import { catchUp } from './read-model-catch-up';

/** Entries one page lists when the caller names no `limit`. */
export const DEFAULT_LEDGER_PAGE = 100;
/** Most entries one page may list. */
export const MAX_LEDGER_PAGE = 500;
const LEDGER_PAGE = { default: DEFAULT_LEDGER_PAGE, max: MAX_LEDGER_PAGE, unit: 'entries' } as const;

/** The two orders the ledger is listed in: the account's own (`oldest` first, the default) or `newest` first. */
export const LEDGER_ORDERS = ['oldest', 'newest'] as const;
export type LedgerOrder = (typeof LEDGER_ORDERS)[number];

export interface LedgerEntryFilters {
  readonly limit?: number;
  /** A cursor resumes the order it was returned in: pass the same `order` with it. */
  readonly cursor?: string;
  readonly order?: LedgerOrder;
}

export interface LedgerEntryPage {
  /** In the account's order, oldest first, or newest first when asked (`order`). */
  readonly entries: readonly LedgerEntryView[];
  readonly nextCursor: string | null;
}

/**
 * An organization's ledger entries, in order, paged (docs/http.md; README.md "Invoicing"). Trusted: no
 * caller check.
 */
export class ListLedgerEntriesQuery extends Query<LedgerEntryPage> {
  constructor(
    readonly organizationId: string,
    readonly filters: LedgerEntryFilters = {},
  ) {
    super();
  }
}

@QueryHandler(ListLedgerEntriesQuery)
export class ListLedgerEntriesHandler implements IQueryHandler<ListLedgerEntriesQuery, LedgerEntryPage> {
  constructor(
    private readonly runner: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
  ) {}

  async execute({ organizationId, filters }: ListLedgerEntriesQuery): Promise<LedgerEntryPage> {
    const checks = new FieldChecks();
    // A cursor names an entry of this organization only; another's would resume nowhere.
    const isKey = (key: string): boolean => key.startsWith(`${organizationId}\n`) && /\n\d{20}\.\d$/.test(key);
    const order = filters.order === undefined ? 'oldest' : checks.oneOf('order', filters.order, LEDGER_ORDERS);
    // Bound to the order too: a cursor continues the order it came with.
    const scope = cursorScope('ledger', organizationId, [order]);
    const { limit, afterKey: cursorKey } = readPageRequest(checks, filters, LEDGER_PAGE, scope, isKey);
    checks.throwIfAny();
    await catchUp(this.runner, [LEDGER_ENTRIES_PROJECTION]);
    const rows = this.store.list<LedgerEntryView>(LEDGER_ENTRIES_PROJECTION, LEDGER_ENTRY_COLLECTION, {
      indexKey: organizationId,
      limit: limit + 1,
      descending: order === 'newest',
      ...(cursorKey === undefined ? {} : { afterId: cursorKey }),
    });
    const { documents, nextCursor } = pageOf(rows, limit, scope);
    return { entries: documents, nextCursor };
  }
}
