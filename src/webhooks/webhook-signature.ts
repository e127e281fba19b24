/**
 * `Ledger-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>`
 * (README.md "Webhooks"). The timestamp is signed with the body, so a receiver can refuse old replays;
 * the secret never travels.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const DELIVERY_HEADER = 'Ledger-Delivery';
export const SIGNATURE_HEADER = 'Ledger-Signature';

/** A new webhook secret: 32 random bytes, hex, with a prefix that says what it is. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('hex')}`;
}

export function signatureOf(secret: string, unixSeconds: number, rawBody: string): string {
  return createHmac('sha256', secret).update(`${unixSeconds}.${rawBody}`).digest('hex');
}

/** The header value for a body sent at `unixSeconds`. */
export function signatureHeader(secret: string, unixSeconds: number, rawBody: string): string {
  return `t=${unixSeconds},v1=${signatureOf(secret, unixSeconds, rawBody)}`;
}

/** What a receiver does: true when the header's v1 signs `t.rawBody` with the secret. */
export function verifySignature(secret: string, header: string, rawBody: string): boolean {
  const parts = new Map(header.split(',').map((part) => part.split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1');
  if (!Number.isSafeInteger(t) || v1 === undefined || !/^[0-9a-f]{64}$/.test(v1)) return false;
  return timingSafeEqual(Buffer.from(v1, 'hex'), Buffer.from(signatureOf(secret, t, rawBody), 'hex'));
}
