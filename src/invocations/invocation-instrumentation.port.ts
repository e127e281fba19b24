/**
 * How a run of an invocation is observed, as the core asks for it: the core calls this port, and the
 * observability room implements it with OpenTelemetry spans and the overhead timing
 * (`src/observability/invocation-telemetry.ts`). Without an implementation every call is a no-op, so
 * the core runs without observability. Nothing passed here carries a conversation body.
 */
import type { ToolLoopInput } from '../runtime/run-tool-loop';

/** What an invocation's observation is opened with. */
export interface InvocationInfo {
  readonly invocationId: string;
  readonly operationId: string;
  readonly organizationId: string;
}

/** What it is closed with: the invocation's summary figures. */
export interface InvocationEnd {
  readonly state: string;
  readonly outcome?: string;
  readonly refusalReason?: string;
  readonly charge: number;
}

/** One run's observation, from its start to its end or failure. */
export interface ObservedInvocation {
  /** Runs `body` inside the run's context (log lines written inside can name its trace). */
  within<T>(body: () => T): T;
  /** The conversation's input with its provider, tools and judges observed. */
  instrument(input: ToolLoopInput): ToolLoopInput;
  end(result: InvocationEnd): void;
  fail(error: unknown): void;
}

export interface InvocationInstrumentation {
  start(info: InvocationInfo): ObservedInvocation;
  /** Fields naming the current trace for a log line (none when nothing is traced). */
  traceFields(): { readonly traceId?: string; readonly spanId?: string };
}

/** The token the core injects its InvocationInstrumentation under (optional: UNOBSERVED without it). */
export const INVOCATION_INSTRUMENTATION = Symbol('INVOCATION_INSTRUMENTATION');

const UNOBSERVED_RUN: ObservedInvocation = {
  within: (body) => body(),
  instrument: (input) => input,
  end: () => undefined,
  fail: () => undefined,
};

/** Observes nothing: what the core uses when no instrumentation is provided. */
export const UNOBSERVED: InvocationInstrumentation = {
  start: () => UNOBSERVED_RUN,
  traceFields: () => ({}),
};
