import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { LEDGER_ENTRIES_PROJECTION, LEDGER_ENTRY_COLLECTION, type LedgerEntryView } from '../../projections';
import { FieldChecks } from '../domain/field-checks';
import { LiveProjections, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
import { decodeCursor, encodeCursor } from './list-cursor';
import { catchUp } from './read-model-catch-up';

/** Entries one page lists when the caller names no `limit`. */
export const DEFAULT_LEDGER_PAGE = 100;
/** Most entries one page may list. */
export const MAX_LEDGER_PAGE = 500;

export interface LedgerEntryFilters {
  readonly limit?: number;
  readonly cursor?: string;
}

export interface LedgerEntryPage {
  /** In the account's order, oldest first. */
  readonly entries: readonly LedgerEntryView[];
  readonly nextCursor: string | null;
}

/** An organization's ledger entries, in order, paged (SPEC §9, §10). Trusted: no caller check. */
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
    const limit = filters.limit === undefined ? DEFAULT_LEDGER_PAGE : checks.integer('limit', filters.limit, { min: 1, max: MAX_LEDGER_PAGE, unit: 'entries' });
    checks.throwIfAny();
    // A cursor names an entry of this organization only; another's would resume nowhere.
    const cursorKey = filters.cursor === undefined ? undefined : decodeCursor(filters.cursor, (key) => key.startsWith(`${organizationId}\n`) && /\n\d{20}\.\d$/.test(key));
    await catchUp(this.runner, [LEDGER_ENTRIES_PROJECTION]);
    const rows = this.store.list<LedgerEntryView>(LEDGER_ENTRIES_PROJECTION, LEDGER_ENTRY_COLLECTION, {
      indexKey: organizationId,
      limit: limit + 1,
      ...(cursorKey === undefined ? {} : { afterId: cursorKey }),
    });
    const page = rows.slice(0, limit);
    return { entries: page.map((row) => row.document), nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.id) : null };
  }
}
