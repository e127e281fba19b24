import { ValidationError } from '../domain/domain.errors';

/** Longest cursor accepted, in characters (a key of at most 1,000 characters, base64url-encoded). */
export const MAX_CURSOR_CHARS = 1_400;

/**
 * Cursors are opaque to clients: the base64url of the last key a page returned. A page resumes
 * strictly after it, and keys never change, so pages neither repeat nor skip an entry.
 */
export function encodeCursor(key: string): string {
  return Buffer.from(key, 'utf8').toString('base64url');
}

/** The key a cursor holds; a ValidationError naming `cursor` when it is not one this service made. */
export function decodeCursor(cursor: string, isKey: (key: string) => boolean): string {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    throw ValidationError.of('cursor', 'is not a cursor this list returned');
  }
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (encodeCursor(key) !== cursor || !isKey(key)) throw ValidationError.of('cursor', 'is not a cursor this list returned');
  return key;
}
