/**
 * One forwarded call, from its first byte upstream to the last byte to the caller: an undici dispatch
 * handler that relays upstream's answer as it arrives onto Node's own response, reads what the
 * accounting needs as the bytes pass, and says how the call ended (GatewayCallOutcome).
 *
 * - Backpressure: when the caller's socket will not take more (`write` returns false), upstream is
 *   paused until the response drains, so a slow caller costs a bounded buffer, never the answer.
 * - The time bound covers the whole call, the stream included. Past it, a call still waiting for
 *   upstream is aborted (`timedOut`); one whose caller is too slow to take the rest is ended.
 * - A caller that goes away: upstream is still read to its end (within the bound), so the outcome
 *   carries Anthropic's own usage (`callerDisconnected`).
 * See docs/gateway.md.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import { anthropicErrorEvidence, classifyAnthropicFault } from '../providers/anthropic/anthropic-error.mapper';
import { mapUsage } from '../providers/anthropic/anthropic-response.mapper';
import type { Clock } from '../runtime/clock';
import type { FaultClass } from '../runtime/faults';
import { anthropicErrorBody, INVOCATION_ID_HEADER, REQUEST_ID_HEADER, sendAnthropicError, STATUS_OF_ANTHROPIC_ERROR_TYPE } from './anthropic-error.body';
import type { AnthropicErrorType, GatewayCallOutcome } from './gateway-call.port';
import { publishBackpressure, publishGatewayCall } from './gateway-http.channels';
import { SseUsageReader } from './sse-usage.reader';

/**
 * Most of a non-streamed answer kept to read its `usage`, in bytes (an answer of 128k output tokens
 * is well under 2 MiB). A longer one is still relayed whole; only its usage goes unread.
 */
export const MAX_READ_ANSWER_BYTES = 8 * 1024 * 1024;

export interface RelayOptions {
  readonly response: ServerResponse;
  /** The whole call's time bound, from its first byte upstream to its last byte to the caller. */
  readonly timeoutMs: number;
  readonly requestId: string;
  /** Sent back as `llm-ledger-invocation-id`: the call was recorded as this invocation. */
  readonly invocationId?: string;
  /** `performance.now()` when the request arrived, for the overhead metric. */
  readonly arrivedAt: number;
  /** The metrics' `model` label; a call without one (count_tokens) is not counted. */
  readonly metricsModel?: string;
}

type UpstreamFailure = Extract<FaultClass, 'timeout' | 'connection' | 'cancelled'>;

/** Why the gateway ended an upstream exchange itself. */
class RelayStopped extends Error {
  constructor(readonly failure: UpstreamFailure, message: string) {
    super(message);
  }
}

/** What the caller reads when upstream failed before its answer began. */
const OWN_ANSWER_OF_FAILURE: Readonly<Record<UpstreamFailure, { readonly status: number; readonly type: AnthropicErrorType }>> = {
  // 504 timeout_error: Anthropic's SDKs read it as a timeout and retry it, each retry a call of its own.
  timeout: { status: 504, type: 'timeout_error' },
  connection: { status: 502, type: 'api_error' },
  cancelled: { status: 503, type: 'api_error' },
};

export class GatewayRelay implements Dispatcher.DispatchHandler {
  /** Resolves once upstream and the caller are both done with the call; never rejects. */
  readonly done: Promise<GatewayCallOutcome>;
  private resolveDone!: (outcome: GatewayCallOutcome) => void;
  private controller: Dispatcher.DispatchController | undefined;
  private stopped: RelayStopped | undefined;
  private cancelTimer: (() => void) | undefined;
  private status = 0;
  private providerRequestId: string | undefined;
  private sse: SseUsageReader | undefined;
  private kept: Buffer[] | undefined = [];
  private keptBytes = 0;
  /** The non-streamed answer was longer than MAX_READ_ANSWER_BYTES: relayed, its usage unread. */
  private answerTooLong = false;
  private startedAtMs = 0;
  private sentAt = 0;
  private upstreamEndedAtMs = 0;
  private upstreamEndedAt = 0;
  private failure: UpstreamFailure | undefined;
  private upstreamDone = false;
  private callerDone = false;
  private callerGone = false;
  private answeredStatus = 0;

