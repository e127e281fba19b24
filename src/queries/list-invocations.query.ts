import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import {
  INVOCATION_LIST_PROJECTION,
  INVOCATION_LISTINGS,
  isListingKey,
  listingIndexKeys,
  listingKeyBefore,
  listingKeyMs,
  type InvocationListEntry,
} from '../../projections';
import { FieldChecks } from '../domain/field-checks';
import { INVOCATION_STATUSES, type InvocationStatus } from '../invocations/invocation.events';
import { LiveProjections, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
import { cursorScope, pageOf, readPageRequest } from './list-cursor';
import { catchUp } from './read-model-catch-up';

/** Invocations one page lists when the caller names no `limit`. */
export const DEFAULT_INVOCATIONS_PAGE = 100;
/** Most invocations one page may list (docs/http.md "Routes"). */
export const MAX_INVOCATIONS_PAGE = 500;
const INVOCATIONS_PAGE = { default: DEFAULT_INVOCATIONS_PAGE, max: MAX_INVOCATIONS_PAGE, unit: 'invocations' } as const;

export interface InvocationFilters {
  readonly operationId?: string;
  readonly state?: InvocationStatus;
  /** ISO-8601: only invocations estimated at or after it. */
  readonly from?: string;
  /** ISO-8601: only invocations estimated before it. */
  readonly to?: string;
  /** 1 to MAX_INVOCATIONS_PAGE; default DEFAULT_INVOCATIONS_PAGE. */
  readonly limit?: number;
  /** The `nextCursor` of the previous page. */
  readonly cursor?: string;
}

export interface InvocationPage {
  /** Newest first. */
  readonly invocations: readonly InvocationListEntry[];
  /** Pass it as `cursor` for the next page; null on the last page. */
  readonly nextCursor: string | null;
}

/**
 * An organization's invocations, newest first, filtered and paged (docs/embedding.md "The queries";
 * docs/http.md). Trusted: no caller check.
 */
export class ListInvocationsQuery extends Query<InvocationPage> {
  constructor(
    readonly organizationId: string,
    readonly filters: InvocationFilters = {},
  ) {
    super();
  }
}

@QueryHandler(ListInvocationsQuery)
export class ListInvocationsHandler implements IQueryHandler<ListInvocationsQuery, InvocationPage> {
  constructor(
    private readonly runner: LiveProjections,
    @Inject(READ_MODEL_STORE) private readonly store: SqliteReadModelStore,
  ) {}

  async execute({ organizationId, filters }: ListInvocationsQuery): Promise<InvocationPage> {
    const checks = new FieldChecks();
    const optional = <T>(value: T | undefined, read: (value: T) => T): T | undefined => (value === undefined ? undefined : read(value));
    const operationId = optional(filters.operationId, (value) => checks.id('operationId', value));
    const state = optional(filters.state, (value) => checks.oneOf('state', value, INVOCATION_STATUSES));
    const fromMs = optional(filters.from, (value) => checks.instant('from', value));
    const toMs = optional(filters.to, (value) => checks.instant('to', value));
    const from = fromMs === undefined ? undefined : Date.parse(fromMs);
    const to = toMs === undefined ? undefined : Date.parse(toMs);
    // Bound to the organization and every filter: another list's cursor would resume at the wrong place.
    const scope = cursorScope('invocations', organizationId, [operationId, state, from, to]);
    const { limit, afterKey: cursorKey } = readPageRequest(checks, filters, INVOCATIONS_PAGE, scope, isListingKey);
    checks.throwIfAny();

    await catchUp(this.runner, [INVOCATION_LIST_PROJECTION]);
    const keys = listingIndexKeys(organizationId, operationId ?? '', state ?? 'estimated');
    const [collection, indexKey] =
      operationId !== undefined && state !== undefined
        ? [INVOCATION_LISTINGS.operationState, keys.operationState]
        : operationId !== undefined
          ? [INVOCATION_LISTINGS.operation, keys.operation]
          : state !== undefined
            ? [INVOCATION_LISTINGS.state, keys.state]
            : [INVOCATION_LISTINGS.all, keys.all];
    // Start after the cursor, or after every entry at or past `to`, whichever is further on.
    const start = [cursorKey, to === undefined ? undefined : listingKeyBefore(to)].filter((key): key is string => key !== undefined).sort().at(-1);
    const rows = this.store.list<InvocationListEntry>(INVOCATION_LIST_PROJECTION, collection, {
      indexKey,
      limit: limit + 1,
      ...(start === undefined ? {} : { afterId: start }),
    });
    // Entries are newest first: the first one older than `from` ends the range.
    const inRange = from === undefined ? rows : rows.slice(0, endOfRange(rows, from));
    const { documents, nextCursor } = pageOf(inRange, limit, scope);
    return { invocations: documents, nextCursor };
  }
}

function endOfRange(rows: readonly { id: string }[], fromMs: number): number {
  const index = rows.findIndex((row) => listingKeyMs(row.id) < fromMs);
  return index === -1 ? rows.length : index;
}
