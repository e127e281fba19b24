import { createHash } from 'node:crypto';
import { newEventId } from '../event-store/event-id.generator';

/**
 * The invocation id. With an idempotency key it is derived from (organization, key), so a repeated
 * request lands on the same stream and finds the first one there; without a key it is a new
 * time-ordered UUID (v7): the streams of invocations in flight then sit together at the end of the
 * store's stream index, so a commit touches a few of its pages rather than one per invocation.
 */
export function invocationIdFor(organizationId: string, idempotencyKey: string | undefined): string {
  if (idempotencyKey === undefined) return newEventId();
  const hex = createHash('sha256').update(`${organizationId}\u0000${idempotencyKey}`).digest('hex');
  // Shaped like a name-based UUID (version 5 nibble, RFC 4122 variant) so ids look alike everywhere.
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
