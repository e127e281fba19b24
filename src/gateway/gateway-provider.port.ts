/**
 * The seam between the gateway's relay and the upstream it calls (docs/gateway.md "Providers"):
 * where a route's call goes upstream (path, headers, credential), how an answer is read for the
 * accounting as its bytes pass (usage, model, stop reason, where a stream's last event begins) and
 * how an upstream fault is classified. The relay, the forwarder and the routes know no upstream's
 * shapes; Anthropic's first-party API is the first provider (`providers/anthropic/`), chosen in
 * `providers/gateway-providers.ts`. The caller always speaks the route's API (Anthropic's Messages
 * API on `/anthropic`), whatever the upstream.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { LedgerConfig } from '../config/ledger.config';
import type { FaultClass } from '../runtime/faults';
import type { Usage } from '../runtime/provider.port';
import type { BatchUpstream } from './batches/batch-upstream';

/** A route's call, as the provider maps it upstream. */
export interface GatewayUpstreamCall {
  /** `messages` (held and settled) or `count_tokens` (forwarded only). */
  readonly route: 'messages' | 'count_tokens';
  /** The caller's query string as sent (`?beta=true`), or ''. */
  readonly query: string;
  /** The model the body asks for, when the route read it. */
  readonly model?: string;
  /** The body asks for a stream. */
  readonly stream?: boolean;
}

/** What an answer said that the accounting needs, once it ended. Never throws on what upstream sent. */
export interface GatewayAnswer {
  /** `ok`, or the fault the answer reports (an error status, an error event, a stream cut short). */
  readonly classification: 'ok' | FaultClass;
  /** Usage as reported, in the ledger's kinds; absent when it reported none or reported it malformed. */
  readonly usage?: Usage;
  /** The usage field reported malformed, by the upstream's own name for it. */
  readonly malformedUsage?: string;
  /** The model upstream says served the call. */
  readonly responseModel?: string;
  readonly stopReason?: string;
}

/** Reads one upstream answer as its decoded bytes pass through the relay. */
export interface GatewayAnswerReader {
  /** An event stream: relayed event by event; its last event is held back until the settlement. */
  readonly streamed: boolean;
  /** For a stream: true between events, so an error event may follow what was relayed. */
  readonly atEventBoundary: boolean;
  /** Reads a chunk; for a stream, where in it the last event begins (0 when it began earlier), else -1. */
  feed(chunk: Buffer): number;
  /** What the answer said, given its status. */
  read(status: number): GatewayAnswer;
}

/** An upstream answer outside 2xx, not streamed, whole and decoded, as the relay hands it to `errorAnswer`. */
export interface UpstreamErrorAnswer {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: Buffer;
  /** The request id the caller is given: upstream's (`requestIdHeader`), else the gateway's own. */
  readonly requestId: string;
}

/** An error answer's body as the caller gets it (its status is upstream's). */
export interface CallerErrorAnswer {
  readonly contentType: string | undefined;
  readonly body: Buffer;
}

export interface GatewayProvider {
  /** The provider's name, as the registry lists it. */
  readonly name: string;
  /** The upstream's base URL: an origin, and optionally a path prefix. */
  readonly baseURL: string;
  /** False when the service has no credential to call this upstream with. */
  readonly configured: boolean;
  /** The path (with the query) a route's call is sent to, under the base URL's path. */
  upstreamPath(call: GatewayUpstreamCall): string;
  /** The headers sent upstream, as undici's flat list: the service's credential and the caller's headers the upstream needs (never the caller's key). */
  upstreamHeaders(caller: IncomingHttpHeaders): string[];
  /** The upstream's request id header, relayed to the caller as `request-id` and recorded on the attempt. */
  readonly requestIdHeader: string;
  /** A reader for an answer with this status and content type. */
  answerReader(status: number, contentType: string | undefined): GatewayAnswerReader;
  /**
   * Upstream's error answer in the route's API's error shape (on `/anthropic`, Anthropic's:
   * `{type:"error",error:{type,message},request_id}`), so a caller's SDK maps it to its error class
   * whatever the upstream. Never throws. Anthropic's first-party API answers in that shape already:
   * its hook is the identity.
   */
  errorAnswer(answer: UpstreamErrorAnswer): CallerErrorAnswer;
  /**
   * The upstream's Message Batches API, in the shapes the batch routes speak (batches/batch-upstream.ts);
   * absent when the upstream has none: then every batch route answers 404 `not_found_error` saying so,
   * and no batch is polled.
   */
  readonly batches?: BatchUpstream;
}

/** Builds a provider from the ledger's configuration (its base URL and credential). */
export type GatewayProviderFactory = (config: LedgerConfig) => GatewayProvider;

/** The provider the gateway forwards to and calls batches on (GatewayProviderModule provides it from the registry). */
export const GATEWAY_PROVIDER = Symbol('GATEWAY_PROVIDER');
