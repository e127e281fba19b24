/**
 * Traces of an invocation, after the OpenTelemetry GenAI semantic conventions (README.md "Traces"), and the
 * timing behind `ledger_accounting_overhead_seconds`. Only `@opentelemetry/api`: without an SDK
 * registered (the library embedded, or the service with no `OTEL_*` export asked for) every span is
 * the API's no-op and costs next to nothing.
 *
 * Spans carry names, models, token counts, finish reasons and fault classes; never a prompt, a
 * message, tool arguments, tool results or the answer.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MAX_TOKENS,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_REQUEST_STREAM,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
  GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC,
} from '@opentelemetry/semantic-conventions/incubating';
import type { AttemptRecord } from '../runtime/conversation.types';
import { ProviderFault } from '../runtime/faults';
import { INPUT_USAGE_KINDS } from '../runtime/price-kinds';
import type { Provider, ProviderRequest, ProviderResponse, SendOptions, Usage } from '../runtime/provider.port';
import type { ToolLoopInput } from '../runtime/run-tool-loop';
import type { ToolContext, ToolSpec } from '../runtime/tool.types';
import { invocationOverheadChannel, type InvocationOverheadTiming } from '../domain/timing.channels';
import type { InvocationEnd, InvocationInfo, InvocationInstrumentation, ObservedInvocation } from '../invocations/invocation-instrumentation.port';
import type { GatewayAttempt } from '../gateway/gateway-http.channels';

/** The instrumentation scope of every span llm-ledger makes. */
export const TRACER_NAME = 'llm-ledger';

/** Attributes of the ledger's own (no GenAI convention names them). */
export const LEDGER_ATTRIBUTES = {
  organizationId: 'llm_ledger.organization.id',
  state: 'llm_ledger.invocation.state',
  outcome: 'llm_ledger.invocation.outcome',
  refusalReason: 'llm_ledger.invocation.refusal_reason',
  chargeCredits: 'llm_ledger.invocation.charge_credits',
  turn: 'llm_ledger.attempt.turn',
  retry: 'llm_ledger.attempt.retry',
  gatewayKeyId: 'llm_ledger.gateway.key_id',
  callerDisconnected: 'llm_ledger.gateway.caller_disconnected',
} as const;

/**
 * Time spent outside the ledger (provider calls, tool handlers, judges), counted once however many
 * overlap: the clock runs while at least one is in progress.
 */
class OutsideTime {
  private depth = 0;
  private since = 0;
  totalMs = 0;

  enter(): void {
    if (this.depth++ === 0) this.since = performance.now();
  }

