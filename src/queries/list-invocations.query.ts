import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import {
  ATTRIBUTION_LISTINGS,
  attributionEntryId,
  attributionIndexKey,
  INVOCATION_LIST_PROJECTION,
  INVOCATION_LISTINGS,
  isListingKey,
  listingIndexKeys,
  listingKeyBefore,
  listingKeyMs,
  type InvocationListEntry,
} from '../../projections';
import { FieldChecks } from '../domain/field-checks';
import { MAX_CALL_TAG_CHARS, MAX_CALL_USER_ID_CHARS } from '../invocations/call-attribution';
import { INVOCATION_STATUSES, type InvocationStatus } from '../invocations/invocation.events';
import { LiveProjections, MAX_LIST_LIMIT, READ_MODEL_STORE, type SqliteReadModelStore } from '../projection-runner';
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
  /** Only gateway calls whose `metadata.user_id` was this (docs/gateway.md "Who spent it"). */
  readonly user?: string;
  /** Only gateway calls tagged with this (`x-ledger-tags`). */
  readonly tag?: string;
  /** Only gateway calls whose key was the team's when they were made. */
  readonly team?: string;
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
    const user = optional(filters.user, (value) => checks.text('user', value, MAX_CALL_USER_ID_CHARS));
    const tag = optional(filters.tag, (value) => checks.text('tag', value, MAX_CALL_TAG_CHARS));
    const team = optional(filters.team, (value) => checks.id('team', value));
    const from = fromMs === undefined ? undefined : Date.parse(fromMs);
    const to = toMs === undefined ? undefined : Date.parse(toMs);
    // Bound to the organization and every filter: another list's cursor would resume at the wrong place.
    const attributed = user !== undefined || tag !== undefined || team !== undefined;
    const scope = cursorScope('invocations', organizationId, [operationId, state, from, to, ...(attributed ? [user, tag, team] : [])]);
    const { limit, afterKey: cursorKey } = readPageRequest(checks, filters, INVOCATIONS_PAGE, scope, isListingKey);
    checks.throwIfAny();

    await catchUp(this.runner, [INVOCATION_LIST_PROJECTION]);
    // Start after the cursor, or after every entry at or past `to`, whichever is further on.
    const start = [cursorKey, to === undefined ? undefined : listingKeyBefore(to)].filter((key): key is string => key !== undefined).sort().at(-1);
    if (attributed) {
      const wanted = { organizationId, operationId, state, user, tag, team, from, limit };
      const { documents, nextCursor } = pageOf(this.scanAttribution(wanted, start), limit, scope);
      return { invocations: documents, nextCursor };
    }
    const keys = listingIndexKeys(organizationId, operationId ?? '', state ?? 'estimated');
    const [collection, indexKey] =
      operationId !== undefined && state !== undefined
        ? [INVOCATION_LISTINGS.operationState, keys.operationState]
        : operationId !== undefined
          ? [INVOCATION_LISTINGS.operation, keys.operation]
          : state !== undefined
            ? [INVOCATION_LISTINGS.state, keys.state]
            : [INVOCATION_LISTINGS.all, keys.all];
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

  /**
   * Up to `limit + 1` entries of a tag's, a user's or a team's listing (the first of these asked for)
   * after `start`, newest first, that pass every other filter. The listing serves its own filter; the
   * others are checked entry by entry, so such a page reads the tag's (user's, team's) calls from
   * `start` until it has its entries or passes `from`, reading MAX_LIST_LIMIT at a time (docs/http.md "Routes").
   */
  private scanAttribution(wanted: AttributionScan, start: string | undefined): { id: string; document: InvocationListEntry }[] {
    const { organizationId, user, tag, team, from, limit } = wanted;
    const [collection, value] = tag !== undefined ? [ATTRIBUTION_LISTINGS.tag, tag] : user !== undefined ? [ATTRIBUTION_LISTINGS.user, user] : [ATTRIBUTION_LISTINGS.team, team!];
    const indexKey = attributionIndexKey(organizationId, value);
    const found: { id: string; document: InvocationListEntry }[] = [];
    let afterId = start === undefined ? undefined : attributionEntryId(start, tag);
    for (;;) {
      const batch = this.store.list<InvocationListEntry>(INVOCATION_LIST_PROJECTION, collection, { indexKey, limit: MAX_LIST_LIMIT, ...(afterId === undefined ? {} : { afterId }) });
      for (const row of batch) {
        // A tag entry's id is its listing key, a newline and the tag: the key is what a cursor holds.
        const key = tag === undefined ? row.id : row.id.slice(0, row.id.length - tag.length - 1);
        if (from !== undefined && listingKeyMs(key) < from) return found;
        if (passes(row.document, wanted)) found.push({ id: key, document: row.document });
        if (found.length > limit) return found;
      }
      if (batch.length < MAX_LIST_LIMIT) return found;
      afterId = batch[batch.length - 1]!.id;
    }
  }
}

/** A tag's, a user's or a team's page as asked for: the listing's own filter, and the others checked entry by entry. */
interface AttributionScan {
  readonly organizationId: string;
  readonly operationId?: string;
  readonly state?: InvocationStatus;
  readonly user?: string;
  readonly tag?: string;
  readonly team?: string;
  readonly from?: number;
  readonly limit: number;
}

function passes(entry: InvocationListEntry, wanted: AttributionScan): boolean {
  return (
    (wanted.operationId === undefined || entry.operationId === wanted.operationId) &&
    (wanted.state === undefined || entry.state === wanted.state) &&
    (wanted.user === undefined || entry.gateway?.userId === wanted.user) &&
    (wanted.team === undefined || entry.gateway?.teamId === wanted.team)
  );
}

function endOfRange(rows: readonly { id: string }[], fromMs: number): number {
  const index = rows.findIndex((row) => listingKeyMs(row.id) < fromMs);
  return index === -1 ? rows.length : index;
}
