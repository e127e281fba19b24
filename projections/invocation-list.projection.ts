import type { InvocationStatus } from '../src/invocations/invocation.events';
import type { Projection, ReadModelTx } from '../src/projection-runner';
import { INVOCATION_EVENT_TYPES } from '../src/invocations/invocation.events';
import { applyInvocationEvent, pickFields, type InvocationRecordedEvent, type InvocationView } from './invocations.projection';
import { streamId } from './stream-names';

export const INVOCATION_LIST_PROJECTION = 'invocation-list';

/**
 * The four listings of an organization's invocations (docs/http.md; README.md "Invoicing"), one
 * collection per filter that an index key can serve: all of them, by operation, by state, by operation
 * and state. A time range is served by the order itself. Each entry's id is its sort key, newest first.
 */
export const INVOCATION_LISTINGS = {
  all: 'by-organization',
  operation: 'by-operation',
  state: 'by-state',
  operationState: 'by-operation-state',
} as const;

/**
 * The listings of gateway calls by who they were for (docs/gateway.md "Who spent it"): by the team of
 * their key, by the calls' `metadata.user_id`, and by each of their tags. A call is listed under each of its tags, so a tag
 * entry's id is its sort key, a newline, and the tag (attributionEntryId).
 */
export const ATTRIBUTION_LISTINGS = {
  team: 'by-team',
  user: 'by-user',
  tag: 'by-tag',
} as const;

/** The index key of a user's or a tag's listing: the organization (which holds no newline), then the value. */
export function attributionIndexKey(organizationId: string, value: string): string {
  return `${organizationId}\n${value}`;
}

/** A listing key as the tag listing stores it: one entry per tag, each still in the listing's order. */
export function attributionEntryId(key: string, tag: string | undefined): string {
  return tag === undefined ? key : `${key}\n${tag}`;
}

/**
 * One invocation as the list shows it: what `GET /v1/invocations/:id` answers, without its counters.
 * The order is the stored documents' own, so a rebuild writes them byte for byte as before.
 */
export const INVOCATION_LIST_FIELDS = [
  'invocationId',
  'organizationId',
  'operationId',
  'gateway',
  'state',
  'publicationVersion',
  'estimate',
  'charge',
  'outcome',
  'refusalReason',
  'estimatedAt',
  'settledAt',
] as const satisfies readonly (keyof InvocationView)[];
export type InvocationListEntry = Pick<InvocationView, (typeof INVOCATION_LIST_FIELDS)[number]>;

/** The whole lifecycle view and its listing key, kept to fold the next event. */
const VIEW_COLLECTION = 'view';

interface FoldedInvocation {
  readonly view: InvocationView;
  readonly key: string;
}

/** Larger than any millisecond timestamp until the year 5138, so `MAX - ms` is never negative. */
const MAX_SORTABLE_MS = 99_999_999_999_999;
const SORT_KEY_DIGITS = 14;

/** A log position is a 64-bit unsigned integer: at most 20 digits. */
const MAX_POSITION = 18_446_744_073_709_551_615n;
const POSITION_DIGITS = 20;

/**
 * The entry's id in every listing: the inverted estimate time, then the inverted log position of its
 * InvocationEstimated (so ascending ids are newest first, ties in the same millisecond included), then
 * the invocation id. It never changes, so a cursor taken from it stays valid however the invocation
 * moves on or whatever is written meanwhile: pages never repeat or skip an entry.
 */
export function listingKey(estimatedAtMs: number, estimatedAtPosition: bigint, invocationId: string): string {
  const time = String(MAX_SORTABLE_MS - estimatedAtMs).padStart(SORT_KEY_DIGITS, '0');
  const position = (MAX_POSITION - estimatedAtPosition).toString().padStart(POSITION_DIGITS, '0');
  return `${time}:${position}:${invocationId}`;
}

/** True when `key` has the shape of a listing key. */
export function isListingKey(key: string): boolean {
  return /^\d{14}:\d{20}:[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(key);
}

/** The first key after every entry estimated at or after `toMs` (the range's exclusive end). */
export function listingKeyBefore(toMs: number): string {
  // '~' sorts after every id character, so entries at exactly toMs come before this key.
  return `${String(MAX_SORTABLE_MS - toMs).padStart(SORT_KEY_DIGITS, '0')}:~`;
}

/** The estimate time an entry key holds, in ms. */
export function listingKeyMs(key: string): number {
  return MAX_SORTABLE_MS - Number(key.slice(0, SORT_KEY_DIGITS));
}

/** Index keys of the four listings; a newline cannot occur in an id, so the parts never run together. */
export function listingIndexKeys(organizationId: string, operationId: string, state: InvocationStatus): Record<keyof typeof INVOCATION_LISTINGS, string> {
  return {
    all: organizationId,
    operation: `${organizationId}\n${operationId}`,
    state: `${organizationId}\n\n${state}`,
    operationState: `${organizationId}\n${operationId}\n${state}`,
  };
}

/**
 * Invocations per organization, listable by operation, state and time, newest first
 * (README.md "Invoicing").
 */
export const invocationListProjection: Projection<InvocationRecordedEvent> = {
  name: INVOCATION_LIST_PROJECTION,
  // 2: a gateway call's key and model. 3: its team, user and tags, and their listings.
  version: 3,
  handles: INVOCATION_EVENT_TYPES,
  apply(event, tx) {
    const invocationId = streamId(event.streamName, 'invocation');
    if (invocationId === undefined) return;
    const before = tx.get<FoldedInvocation>(VIEW_COLLECTION, invocationId);
    const after = applyInvocationEvent(before?.view, invocationId, event);
    if (after === undefined) return;
    const key = before?.key ?? listingKey(Date.parse(after.estimatedAt), event.position, invocationId);
    tx.put(VIEW_COLLECTION, invocationId, { view: after, key } satisfies FoldedInvocation);
    const entry = entryOf(after);
    // An attempt changes no listed field: the listings are written only when one changes.
    if (before !== undefined && sameEntry(entryOf(before.view), entry)) return;
    writeListings(tx, key, entry);
  },
};

function writeListings(tx: ReadModelTx, key: string, entry: InvocationListEntry): void {
  const indexKeys = listingIndexKeys(entry.organizationId, entry.operationId, entry.state);
  for (const listing of Object.keys(INVOCATION_LISTINGS) as (keyof typeof INVOCATION_LISTINGS)[]) {
    tx.put(INVOCATION_LISTINGS[listing], key, entry, { indexKey: indexKeys[listing] });
  }
  const { teamId, userId, tags } = entry.gateway ?? {};
  if (teamId !== undefined) tx.put(ATTRIBUTION_LISTINGS.team, key, entry, { indexKey: attributionIndexKey(entry.organizationId, teamId) });
  if (userId !== undefined) tx.put(ATTRIBUTION_LISTINGS.user, key, entry, { indexKey: attributionIndexKey(entry.organizationId, userId) });
  for (const tag of tags ?? []) tx.put(ATTRIBUTION_LISTINGS.tag, attributionEntryId(key, tag), entry, { indexKey: attributionIndexKey(entry.organizationId, tag) });
}

function entryOf(view: InvocationView): InvocationListEntry {
  return pickFields(view, INVOCATION_LIST_FIELDS);
}

function sameEntry(a: InvocationListEntry, b: InvocationListEntry): boolean {
  return a.state === b.state && a.charge === b.charge && a.outcome === b.outcome && a.refusalReason === b.refusalReason && a.settledAt === b.settledAt;
}
