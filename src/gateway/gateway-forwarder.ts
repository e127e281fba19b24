/**
 * Sends gateway calls to Anthropic: one keep-alive connection pool to the upstream origin, with a
 * bounded number of sockets; the caller's body bytes as they arrived; only the headers Anthropic
 * needs, and the service's own key instead of the caller's. Every call in flight is cut when the
 * application shuts down. See docs/gateway.md.
 */
import { BeforeApplicationShutdown, Logger } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';
import type { Clock } from '../runtime/clock';
import { GatewayRelay, type RelayedCall, type RelayOptions } from './gateway-relay';

/** Most sockets open to the upstream origin at once; calls beyond them wait for one. */
export const MAX_UPSTREAM_CONNECTIONS = 256;
/** How long an idle upstream socket is kept for the next call, in ms (unless upstream says less). */
export const UPSTREAM_KEEP_ALIVE_MS = 30_000;
/** How long shutdown waits for the cut calls to be settled, in ms. */
export const MAX_SHUTDOWN_SETTLE_WAIT_MS = 10_000;

/** The request headers passed upstream as they came (the caller's key is never among them). */
const PASSED_HEADERS = ['anthropic-version', 'anthropic-beta', 'content-type'] as const;
/**
 * Asked of upstream for every call: the answer in no content coding. The relay reads each answer's
 * usage as it passes and holds its last event back by event boundaries; a compressed answer (an
 * upstream or proxy that compresses anyway) is decoded first (answer-encoding.ts), which costs CPU.
 */
const ACCEPT_ENCODING = 'identity';

export interface GatewayUpstream {
  /** Anthropic's base URL (`ANTHROPIC_BASE_URL`): an origin, and optionally a path prefix. */
  readonly baseURL: string;
  /** The service's own key (`ANTHROPIC_API_KEY`), sent as `x-api-key`. */
  readonly apiKey?: string;
}

export interface ForwardedCall extends RelayOptions {
  /** The Anthropic path (`/v1/messages`) and the caller's query string, as sent. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export class GatewayForwarder implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Gateway');
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly apiKey: string | undefined;
  /** Every call in flight, until upstream, its release and its caller are done. */
  private readonly inFlight = new Map<GatewayRelay, Promise<unknown>>();
  private closing = false;

  constructor(
    upstream: GatewayUpstream,
    private readonly clock: Clock,
  ) {
    const url = new URL(upstream.baseURL);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.apiKey = upstream.apiKey;
    this.pool = new Pool(url.origin, {
      connections: MAX_UPSTREAM_CONNECTIONS,
      keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS,
      keepAliveMaxTimeout: UPSTREAM_KEEP_ALIVE_MS,
      // The call's own time bound covers headers and body; undici's would cut a long stream short.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /** False when the service has no key of its own to call Anthropic with. */
  get configured(): boolean {
    return this.apiKey !== undefined;
  }

  /** True once shutdown began: no call is started any more. */
  get shuttingDown(): boolean {
    return this.closing;
  }

  /**
   * Forwards the call and relays its answer. The caller's last bytes wait for `release()`, which
   * whoever settles the call calls once `upstreamEnded` gave it the outcome and it settled.
   */
  forward(call: ForwardedCall): RelayedCall {
    const relay = new GatewayRelay(call, this.clock);
    const finished = relay.done.finally(() => this.inFlight.delete(relay));
    this.inFlight.set(relay, finished);
    relay.start((handler) => {
      this.pool.dispatch({ path: this.basePath + call.path, method: 'POST', headers: this.upstreamHeaders(call.headers), body: call.body }, handler);
    });
    return { upstreamEnded: relay.upstreamEnded, release: () => relay.release(), done: finished };
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    const pending = [...this.inFlight.values()];
    // Each call still reading upstream is cut (its usage unknown: charged its hold) and settled.
    for (const relay of this.inFlight.keys()) relay.stop('The service is shutting down.');
    if (pending.length > 0) this.logger.warn({ message: 'gateway calls cut by shutdown', calls: pending.length });
    let cancel: (() => void) | undefined;
    const waited = new Promise<void>((resolve) => (cancel = this.clock.setTimer(MAX_SHUTDOWN_SETTLE_WAIT_MS, resolve)));
    await Promise.race([Promise.allSettled(pending), waited]);
    cancel?.();
    await this.pool.destroy();
  }

  /** `x-api-key` (the service's), `accept-encoding`, then the passed headers, as a flat list (undici's cheapest form). */
  private upstreamHeaders(headers: IncomingHttpHeaders): string[] {
    const list = this.apiKey === undefined ? [] : ['x-api-key', this.apiKey];
    list.push('accept-encoding', ACCEPT_ENCODING);
    for (const name of PASSED_HEADERS) {
      const value = headers[name];
      if (value !== undefined) list.push(name, Array.isArray(value) ? value.join(',') : value);
    }
    return list;
  }
}
