/**
 * The gateway benchmark's per-phase trace of llm-ledger's calls (bench/README.md "Where the 21 ms
 * go"): while on, the service probe follows the gateway's phase channel (markGatewayPhase in
 * src/gateway/gateway-http.channels.ts) and keeps each call's marks by request id; at the end, each
 * step between consecutive phases of the calls that went through all of them, in percentiles.
 * Request ids and times only: the channel carries nothing of a body.
 */
import { GATEWAY_PHASES, gatewayPhaseChannel, type GatewayPhaseMark } from '../../src/gateway/gateway-http.channels';
import { percentiles, type Percentiles } from './percentiles';

/** One step of a call, `from` → `to`, over the calls traced whole: milliseconds. */
export interface PhaseStep {
  readonly from: string;
  readonly to: string;
  readonly ms: Percentiles;
}

export interface PhaseTrace {
  /** Calls with every phase marked once, in order (the others: refused, count_tokens, cut by the window). */
  readonly calls: number;
  readonly steps: readonly PhaseStep[];
  /** arrived → caller_done, milliseconds. */
  readonly wholeMs: Percentiles;
}

export class PhaseTracer {
  private readonly marks = new Map<string, number[]>();
  private readonly onMark = (message: unknown): void => {
    const { requestId, phase, at } = message as GatewayPhaseMark;
    let times = this.marks.get(requestId);
    if (times === undefined) {
      if (phase !== 'arrived') return;
      this.marks.set(requestId, (times = []));
    }
    // A phase out of its place leaves the call incomplete (NaN), so it is not counted.
    times[GATEWAY_PHASES.indexOf(phase)] = times.length === GATEWAY_PHASES.indexOf(phase) ? at : NaN;
  };

  start(): void {
    this.marks.clear();
    gatewayPhaseChannel.subscribe(this.onMark);
  }

  stop(): PhaseTrace {
    gatewayPhaseChannel.unsubscribe(this.onMark);
    const whole = [...this.marks.values()].filter((times) => times.length === GATEWAY_PHASES.length && times.every(Number.isFinite));
    this.marks.clear();
    const steps = GATEWAY_PHASES.slice(1).map((to, index) => ({
      from: GATEWAY_PHASES[index]!,
      to,
      ms: percentiles(whole.map((times) => times[index + 1]! - times[index]!)),
    }));
    return { calls: whole.length, steps, wholeMs: percentiles(whole.map((times) => times[times.length - 1]! - times[0]!)) };
  }
}
