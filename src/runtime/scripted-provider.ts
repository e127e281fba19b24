/**
 * A Provider that plays a script: tests use it, and so do the offline demo model and the fault
 * simulator. Each request consumes the next step; a step is a response, a fault of any class, or a
 * function of the request that returns one. Latency is simulated on the injected clock and honours the
 * attempt signal the way a real adapter must (abort → the attempt ends now).
 */
import { isTimeoutReason, systemClock, type Clock } from './clock';
import { ProviderFault, type FaultClass } from './faults';
import type {
  Provider,
  ProviderRequest,
  ProviderResponse,
  SendOptions,
  StopReason,
  TextBlock,
  ToolUseBlock,
  Usage,
} from './provider.port';

/** A scripted answer. `model` defaults to the request's model. */
export interface ScriptedReply {
  readonly reply: Omit<ProviderResponse, 'model'> & { readonly model?: string };
  /** Simulated time (ms on the provider's clock) before the reply arrives. */
  readonly latencyMs?: number;
}

/** A scripted failure, thrown as a ProviderFault with these details. */
export interface ScriptedFault {
  readonly fault: FaultClass;
  readonly message?: string;
  readonly httpStatus?: number;
  readonly providerRequestId?: string;
  /** Usage the failed attempt reported (billed failures). */
  readonly usage?: Usage;
  readonly retryAfterMs?: number;
  readonly timedOut?: boolean;
  /** Simulated time before the fault arrives. */
  readonly latencyMs?: number;
}

/** What a step function learns about the request it answers. */
export interface ScriptedCall {
  /** 0-based index of this request among all the provider received. */
  readonly index: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

export type ScriptedOutcome = ScriptedReply | ScriptedFault;
export type ScriptedStep =
  | ScriptedOutcome
  | ((request: ProviderRequest, call: ScriptedCall) => ScriptedOutcome | Promise<ScriptedOutcome>);

/** One request as the provider received it. */
export interface ReceivedRequest {
  readonly request: ProviderRequest;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

export interface ScriptedProviderOptions {
  /** Clock for simulated latency; default the system clock. */
  readonly clock?: Clock;
  /** `routing.provider` name; default `scripted`. */
  readonly name?: string;
  /** Keep every request for assertions (default true); a benchmark turns it off. */
  readonly recordRequests?: boolean;
}

/** Builds a text reply (stop reason `end_turn` unless given). */
export function scriptedText(
  text: string,
  options: { readonly usage?: Usage; readonly stopReason?: StopReason; readonly latencyMs?: number } = {},
): ScriptedReply {
  const content: TextBlock[] = [{ type: 'text', text }];
  return { reply: { stopReason: options.stopReason ?? 'end_turn', content, usage: options.usage }, latencyMs: options.latencyMs };
}

/** Builds a reply requesting tool calls (stop reason `tool_use` unless given), optionally after some text. */
export function scriptedToolUse(
  calls: readonly { readonly id: string; readonly name: string; readonly input?: unknown }[],
  options: { readonly usage?: Usage; readonly stopReason?: StopReason; readonly latencyMs?: number; readonly text?: string } = {},
): ScriptedReply {
  const content: (TextBlock | ToolUseBlock)[] = [];
  if (options.text !== undefined) content.push({ type: 'text', text: options.text });
  for (const call of calls) content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input ?? {} });
  return { reply: { stopReason: options.stopReason ?? 'tool_use', content, usage: options.usage }, latencyMs: options.latencyMs };
}

/** Builds a fault step. */
export function scriptedFault(fault: FaultClass, details: Omit<ScriptedFault, 'fault'> = {}): ScriptedFault {
  return { fault, ...details };
}

function abortFault(signal: AbortSignal): ProviderFault {
  return isTimeoutReason(signal.reason)
    ? new ProviderFault('timeout', 'scripted attempt aborted by its timeout', { timedOut: true })
    : new ProviderFault('cancelled', 'scripted attempt cancelled');
}

export class ScriptedProvider implements Provider {
  readonly name: string;
  private readonly clock: Clock;
  private readonly steps: Iterator<ScriptedStep>;
  private readonly scriptLength: number | undefined;
  private readonly recordRequests: boolean;
  private readonly received: ReceivedRequest[] = [];
  private played = 0;

  /** `steps` may be an array or any iterable (a generator makes an endless model). */
  constructor(steps: Iterable<ScriptedStep>, options: ScriptedProviderOptions = {}) {
    this.steps = steps[Symbol.iterator]();
    this.scriptLength = Array.isArray(steps) ? steps.length : undefined;
    this.clock = options.clock ?? systemClock;
    this.name = options.name ?? 'scripted';
    this.recordRequests = options.recordRequests ?? true;
  }

  /** Every request received, in order (retries included), with the timeout and signal it came with. */
  get calls(): readonly ReceivedRequest[] {
    return this.received;
  }

  /** The requests alone. */
  get requests(): readonly ProviderRequest[] {
    return this.received.map((call) => call.request);
  }

  /** Steps consumed so far. */
  get stepsPlayed(): number {
    return this.played;
  }

  /** Steps left in an array script; undefined for other iterables. */
  get stepsLeft(): number | undefined {
    return this.scriptLength === undefined ? undefined : this.scriptLength - this.played;
  }

  async send(request: ProviderRequest, options: SendOptions): Promise<ProviderResponse> {
    const index = this.played;
    if (this.recordRequests) {
      // The caller may keep extending its transcript; keep the messages as they were when sent.
      this.received.push({ request: { ...request, messages: [...request.messages] }, timeoutMs: options.timeoutMs, signal: options.signal });
    }
    const next = this.steps.next();
    if (next.done === true) {
      // Not a ProviderFault on purpose: a script that runs out is a broken test, never a retryable fault.
      throw new Error(`ScriptedProvider "${this.name}" ran out of steps: request #${index + 1} has no step`);
    }
    this.played += 1;
    const step = next.value;
    // The signal is read only when there is something to abort: the runtime creates it on first read.
    const outcome =
      typeof step === 'function'
        ? await step(request, {
            index,
            timeoutMs: options.timeoutMs,
            get signal() {
              return options.signal;
            },
          })
        : step;
    if (outcome.latencyMs !== undefined && outcome.latencyMs > 0) {
      try {
        await this.clock.sleep(outcome.latencyMs, options.signal);
      } catch {
        throw abortFault(options.signal);
      }
    }
    if ('fault' in outcome) {
      throw new ProviderFault(outcome.fault, outcome.message ?? `scripted ${outcome.fault}`, {
        httpStatus: outcome.httpStatus,
        providerRequestId: outcome.providerRequestId,
        usage: outcome.usage,
        retryAfterMs: outcome.retryAfterMs,
        timedOut: outcome.timedOut,
      });
    }
    return { ...outcome.reply, model: outcome.reply.model ?? request.model };
  }
}