  exit(): void {
    if (--this.depth === 0) this.totalMs += performance.now() - this.since;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/** The fault class of a provider failure, else the error's class name (a bounded set either way). */
function errorType(error: unknown): string {
  if (error instanceof ProviderFault) return error.classification;
  return error instanceof Error ? error.name : 'Error';
}

function usageAttributes(usage: Usage | undefined): Attributes {
  if (usage === undefined) return {};
  return {
    // The conventions count every input token here, cached ones included; the cache counts go beside it.
    // Every input kind of the price-kind table (1-hour cache writes included).
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: INPUT_USAGE_KINDS.reduce((sum, kind) => sum + usage[kind], 0),
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: usage.outputTokens,
    [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: usage.cacheWriteTokens + usage.cacheWrite1hTokens,
    [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: usage.cacheReadTokens,
  };
}

/**
 * One invocation's span and its children: `invoke_agent {operationId}` for the invocation, `chat
 * {model}` for each provider attempt, `execute_tool {name}` for each tool call. Children name their
 * parent explicitly, so the tree holds even where no context manager carries the active span.
 */
export class InvocationTelemetry implements ObservedInvocation {
  private readonly span: Span;
  private readonly spanContext: Context;
  private readonly startedAt = performance.now();
  private readonly outside = new OutsideTime();
  private retryWaitMs = 0;
  private ended = false;

  private constructor(private readonly info: InvocationInfo) {
    const tracer = trace.getTracer(TRACER_NAME);
    this.span = tracer.startSpan(`${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${info.operationId}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
        [ATTR_GEN_AI_AGENT_NAME]: info.operationId,
        [ATTR_GEN_AI_CONVERSATION_ID]: info.invocationId,
        [LEDGER_ATTRIBUTES.organizationId]: info.organizationId,
      },
    });
    this.spanContext = trace.setSpan(context.active(), this.span);
  }

  static start(info: InvocationInfo): InvocationTelemetry {
    return new InvocationTelemetry(info);
  }

  /** Runs `body` with the invocation span active (log lines written inside can name its trace). */
  within<T>(body: () => T): T {
    return context.with(this.spanContext, body);
  }

  /** The conversation's input with its provider, tools and judges traced and timed. */
  instrument(input: ToolLoopInput): ToolLoopInput {
    const onAttempt = input.onAttempt;
    return {
      ...input,
      provider: this.provider(input.provider),
      tools: input.tools.map((tool) => this.tool(tool)),
      ...(input.answerTool === undefined
        ? {}
        : { answerTool: { ...input.answerTool, judge: this.timed(input.answerTool.judge.bind(input.answerTool)) } }),
      ...(input.textJudge === undefined ? {} : { textJudge: this.timed(input.textJudge) }),
      onAttempt: (record: AttemptRecord, attemptNumber: number) => {
        // Retry waits are the policy's, not the ledger's: they leave the overhead.
        this.retryWaitMs += record.waitBeforeMs;
        return onAttempt?.(record, attemptNumber);
      },
    };
  }

  /** Closes the invocation span and reports the time the ledger itself took. */
  end(result: InvocationEnd): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttributes({
      [LEDGER_ATTRIBUTES.state]: result.state,
      [LEDGER_ATTRIBUTES.chargeCredits]: result.charge,
      ...(result.outcome === undefined ? {} : { [LEDGER_ATTRIBUTES.outcome]: result.outcome }),
      ...(result.refusalReason === undefined ? {} : { [LEDGER_ATTRIBUTES.refusalReason]: result.refusalReason }),
    });
    if (result.outcome === 'failed') this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
    this.reportOverhead();
  }

  /** Closes the invocation span for an invocation whose run threw. */
  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute(ATTR_ERROR_TYPE, errorType(error));
    this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }

  private reportOverhead(): void {
    if (!invocationOverheadChannel.hasSubscribers) return;
    const overheadMs = performance.now() - this.startedAt - this.outside.totalMs - this.retryWaitMs;
    const timing: InvocationOverheadTiming = { operationId: this.info.operationId, overheadMs: Math.max(0, overheadMs) };
    invocationOverheadChannel.publish(timing);
  }

  private provider(inner: Provider): Provider {
    const telemetry = this;
    return {
      name: inner.name,
      send(request: ProviderRequest, options: SendOptions): Promise<ProviderResponse> {
        return telemetry.chat(inner, request, options);
      },
    };
  }

  private async chat(inner: Provider, request: ProviderRequest, options: SendOptions): Promise<ProviderResponse> {
    const span = trace.getTracer(TRACER_NAME).startSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_CHAT} ${request.model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
          [ATTR_GEN_AI_PROVIDER_NAME]: inner.name,
          [ATTR_GEN_AI_REQUEST_MODEL]: request.model,
          [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: request.maxOutputTokens,
          [ATTR_GEN_AI_CONVERSATION_ID]: this.info.invocationId,
        },
      },
      this.spanContext,
    );
    this.outside.enter();
    try {
      const response = await inner.send(request, options);
      span.setAttributes({
        [ATTR_GEN_AI_RESPONSE_MODEL]: response.model,
        [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [response.stopReason],
        ...(response.providerRequestId === undefined ? {} : { [ATTR_GEN_AI_RESPONSE_ID]: response.providerRequestId }),
        ...usageAttributes(response.usage),
      });
      return response;
    } catch (error) {
      span.setAttribute(ATTR_ERROR_TYPE, errorType(error));
      if (error instanceof ProviderFault) span.setAttributes(usageAttributes(error.details.usage));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      this.outside.exit();
      span.end();
    }
  }

  private tool(tool: ToolSpec): ToolSpec {
    const handler = tool.handler;
    // No handler stays no handler: the loop answers such a call as unavailable (BR-15).
    if (handler === undefined) return tool;
    return {
      ...tool,
      handler: (input: unknown, toolContext: ToolContext) => this.executeTool(tool.name, toolContext.callId, () => handler.call(tool, input, toolContext)),
    };
  }

  private executeTool(name: string, callId: string, run: () => unknown): unknown {
    const span = trace.getTracer(TRACER_NAME).startSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
          [ATTR_GEN_AI_TOOL_NAME]: name,
          [ATTR_GEN_AI_TOOL_CALL_ID]: callId,
          [ATTR_GEN_AI_TOOL_TYPE]: 'function',
          [ATTR_GEN_AI_CONVERSATION_ID]: this.info.invocationId,
        },
      },
      this.spanContext,
    );
    const annotate = (error: unknown): void => {
      span.setAttribute(ATTR_ERROR_TYPE, errorType(error));
      span.setStatus({ code: SpanStatusCode.ERROR });
    };
    return this.outsideLedger(run, annotate, () => span.end());
  }

  /** Wraps a judge so its time counts outside the ledger. */
  private timed<A extends unknown[], R>(judge: (...args: A) => R): (...args: A) => R {
    return (...args: A) => this.outsideLedger(() => judge(...args), () => undefined, () => undefined) as R;
  }

  /**
   * Runs feature code outside the ledger's clock, keeping a synchronous result synchronous (the loop
   * reads such results at once). A throw or rejection is annotated, then passed on unchanged.
   */
  private outsideLedger(run: () => unknown, annotate: (error: unknown) => void, done: () => void): unknown {
    this.outside.enter();
    let value: unknown;
    try {
      value = run();
    } catch (error) {
      this.outside.exit();
      annotate(error);
      done();
      throw error;
    }
    if (!isThenable(value)) {
      this.outside.exit();
      done();
      return value;
    }
    return Promise.resolve(value).then(
      (resolved) => {
        this.outside.exit();
        done();
        return resolved;
      },
      (error: unknown) => {
        this.outside.exit();
        annotate(error);
        done();
        throw error;
      },
    );
  }
}

/**
 * A gateway call's one upstream attempt as the `chat {model}` span an operation's attempt makes, from
 * what the HTTP side published once the call ended (its times are the attempt's own). The body's
 * text is never published, so it cannot reach the span.
 */
export function gatewayChatSpan({ invocationId, organizationId, keyId, model, maxTokens, stream, outcome }: GatewayAttempt): void {
  const span = trace.getTracer(TRACER_NAME).startSpan(`${GEN_AI_OPERATION_NAME_VALUE_CHAT} ${model}`, {
    kind: SpanKind.CLIENT,
    startTime: outcome.startedAtMs,
    attributes: {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
      [ATTR_GEN_AI_PROVIDER_NAME]: GEN_AI_PROVIDER_NAME_VALUE_ANTHROPIC,
      [ATTR_GEN_AI_REQUEST_MODEL]: model,
      [ATTR_GEN_AI_REQUEST_MAX_TOKENS]: maxTokens,
      [ATTR_GEN_AI_REQUEST_STREAM]: stream,
      [ATTR_GEN_AI_CONVERSATION_ID]: invocationId,
      [LEDGER_ATTRIBUTES.organizationId]: organizationId,
      [LEDGER_ATTRIBUTES.gatewayKeyId]: keyId,
      [LEDGER_ATTRIBUTES.callerDisconnected]: outcome.callerDisconnected,
      ...(outcome.responseModel === undefined ? {} : { [ATTR_GEN_AI_RESPONSE_MODEL]: outcome.responseModel }),
      ...(outcome.stopReason === undefined ? {} : { [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: [outcome.stopReason] }),
      ...(outcome.providerRequestId === undefined ? {} : { [ATTR_GEN_AI_RESPONSE_ID]: outcome.providerRequestId }),
      ...usageAttributes(outcome.usage),
    },
  });
  if (outcome.classification !== 'ok') {
    span.setAttribute(ATTR_ERROR_TYPE, outcome.classification);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end(outcome.startedAtMs + outcome.durationMs);
}

/** The active span's trace and span ids, for a log line (nothing when no span is recording). */
export function activeTraceFields(): { readonly traceId?: string; readonly spanId?: string } {
  const span = trace.getActiveSpan();
  const spanContext = span?.spanContext();
  if (spanContext === undefined || !trace.isSpanContextValid(spanContext)) return {};
  return { traceId: spanContext.traceId, spanId: spanContext.spanId };
}

/** The core's InvocationInstrumentation port, implemented with the spans above (ObservabilityModule provides it). */
export const OPEN_TELEMETRY_INSTRUMENTATION: InvocationInstrumentation = {
  start: (info) => InvocationTelemetry.start(info),
  traceFields: activeTraceFields,
};
