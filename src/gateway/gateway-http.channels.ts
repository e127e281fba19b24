/**
 * What the gateway's HTTP side publishes for the metrics, on a Node diagnostics channel: publishing
 * costs nothing while nobody listens, and the gateway imports no metrics library. The observability
 * module subscribes and counts (`ledger_gateway_calls_total`, `ledger_gateway_overhead_seconds`).
 */
import { channel } from 'node:diagnostics_channel';

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
 * A relay paused upstream because the caller's socket would take no more (`paused: true`), or resumed
 * it once the caller's socket drained (`paused: false`).
 */
export interface GatewayBackpressure {
  readonly requestId: string;
  readonly paused: boolean;
  /** What the response held unsent at that moment, in bytes. */
  readonly bufferedBytes: number;
}

export const gatewayBackpressureChannel = channel('llm-ledger:gateway-backpressure');

export function publishBackpressure(requestId: string, paused: boolean, bufferedBytes: number): void {
  if (!gatewayBackpressureChannel.hasSubscribers) return;
  const message: GatewayBackpressure = { requestId, paused, bufferedBytes };
  gatewayBackpressureChannel.publish(message);
}
