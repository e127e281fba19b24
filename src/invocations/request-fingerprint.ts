import { createHmac } from 'node:crypto';

/** Length of a request fingerprint: HMAC-SHA256 in hex, in characters. */
export const REQUEST_FINGERPRINT_CHARS = 64;

/** The deployment's secret key of request fingerprints (see composition/idempotency-secret.provider.ts). */
export const IDEMPOTENCY_SECRET = Symbol('IDEMPOTENCY_SECRET');

/**
 * A keyed fingerprint of a request's operation and input (docs/http.md "Idempotency keys"): a repeat of
 * an idempotency key is recognised as the same request, or refused as another one, without the input
 * ever being stored. Keyed (HMAC) so that nobody reading the log can test a guessed input against it.
 * Objects are read with their keys in sorted order, so `{a,b}` and `{b,a}` are the same input.
 */
export function requestFingerprint(secret: Buffer, operationId: string, input: unknown): string {
  return createHmac('sha256', secret).update(JSON.stringify([operationId, canonical(input)])).digest('hex');
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) sorted[key] = canonical((value as Record<string, unknown>)[key]);
  return sorted;
}
