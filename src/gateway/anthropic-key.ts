/**
 * The key a caller presents to the gateway: `x-api-key: <key>` (what Anthropic's SDKs send for an API
 * key) or `Authorization: Bearer <key>` (for an auth token, as coding assistants send
 * `ANTHROPIC_AUTH_TOKEN`). Only its form is checked here; whether it is a key is the accounting's to
 * say. It is never sent upstream, logged or stored.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { MAX_GATEWAY_KEY_CHARS } from './gateway-keys.codec';

// Visible ASCII without spaces: what a key of any issuer is made of.
const KEY_FORM = /^[\x21-\x7e]+$/;
const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

export type PresentedKey = { readonly key: string; readonly problem?: undefined } | { readonly key?: undefined; readonly problem: string };

const MISSING: PresentedKey = { problem: 'x-api-key header is required' };
const MALFORMED: PresentedKey = { problem: 'invalid x-api-key' };

export function presentedKeyOf(headers: IncomingHttpHeaders): PresentedKey {
  const apiKey = headers['x-api-key'];
  if (apiKey !== undefined) return typeof apiKey === 'string' && wellFormed(apiKey) ? { key: apiKey } : MALFORMED;
  const authorization = headers.authorization;
  if (authorization === undefined) return MISSING;
  const bearer = BEARER.exec(authorization);
  return bearer !== null && wellFormed(bearer[1]!) ? { key: bearer[1]! } : MALFORMED;
}

function wellFormed(key: string): boolean {
  return key.length <= MAX_GATEWAY_KEY_CHARS && KEY_FORM.test(key);
}
