/** One POST of a delivery over undici, bounded in time; the answer's body is read and dropped. */
import type { LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { checkTarget, hasControlCharacter, type WebhookAddresses } from './webhook-address.policy';
import { systemWebhookResolver, type ResolvedAddress, type WebhookResolver } from './webhook-resolver';
import { MAX_ATTEMPT_ERROR_CHARS } from './webhook.bounds';

export interface SendResult {
  /** The HTTP status, when the receiver answered. */
  readonly statusCode?: number;
  /** Why there was no answer: a timeout, a refused address or a connection error, by its code (never a response body). */
  readonly error?: string;
}

export type WebhookSender = (url: string, body: string, headers: Readonly<Record<string, string>>, timeoutMs: number) => Promise<SendResult>;

/**
 * Sends with undici; a redirect is an answer like any other (not 2xx, so retried). Each attempt
 * judges the URL's host again (checkTarget: its name resolved through `resolver` now) and connects
 * only to an address so checked, whatever the name resolves to by the time the socket opens; Host and
 * TLS SNI stay the URL's name. A refused host is recorded as the attempt error (`address_not_public`,
 * or the lookup's error code) and retried like any other failure, without connecting anywhere.
 */
export function createHttpWebhookSender(addresses: WebhookAddresses, resolver: WebhookResolver = systemWebhookResolver): WebhookSender {
  return async (url, body, headers, timeoutMs) => {
    let target: URL;
    try {
      // A URL registered before control characters were refused is not sent either.
      if (hasControlCharacter(url)) return { error: 'invalid url' };
      target = new URL(url);
    } catch {
      return { error: 'invalid url' };
    }
    const signal = AbortSignal.timeout(timeoutMs);
    const checked = await checkTarget(target, addresses, resolver, signal);
    if (!checked.ok) return { error: checked.error };
    return post(target, checked.addresses, body, headers, signal);
  };
}

/** Sends to every address; the delivery worker's default when no sender is given (its own tests). */
export const httpWebhookSender: WebhookSender = createHttpWebhookSender('any');

/** A `lookup` for the socket that answers the checked addresses, whatever name it is asked for. */
function pinnedLookup(addresses: readonly ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all === true) callback(null, addresses.map(({ address, family }) => ({ address, family })));
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
}

async function post(
  target: URL,
  addresses: readonly ResolvedAddress[],
  body: string,
  headers: Readonly<Record<string, string>>,
  signal: AbortSignal,
): Promise<SendResult> {
  // One dispatcher per attempt: no connection outlives the check it was made under.
  const dispatcher = new Agent({ connect: { lookup: pinnedLookup(addresses) } });
  try {
    const response = await request(target, { method: 'POST', headers, body, dispatcher, signal });
    await response.body.dump().catch(() => undefined);
    return { statusCode: response.statusCode };
  } catch (error) {
    const code = signal.aborted ? 'timeout' : ((error as NodeJS.ErrnoException).code ?? (error as Error).name ?? 'error');
    return { error: String(code).slice(0, MAX_ATTEMPT_ERROR_CHARS) };
  } finally {
    await dispatcher.destroy().catch(() => undefined);
  }
}
