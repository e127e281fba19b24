/** One POST of a delivery over node:http(s), bounded in time; the answer's body is read and dropped. */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { ADDRESS_NOT_PUBLIC, literalAddressAllowed, publicOnlyLookup, type WebhookAddresses } from './webhook-address.policy';
import { MAX_ATTEMPT_ERROR_CHARS } from './webhook.bounds';

export interface SendResult {
  /** The HTTP status, when the receiver answered. */
  readonly statusCode?: number;
  /** Why there was no answer: a timeout or a connection error, by its code (never a response body). */
  readonly error?: string;
}

export type WebhookSender = (url: string, body: string, headers: Readonly<Record<string, string>>, timeoutMs: number) => Promise<SendResult>;

/**
 * Sends with Node's own HTTP client; a redirect is an answer like any other (not 2xx, so retried).
 * Under the `public` address policy it connects only to public addresses: an address literal is
 * judged before connecting, a name through the addresses it resolves to (publicOnlyLookup); a refused
 * one is recorded as the attempt error `address_not_public`, and retried like any other failure.
 */
export function createHttpWebhookSender(addresses: WebhookAddresses): WebhookSender {
  return (url, body, headers, timeoutMs) =>
    new Promise((resolve) => {
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        resolve({ error: 'invalid url' });
        return;
      }
      if (!literalAddressAllowed(target, addresses)) {
        resolve({ error: ADDRESS_NOT_PUBLIC });
        return;
      }
      sendOnce(target, body, headers, timeoutMs, addresses === 'public' ? publicOnlyLookup : undefined, resolve);
    });
}

/** Sends to every address; the delivery worker's default when no sender is given (its own tests). */
export const httpWebhookSender: WebhookSender = createHttpWebhookSender('any');

function sendOnce(
  target: URL,
  body: string,
  headers: Readonly<Record<string, string>>,
  timeoutMs: number,
  lookup: LookupFunction | undefined,
  resolve: (result: SendResult) => void,
): void {
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const options = { method: 'POST', headers: { ...headers, 'Content-Length': Buffer.byteLength(body).toString() }, ...(lookup === undefined ? {} : { lookup }) };
  const request = send(target, options, (response) => {
    response.resume();
    response.on('end', () => resolve({ statusCode: response.statusCode ?? 0 }));
    response.on('error', () => resolve({ statusCode: response.statusCode ?? 0 }));
  });
  request.setTimeout(timeoutMs, () => request.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
  request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: (error.code ?? error.name ?? 'error').slice(0, MAX_ATTEMPT_ERROR_CHARS) }));
  request.end(body);
}
