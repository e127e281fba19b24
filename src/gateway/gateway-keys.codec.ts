/**
 * Gateway key text (docs/gateway.md): `llk_` + the organization id (base64url) + `.` + 32 random bytes
 * (base64url). The organization in the key lets any instance find the key in that organization's
 * account stream, which is where revocation and spend limits are decided; the random part is the
 * secret. Only the SHA-256 of the whole key is ever kept.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ID_PATTERN, MAX_ID_CHARS } from '../domain/field-checks';

export const GATEWAY_KEY_PREFIX = 'llk_';
/** Random bytes in a key: 256 bits, so a fast hash is as safe to keep as a slow one. */
export const GATEWAY_KEY_SECRET_BYTES = 32;
/** Longest key text accepted from a caller, in characters (a longer one is not a key of ours). */
export const MAX_GATEWAY_KEY_CHARS = 512;

export function newGatewayKey(organizationId: string): string {
  return `${GATEWAY_KEY_PREFIX}${Buffer.from(organizationId, 'utf8').toString('base64url')}.${randomBytes(GATEWAY_KEY_SECRET_BYTES).toString('base64url')}`;
}

export function gatewayKeyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * The organization a key names, or undefined when the text is not shaped like a key or names no id an
 * organization could have (ID_PATTERN, at most MAX_ID_CHARS): such a key is unknown (401) before any
 * stream is named after it (issue 31, finding 7: an over-long one made a stream name past the store's
 * bound, a 500).
 */
export function organizationOfKey(key: string): string | undefined {
  if (key.length > MAX_GATEWAY_KEY_CHARS || !key.startsWith(GATEWAY_KEY_PREFIX)) return undefined;
  const dot = key.indexOf('.', GATEWAY_KEY_PREFIX.length);
  if (dot < 0 || key.length - dot - 1 < Math.ceil((GATEWAY_KEY_SECRET_BYTES * 4) / 3)) return undefined;
  const encoded = key.slice(GATEWAY_KEY_PREFIX.length, dot);
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return undefined;
  const organizationId = Buffer.from(encoded, 'base64url').toString('utf8');
  return organizationId.length <= MAX_ID_CHARS && ID_PATTERN.test(organizationId) ? organizationId : undefined;
}
