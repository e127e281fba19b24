/**
 * What the gateway's HTTP side publishes for the metrics and traces, on Node diagnostics channels:
 * publishing costs nothing while nobody listens, and the gateway imports no metrics or tracing
 * library. The observability module subscribes: it counts (`ledger_gateway_calls_total`,
 * `ledger_gateway_overhead_seconds`) and makes each admitted call's `chat {model}` span.
 */
import { channel } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { GatewayAdmission, GatewayCallOutcome, MessagesBodyFacts } from './gateway-call.port';

/** One Messages call answered. */
export interface GatewayCallTiming {
  /** The admitted call's model (on the rate card: a bounded set), or NOT_ADMITTED_MODEL. */
  readonly model: string;
  /** The status the caller was answered with (upstream's, or the gateway's own). */
  readonly status: number;
  /**
   * The gateway's own time in the call, in seconds: from the request's arrival to its first byte
   * upstream, plus from the last byte from upstream to the last byte to the caller. Absent when the
   * call was not forwarded, or its answer did not reach the caller whole.
   */
  readonly overheadSeconds?: number;
}

/** The `model` of a call that was refused or never read: the caller's text is never a label. */
export const NOT_ADMITTED_MODEL = 'none';

export const gatewayCallChannel = channel('llm-ledger:gateway-call');

/** The message is made only while someone listens. */
export function publishGatewayCall(model: string, status: number, overheadSeconds?: number): void {
  if (!gatewayCallChannel.hasSubscribers) return;
  const timing: GatewayCallTiming = overheadSeconds === undefined ? { model, status } : { model, status, overheadSeconds };
  gatewayCallChannel.publish(timing);
}

/**
 * A relay dropped its caller (destroyed its socket): it would not take the answer within
 * MAX_CALLER_BUFFER_BYTES (`buffer`), nor the rest of it within CALLER_DRAIN_TIMEOUT_MS once the call
 * was settled (`drain_timeout`), or the service stopped (`stopped`). Upstream is read on regardless.
 */
export interface GatewayCallerDropped {
  readonly requestId: string;
  readonly reason: 'buffer' | 'drain_timeout' | 'stopped';
  /** What the response held unsent at that moment, in bytes. */
  readonly bufferedBytes: number;
}

export const gatewayCallerDroppedChannel = channel('llm-ledger:gateway-caller-dropped');

export function publishCallerDropped(requestId: string, reason: GatewayCallerDropped['reason'], bufferedBytes: number): void {
  if (!gatewayCallerDroppedChannel.hasSubscribers) return;
  const message: GatewayCallerDropped = { requestId, reason, bufferedBytes };
  gatewayCallerDroppedChannel.publish(message);
}

/**
 * An admitted call's one upstream attempt, once its settlement was tried: what its `chat {model}`
 * span shows (docs/gateway.md "Traces"). Figures and names only, never the body's text.
 */
export interface GatewayAttempt {
  readonly invocationId: string;
  readonly organizationId: string;
  readonly keyId: string;
  /** The model asked for, on the rate card. */
  readonly model: string;
  readonly maxTokens: number;
  readonly stream: boolean;
  readonly outcome: GatewayCallOutcome;
}

export const gatewayAttemptChannel = channel('llm-ledger:gateway-attempt');

export function publishGatewayAttempt(admission: Extract<GatewayAdmission, { admitted: true }>, facts: MessagesBodyFacts, outcome: GatewayCallOutcome): void {
  if (!gatewayAttemptChannel.hasSubscribers) return;
  const attempt: GatewayAttempt = {
    invocationId: admission.invocationId,
    organizationId: admission.organizationId,
    keyId: admission.keyId,
    model: facts.model,
    maxTokens: facts.maxTokens,
    stream: facts.stream,
    outcome,
  };
  gatewayAttemptChannel.publish(attempt);
}

/**
 * Where an admitted Messages call is, in order (bench/README.md "Where the 21 ms go"): arrived (the
 * request's first hook), its body read, its key found on the account, durable (estimated, held,
 * reserved and dispatched in one commit, fsynced), handed to the upstream pool, its request written to
 * a socket, upstream's first byte, upstream ended, its settlement begun, the invocation and its hold
 * settled (one commit), the caller done. A refused call stops where it was refused.
 */
export const GATEWAY_PHASES = [
  'arrived',
  'body_read',
  'key_checked',
  'durable',
  'upstream_sent',
  'upstream_written',
  'first_byte',
  'upstream_ended',
  'settling',
  'hold_settled',
  'caller_done',
] as const;
export type GatewayPhase = (typeof GATEWAY_PHASES)[number];

/** One call reached a phase: its request id and the phase's `performance.now()`, nothing else. */
export interface GatewayPhaseMark {
  readonly requestId: string;
  readonly phase: GatewayPhase;
  readonly at: number;
}

export const gatewayPhaseChannel = channel('llm-ledger:gateway-phase');

/** Opt-in per-phase timing: nothing is read or made unless someone listens (the gateway benchmark does). */
export function markGatewayPhase(requestId: string, phase: GatewayPhase, at?: number): void {
  if (!gatewayPhaseChannel.hasSubscribers) return;
  const mark: GatewayPhaseMark = { requestId, phase, at: at ?? performance.now() };
  gatewayPhaseChannel.publish(mark);
}
