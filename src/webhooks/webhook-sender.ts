/** One POST of a delivery over node:http(s), bounded in time; the answer's body is read and dropped. */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { MAX_ATTEMPT_ERROR_CHARS } from './webhook.bounds';

export interface SendResult {
  /** The HTTP status, when the receiver answered. */
  readonly statusCode?: number;
  /** Why there was no answer: a timeout or a connection error, by its code (never a response body). */
  readonly error?: string;
}

export type WebhookSender = (url: string, body: string, headers: Readonly<Record<string, string>>, timeoutMs: number) => Promise<SendResult>;

/** Sends with Node's own HTTP client; a redirect is an answer like any other (not 2xx, so retried). */
export const httpWebhookSender: WebhookSender = (url, body, headers, timeoutMs) =>
  new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      resolve({ error: 'invalid url' });
      return;
    }
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(target, { method: 'POST', headers: { ...headers, 'Content-Length': Buffer.byteLength(body).toString() } }, (response) => {
      response.resume();
      response.on('end', () => resolve({ statusCode: response.statusCode ?? 0 }));
      response.on('error', () => resolve({ statusCode: response.statusCode ?? 0 }));
    });
    request.setTimeout(timeoutMs, () => request.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
    request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: (error.code ?? error.name ?? 'error').slice(0, MAX_ATTEMPT_ERROR_CHARS) }));
    request.end(body);
  });