  constructor(
    private readonly options: RelayOptions,
    private readonly clock: Clock,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** Starts the call: `send` hands this handler to the upstream dispatcher. */
  start(send: (handler: Dispatcher.DispatchHandler) => void): void {
    const { response } = this.options;
    const clock = this.clock;
    this.startedAtMs = clock.now();
    this.sentAt = performance.now();
    this.cancelTimer = clock.setTimer(this.options.timeoutMs, this.onTimeout);
    response.on('drain', this.onDrain);
    response.once('close', this.onCallerClose);
    // The caller left while the call was being admitted: it is still made, and read to its end.
    if (response.destroyed) this.callerGone = true;
    send(this);
  }

  /** Ends the call now (the service is shutting down): upstream is aborted, the outcome `cancelled`. */
  stop(message: string): void {
    this.halt(new RelayStopped('cancelled', message));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.stopped !== undefined) controller.abort(this.stopped);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (this.upstreamDone || statusCode < 200) return;
    this.status = statusCode;
    this.providerRequestId = textOf(headers[REQUEST_ID_HEADER]);
    const contentType = textOf(headers['content-type']);
    if (statusCode < 300 && contentType !== undefined && contentType.startsWith('text/event-stream')) {
      this.sse = new SseUsageReader();
      this.kept = undefined;
    }
    if (this.callerGone) return;
    const response = this.options.response;
    response.statusCode = statusCode;
    this.answeredStatus = statusCode;
    if (contentType !== undefined) response.setHeader('content-type', contentType);
    if (this.providerRequestId !== undefined) response.setHeader(REQUEST_ID_HEADER, this.providerRequestId);
    const retryAfter = textOf(headers['retry-after']);
    if (retryAfter !== undefined) response.setHeader('retry-after', retryAfter);
    if (this.options.invocationId !== undefined) response.setHeader(INVOCATION_ID_HEADER, this.options.invocationId);
    const length = textOf(headers['content-length']);
    if (this.sse === undefined && length !== undefined) response.setHeader('content-length', length);
    // The caller learns at once that its stream began.
    if (this.sse !== undefined) response.flushHeaders();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.upstreamDone) return;
    if (this.sse !== undefined) this.sse.feed(chunk);
    else this.keep(chunk);
    if (this.callerGone) return;
    const response = this.options.response;
    if (!response.write(chunk)) {
      controller.pause();
      publishBackpressure(this.options.requestId, true, response.writableLength);
    }
  }

  onResponseEnd(): void {
    if (this.upstreamDone) return;
    this.upstreamEnded();
    if (this.callerGone) this.finishIfDone();
    else this.options.response.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.upstreamDone) return;
    this.upstreamEnded();
    this.failure = error instanceof RelayStopped ? error.failure : 'connection';
    if (this.callerGone) {
      this.finishIfDone();
      return;
    }
    const response = this.options.response;
    const message = error instanceof RelayStopped ? error.message : 'The connection to Anthropic failed before the answer was complete.';
    const own = OWN_ANSWER_OF_FAILURE[this.failure];
    if (!response.headersSent) {
      this.answeredStatus = own.status;
      sendAnthropicError(response, own.status, own.type, message, this.options.requestId, { invocationId: this.options.invocationId });
    } else if (this.sse?.atEventBoundary === true) {
      // Mid-stream, between events: an `error` event, which Anthropic's SDKs raise as the API error it names.
      response.end(`event: error\ndata: ${JSON.stringify(anthropicErrorBody(own.type, message, this.options.requestId))}\n\n`);
    } else {
      // Mid-event, or mid-JSON: the only honest end is a broken connection.
      response.destroy();
    }
  }

  private readonly onTimeout = (): void => {
    this.cancelTimer = undefined;
    this.halt(new RelayStopped('timeout', `The call did not complete within its time bound (${this.options.timeoutMs} ms).`));
  };

  private halt(reason: RelayStopped): void {
    if (!this.upstreamDone) {
      this.stopped = reason;
      if (this.controller !== undefined) this.controller.abort(reason);
      // Still queued for a connection: it fails now, and is aborted if a connection comes.
      else this.onResponseError(undefined, reason);
    } else if (!this.callerDone) {
      // Upstream is done; the caller is not taking the rest of the answer.
      this.callerGone = true;
      this.options.response.destroy();
    }
  }

  private readonly onDrain = (): void => {
    if (this.controller?.paused !== true) return;
    publishBackpressure(this.options.requestId, false, this.options.response.writableLength);
    this.controller.resume();
  };

  private readonly onCallerClose = (): void => {
    const response = this.options.response;
    response.removeListener('drain', this.onDrain);
    if (!response.writableFinished) this.callerGone = true;
    this.callerDone = true;
    // Gone mid-answer: upstream is read on to its end, so its own usage is known.
    if (this.controller?.paused === true) this.controller.resume();
    this.finishIfDone();
  };

  private keep(chunk: Buffer): void {
    if (this.kept === undefined) return;
    this.keptBytes += chunk.length;
    if (this.keptBytes <= MAX_READ_ANSWER_BYTES) this.kept.push(chunk);
    else {
      this.kept = undefined;
      this.answerTooLong = true;
    }
  }

  private upstreamEnded(): void {
    this.upstreamDone = true;
    this.upstreamEndedAtMs = this.clock.now();
    this.upstreamEndedAt = performance.now();
  }

  private finishIfDone(): void {
    if (!this.upstreamDone || !this.callerDone) return;
    const callerDoneAt = performance.now();
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    const outcome = this.outcome();
    if (this.options.metricsModel !== undefined) {
      const whole = !this.callerGone && this.failure === undefined;
      const overheadSeconds = whole ? (this.sentAt - this.options.arrivedAt + (callerDoneAt - this.upstreamEndedAt)) / 1_000 : undefined;
      publishGatewayCall(this.options.metricsModel, this.answeredStatus, overheadSeconds);
    }
    this.resolveDone(outcome);
  }

  private outcome(): GatewayCallOutcome {
    const report = this.sse?.report;
    const body = report === undefined ? this.parsedAnswer() : undefined;
    const usage = mapUsage(report === undefined ? body?.usage : report.usage);
    const responseModel = report === undefined ? body?.model : report.model;
    const stopReason = report === undefined ? body?.stop_reason : report.stopReason;
    return {
      startedAtMs: this.startedAtMs,
      durationMs: Math.max(0, this.upstreamEndedAtMs - this.startedAtMs),
      classification: this.classification(body),
      ...(this.status === 0 ? {} : { httpStatus: this.status }),
      ...(this.providerRequestId === undefined ? {} : { providerRequestId: this.providerRequestId }),
      ...(typeof responseModel === 'string' && responseModel !== '' ? { responseModel } : {}),
      ...(usage === undefined ? {} : { usage }),
      timedOut: this.failure === 'timeout',
      callerDisconnected: this.callerGone,
      ...(typeof stopReason === 'string' ? { stopReason } : {}),
    };
  }

  private classification(body: Record<string, unknown> | undefined): 'ok' | FaultClass {
    if (this.failure !== undefined) return this.failure;
    if (this.status < 200 || this.status >= 300) return classifyAnthropicFault(anthropicErrorEvidence(this.status, body));
    const report = this.sse?.report;
    if (report === undefined) return body === undefined && !this.answerTooLong ? 'server_error' : 'ok';
    if (report.error !== undefined) {
      const type = report.error.type;
      const status = type !== undefined && Object.hasOwn(STATUS_OF_ANTHROPIC_ERROR_TYPE, type) ? STATUS_OF_ANTHROPIC_ERROR_TYPE[type as AnthropicErrorType] : 500;
      return classifyAnthropicFault({ status, ...(type === undefined ? {} : { errorType: type }), ...(report.error.message === undefined ? {} : { message: report.error.message }) });
    }
    // A stream that ended without message_stop was cut short upstream.
    return report.stopped ? 'ok' : 'server_error';
  }

  /** The non-streamed answer as JSON, read once at its end; undefined when it is not a JSON object. */
  private parsedAnswer(): Record<string, unknown> | undefined {
    const kept = this.kept;
    if (kept === undefined || kept.length === 0) return undefined;
    try {
      const parsed: unknown = JSON.parse((kept.length === 1 ? kept[0]! : Buffer.concat(kept, this.keptBytes)).toString('utf8'));
      return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }
}

function textOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
