import { ValidationError } from '../domain/domain.errors';
import type { FieldChecks } from '../domain/field-checks';

/** Longest cursor accepted, in characters (a key of at most 1,000 characters, base64url-encoded). */
export const MAX_CURSOR_CHARS = 1_400;
/** A cursor's characters: base64url, without padding. */
export const CURSOR_PATTERN = /^[A-Za-z0-9_-]+$/;

const NOT_A_CURSOR = 'is not a cursor this list returned';
const ANOTHER_LISTS_CURSOR = 'was returned by another list (another organization, filters or order)';

/**
 * What a cursor is bound to: the list, the organization and the filters (every one but `limit`) that
 * made the page. A cursor resumes only the list it came from: another organization's, another
 * list's or one read with other filters is refused (docs/http.md "Routes").
 */
export function cursorScope(list: string, organizationId: string, filters: readonly (string | number | undefined)[]): string {
  return JSON.stringify([list, organizationId, ...filters.map((filter) => filter ?? null)]);
}

/**
 * Cursors are opaque to clients: the base64url of the list's scope and the last key a page returned.
 * A page resumes strictly after that key, and keys never change, so pages neither repeat nor skip an entry.
 */
export function encodeCursor(scope: string, key: string): string {
  return Buffer.from(JSON.stringify([scope, key]), 'utf8').toString('base64url');
}

/**
 * The key a cursor holds; a ValidationError naming `cursor` when it is not one this service made, or
 * when another list (`scope`) made it.
 */
export function decodeCursor(cursor: string, scope: string, isKey: (key: string) => boolean): string {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS || !CURSOR_PATTERN.test(cursor)) throw ValidationError.of('cursor', NOT_A_CURSOR);
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  let parts: unknown;
  try {
    parts = JSON.parse(text);
  } catch {
    throw ValidationError.of('cursor', NOT_A_CURSOR);
  }
  if (!Array.isArray(parts) || parts.length !== 2 || typeof parts[0] !== 'string' || typeof parts[1] !== 'string') throw ValidationError.of('cursor', NOT_A_CURSOR);
  const [madeFor, key] = parts as [string, string];
  if (encodeCursor(madeFor, key) !== cursor || !isKey(key)) throw ValidationError.of('cursor', NOT_A_CURSOR);
  if (madeFor !== scope) throw ValidationError.of('cursor', ANOTHER_LISTS_CURSOR);
  return key;
}

/** How many entries a list's page holds: `limit` when the caller names none, at most `max`. */
export interface PageSize {
  readonly default: number;
  readonly max: number;
  /** What the list counts, for the error: `invocations`, `entries`. */
  readonly unit: string;
}

/** A page request as read: how many entries, and the key to resume strictly after. */
export interface PageRequest {
  readonly limit: number;
  readonly afterKey?: string;
}

/**
 * Reads a list query's `limit` and `cursor` into `checks` (call `checks.throwIfAny()` after), so a
 * bad limit and a bad cursor are reported together, each under its own field.
 */
export function readPageRequest(
  checks: FieldChecks,
  filters: { readonly limit?: number; readonly cursor?: string },
  size: PageSize,
  scope: string,
  isKey: (key: string) => boolean,
): PageRequest {
  const limit = filters.limit === undefined ? size.default : checks.integer('limit', filters.limit, { min: 1, max: size.max, unit: size.unit });
  if (filters.cursor === undefined) return { limit };
  try {
    return { limit, afterKey: decodeCursor(filters.cursor, scope, isKey) };
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    for (const issue of error.issues) checks.add(issue.field, issue.message);
    return { limit };
  }
}

/** The page out of `rows` listed with `limit + 1`, and the cursor of the next page (null on the last), bound to `scope`. */
export function pageOf<Document>(
  rows: readonly { readonly id: string; readonly document: Document }[],
  limit: number,
  scope: string,
): { readonly documents: Document[]; readonly nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { documents: page.map((row) => row.document), nextCursor: rows.length > limit ? encodeCursor(scope, page[page.length - 1]!.id) : null };
}
