/**
 * The seam between the gateway's HTTP side (the `/anthropic` routes: reading, forwarding, relaying)
 * and its accounting side (admission with the worst-case hold, settlement). The HTTP side never
 * decides money; the accounting side never touches a socket. See docs/gateway.md.
 */
import type { FaultClass } from '../runtime/faults';
import type { Usage } from '../runtime/provider.port';
import type { GatewayRejectionReason } from '../accounts/gateway-keys';

/**
 * What the hold needs to know of a Messages request body, read once by the HTTP side from the parsed
 * JSON; never the text itself.
 */
export interface MessagesBodyFacts {
  /** The body's length in UTF-8 bytes, as received. */
  readonly bodyBytes: number;
  readonly model: string;
  /** `max_tokens` as sent. */
  readonly maxTokens: number;
  readonly stream: boolean;
  /** Image content blocks anywhere in `messages` or `system` (tool results included). */
  readonly imageBlocks: number;
  /** Document (PDF, text) content blocks anywhere in the body. */
  readonly documentBlocks: number;
  /**
   * Each web-search server tool's `max_uses` (`undefined` where the tool sets none). Empty when the
   * request declares no web-search tool.
   */
  readonly webSearchMaxUses: readonly (number | undefined)[];
  /** Each web-fetch server tool's `max_uses` and `max_content_tokens`, where it sets them. */
  readonly webFetches: readonly WebFetchFacts[];
  /** Each code-execution server tool, by where it is in `tools`. */
  readonly codeExecutionTools: readonly ToolAt[];
  /** The MCP servers the request names (`mcp_servers`; else as many as its `mcp_toolset` tools). */
  readonly mcpServers: number;
  /**
   * Tools Anthropic defines (any `type` but `custom`: web search and fetch, code execution, bash, the
   * text editor, computer use, memory), each expanded upstream into a definition its bytes do not hold.
   */
  readonly definedTools: number;
  /** `speed` as asked (`fast`, `standard`), when the body says. */
  readonly speed?: string;
  /** `inference_geo` as asked, when the body says. */
  readonly inferenceGeo?: string;
  /** `metadata.user_id` as sent (bounded, opaque: docs/gateway.md "Who spent it"), when the body says one. */
  readonly userId?: string;
}

/** A web-fetch tool's own bounds, as the request sets them. */
export interface WebFetchFacts {
  readonly maxUses?: number;
  readonly maxContentTokens?: number;
}

/** A tool of the request: where it is (`tools[2]`) and its `type` (cut to `MAX_SHOWN_TOOL_TYPE_CHARS`). */
export interface ToolAt {
  readonly field: string;
  readonly type: string;
}

/** An Anthropic error type, as Anthropic's SDKs map it to their error classes. */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'billing_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

export interface GatewayCallRequest {
  /** The key the caller presented (`x-api-key`, or `Authorization: Bearer`). Never logged, never stored. */
  readonly presentedKey: string;
  readonly facts: MessagesBodyFacts;
  /** The `x-ledger-tags` header's tags (readCallTags), recorded on the call; absent or empty: none. */
  readonly tags?: readonly string[];
  /** The request id the gateway answers with (`request_id`), for the log line. */
  readonly requestId: string;
}

export type GatewayAdmission =
  | {
      readonly admitted: true;
      readonly invocationId: string;
      readonly organizationId: string;
      readonly keyId: string;
      readonly holdCredits: number;
      /** The call's time bound: the rate card's `attemptTimeoutMs`. */
      readonly attemptTimeoutMs: number;
    }
  | {
      readonly admitted: false;
      readonly status: 400 | 401 | 403 | 404 | 402 | 429;
      readonly errorType: AnthropicErrorType;
      /** The refusal's explanation with its figures (no key, no prompt). */
      readonly message: string;
      /** Present when the refusal was recorded in the log as an invocation. */
      readonly invocationId?: string;
      /** Present on 429: when a slot may be free again, in whole seconds. */
      readonly retryAfterSeconds?: number;
    };

/** How the one upstream attempt of an admitted call ended, as the HTTP side saw it. */
export interface GatewayCallOutcome {
  /** Clock time when the request was sent upstream (ms since epoch). */
  readonly startedAtMs: number;
  readonly durationMs: number;
  /** `ok`, or the fault class of the upstream answer (an error status or an `error` event mid-stream). */
  readonly classification: 'ok' | FaultClass;
  readonly httpStatus?: number;
  readonly providerRequestId?: string;
  /** The model upstream says served the call, when it said. */
  readonly responseModel?: string;
  /** Upstream's usage report (for a stream, `message_start` merged with the last `message_delta`); absent when it never reported. */
  readonly usage?: Usage;
  /**
   * The usage field upstream reported malformed (`output_tokens`, …; readUsageReport): the usage is
   * then unknown and `usage` absent. Its name only, never its value.
   */
  readonly malformedUsage?: string;
  /** The call ran out of its time bound (`attemptTimeoutMs`). */
  readonly timedOut: boolean;
  /** The caller went away before the answer was relayed to its end. */
  readonly callerDisconnected: boolean;
  /** The answer's `stop_reason`, when upstream gave one. */
  readonly stopReason?: string;
}

/** A model of the rate card, as `GET /anthropic/v1/models` lists it (Anthropic's ModelInfo shape). */
export interface GatewayModelInfo {
  readonly type: 'model';
  readonly id: string;
  readonly display_name: string;
  /** RFC 3339: when the model's first rate card version was written. */
  readonly created_at: string;
}

/** A call by a known key, refused before its hold (docs/gateway.md "Rejections before admission"). */
export interface GatewayRejection {
  readonly organizationId: string;
  readonly keyId: string;
  readonly reason: GatewayRejectionReason;
  /** The model the body asked for, when it could be read. */
  readonly model?: string;
  readonly requestId: string;
}

/** The 404's message for a model the rate card does not offer (absent, or not enabled), on every route that says it. */
export const modelNotOnRateCard = (model: string): string => `model: ${model} is not on this gateway's rate card`;

export type GatewayRefusal = Extract<GatewayAdmission, { admitted: false }>;

/** The accounting side of a gateway call, implemented by GatewayCalls (gateway-calls.service.ts). */
export interface GatewayAccounting {
  /**
   * Checks the presented key alone (unknown, revoked → 401), for the routes that hold nothing:
   * `count_tokens` is forwarded, the models list is answered from the rate card.
   */
  authenticate(presentedKey: string): Promise<{ readonly ok: true; readonly organizationId: string; readonly keyId: string } | GatewayRefusal>;
  /** The rate card's enabled models that the key may use, in id order. */
  models(presentedKey: string): Promise<{ readonly ok: true; readonly models: readonly GatewayModelInfo[] } | GatewayRefusal>;
  admit(request: GatewayCallRequest): Promise<GatewayAdmission>;
  /**
   * A call by a known key refused before its hold for what the HTTP side found (its body): counted on
   * the key and logged, as admit() counts its own refusals before the hold (docs/gateway.md).
   */
  noteRejection(rejection: GatewayRejection): void;
  /**
   * Settles the call at the outcome. A settlement the store could not take (it was unavailable) is
   * tried again in the background while the failure goes to the caller. `requestId`, when the HTTP
   * side settles, names the call's phase marks (markGatewayPhase).
   */
  settle(admission: Extract<GatewayAdmission, { admitted: true }>, outcome: GatewayCallOutcome, requestId?: string): Promise<void>;
}

export const GATEWAY_ACCOUNTING = Symbol('GATEWAY_ACCOUNTING');
