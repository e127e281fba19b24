/**
 * Sends gateway calls upstream: one keep-alive connection pool to the provider's origin, with a
 * bounded number of sockets; the caller's body bytes as they arrived; where and with which headers
 * (the service's own credential instead of the caller's key) is the provider's (GatewayProvider).
 * Every call in flight is cut when the application shuts down. See docs/gateway.md.
 */
import { BeforeApplicationShutdown, Logger } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';
import type { Clock } from '../runtime/clock';
import type { GatewayProvider, GatewayUpstreamCall } from './gateway-provider.port';
import { GatewayRelay, type RelayedCall, type RelayOptions } from './gateway-relay';

/** Most sockets open to the upstream origin at once; calls beyond them wait for one. */
export const MAX_UPSTREAM_CONNECTIONS = 256;
/** How long an idle upstream socket is kept for the next call, in ms (unless upstream says less). */
export const UPSTREAM_KEEP_ALIVE_MS = 30_000;
/** How long shutdown waits for the cut calls to be settled, in ms. */
export const MAX_SHUTDOWN_SETTLE_WAIT_MS = 10_000;

/**
 * Asked of upstream for every call: the answer in no content coding. The relay reads each answer's
 * usage as it passes and holds its last event back by event boundaries; a compressed answer (an
 * upstream or proxy that compresses anyway) is decoded first (answer-encoding.ts), which costs CPU.
 */
const ACCEPT_ENCODING = 'identity';

export interface ForwardedCall extends RelayOptions {
  /** The route's call, which the provider maps to its upstream path. */
  readonly upstream: GatewayUpstreamCall;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export class GatewayForwarder implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Gateway');
  private readonly pool: Pool;
  private readonly basePath: string;
  /** Every call in flight, until upstream, its release and its caller are done. */
  private readonly inFlight = new Map<GatewayRelay, Promise<unknown>>();
  private closing = false;

  constructor(
    private readonly provider: GatewayProvider,
    private readonly clock: Clock,
  ) {
    const url = new URL(provider.baseURL);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: MAX_UPSTREAM_CONNECTIONS,
      keepAliveTimeout: UPSTREAM_KEEP_ALIVE_MS,
      keepAliveMaxTimeout: UPSTREAM_KEEP_ALIVE_MS,
      // The call's own time bound covers headers and body; undici's would cut a long stream short.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }

  /** False when the service has no credential of its own to call the upstream with. */
  get configured(): boolean {
    return this.provider.configured;
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
    const relay = new GatewayRelay(call, this.provider, this.clock);
    const finished = relay.done.finally(() => this.inFlight.delete(relay));
    this.inFlight.set(relay, finished);
    relay.start((handler) => {
      const path = this.basePath + this.provider.upstreamPath(call.upstream);
      this.pool.dispatch({ path, method: 'POST', headers: this.upstreamHeaders(call.headers), body: call.body }, handler);
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

  /** The provider's headers (its credential, the caller's it passes), then `accept-encoding`, as a flat list (undici's cheapest form). */
  private upstreamHeaders(headers: IncomingHttpHeaders): string[] {
    const list = this.provider.upstreamHeaders(headers);
    list.push('accept-encoding', ACCEPT_ENCODING);
    return list;
  }
}
