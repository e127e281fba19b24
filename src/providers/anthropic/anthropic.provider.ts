/**
 * The Anthropic adapter behind the runtime's provider port (src/providers/anthropic/README.md,
 * BR-CAP-PFM-LLM-002-12), built on `@anthropic-ai/sdk`. One `send` is one HTTP request: the SDK's own
 * retries are off, because every retry must be the runtime's and be recorded
 * (docs/rules.md rules 05–06).
 */
import Anthropic from '@anthropic-ai/sdk';
import { MAX_TIMER_DELAY_MS } from '../../runtime/clock';
import { ProviderFault } from '../../runtime/faults';
import type { Provider, ProviderRequest, ProviderResponse, SendOptions } from '../../runtime/provider.port';
import { toProviderFault } from './anthropic-error.mapper';
import { buildMessagesRequest } from './anthropic-request.builder';
import { mapMessageResponse } from './anthropic-response.mapper';

/** Where requests go when no base URL is configured. */
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** The SDK must not retry: an SDK retry would be a billed attempt the ledger never sees. */
const SDK_MAX_RETRIES = 0;

/** A sink for the SDK's own log lines (warnings only; see `logLevel` below). */
export interface AnthropicLogger {
  error(message: string, ...rest: unknown[]): void;
  warn(message: string, ...rest: unknown[]): void;
  info(message: string, ...rest: unknown[]): void;
  debug(message: string, ...rest: unknown[]): void;
}

/** How to reach the Messages API. */
export interface AnthropicProviderOptions {
  /** The API key. Secret: it is only ever sent as the SDK's auth header, never logged or put in a fault. */
  readonly apiKey: string;
  /**
   * The API's base URL (`ANTHROPIC_BASE_URL`), e.g. a local test server. Defaults to
   * ANTHROPIC_DEFAULT_BASE_URL; the environment is read once, by src/config/ledger.config.ts.
   */
  readonly baseURL?: string;
  /** Receives the SDK's warnings; defaults to the console. */
  readonly logger?: AnthropicLogger;
}

/**
 * `Provider` for `routing.provider: "anthropic"`. Construct it once per process and share it; each
 * `send` makes exactly one attempt within `options.timeoutMs` and throws only ProviderFault.
 *
 * ```ts
 * const provider = new AnthropicProvider({ apiKey, baseURL });
 * const response = await provider.send(request, { timeoutMs: 30_000, signal });
 * ```
 */
export class AnthropicProvider implements Provider {
  readonly name = 'anthropic';
  readonly #client: Anthropic;
  readonly #secrets: readonly string[];

  constructor(options: AnthropicProviderOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
      throw new Error('AnthropicProvider: an API key is required (ANTHROPIC_API_KEY)');
    }
    this.#secrets = [options.apiKey];
    this.#client = new Anthropic({
      apiKey: options.apiKey,
      // Explicit, so the SDK does not read ANTHROPIC_BASE_URL behind the configuration's back.
      baseURL: options.baseURL ?? ANTHROPIC_DEFAULT_BASE_URL,
      maxRetries: SDK_MAX_RETRIES,
      // Pinned: ANTHROPIC_LOG=debug would make the SDK print whole prompts, which no log may hold.
      logLevel: 'warn',
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  /**
   * Sends one Messages API request. The attempt ends at `timeoutMs` (fault `timeout`, `timedOut`) or
   * when `signal` fires (fault `cancelled`, or `timeout` when the signal's reason is a TimeoutError).
   * Both bound the whole exchange, body included, not only the wait for response headers.
   */
  async send(request: ProviderRequest, options: SendOptions): Promise<ProviderResponse> {
    const context = { attemptTimedOut: false, callerSignal: options.signal, secrets: this.#secrets };
    // The SDK accepts whole milliseconds only; rounding up never shortens the attempt's allowance.
    // Node fires a longer timer at once, so the allowance is capped at the longest one it can hold.
    const timeoutMs = Math.min(Math.ceil(options.timeoutMs), MAX_TIMER_DELAY_MS);
    if (options.signal.aborted) {
      throw toProviderFault(new Anthropic.APIUserAbortError(), context);
    }
    if (!(timeoutMs > 0)) {
      throw new ProviderFault('timeout', 'anthropic: no time left for the attempt', { timedOut: true });
    }

    const attempt = new AbortController();
    const timer = setTimeout(() => {
      context.attemptTimedOut = true;
      attempt.abort();
    }, timeoutMs);
    const forwardAbort = (): void => attempt.abort(options.signal.reason);
    options.signal.addEventListener('abort', forwardAbort, { once: true });
    try {
      const body = buildMessagesRequest(request);
      const { data, response, request_id } = await this.#client.messages
        .create(body, { timeout: timeoutMs, signal: attempt.signal, maxRetries: SDK_MAX_RETRIES })
        .withResponse();
      return mapMessageResponse(data, {
        requestedModel: request.model,
        httpStatus: response.status,
        providerRequestId: request_id ?? (data as { _request_id?: string | null })._request_id ?? undefined,
      });
    } catch (error) {
      throw toProviderFault(error, context);
    } finally {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', forwardAbort);
    }
  }
}
