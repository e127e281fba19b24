/**
 * The path segment the gateway's routes are under (`/anthropic/v1/messages`): they answer in
 * Anthropic's shape and keep their paths as sent (configureHttp routes them apart).
 */
export const GATEWAY_ROUTE_PREFIX = 'anthropic';

/**
 * The path the HTTP API's routes are mounted under (LedgerModule's `http.prefix`), as a path: `''`
 * for none, else `/ledger`. Provided only when the API is mounted; the demo banner reads it so its
 * curl lines name the routes where they really are.
 */
export const HTTP_ROUTE_PREFIX = Symbol('HTTP_ROUTE_PREFIX');

/** `ledger`, `/ledger/` and `ledger/` → `/ledger`; nothing or `/` → `''`. */
export function routePrefixPath(prefix: string | undefined): string {
  const trimmed = (prefix ?? '').replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '' : `/${trimmed}`;
}
