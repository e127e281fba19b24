/**
 * One forwarded call, from its first byte upstream to the last byte to the caller: an undici dispatch
 * handler that relays upstream's answer as it arrives onto Node's own response, reads what the
 * accounting needs as the bytes pass, reports the outcome it observed once upstream has ended
 * (`upstreamEnded`), and gives the caller the answer's last bytes only once released (`release()`):
 * the accounting side settles in between (docs/gateway.md, "Relaying"). The relay holds no money.
 *
 * - Upstream is read to its end whatever the caller does: a slow or stalled caller never slows it.
 *   What the caller has not taken is buffered up to MAX_CALLER_BUFFER_BYTES; past it the caller is
 *   dropped (its socket destroyed) and upstream read on, as when a caller goes away, so the outcome
 *   carries upstream's own final usage (`callerDisconnected`).
 * - Delivered means settled: the bytes from a stream's `message_stop` event on (a non-streamed
 *   answer's last chunk) are held back until `release()`, which whoever settles calls once the
 *   settlement is done, so a caller that has its whole answer finds the call settled. A failed
 *   settlement is logged by whoever settles, who releases anyway (the sweep settles the call later).
 * - The time bound (`timeoutMs`) covers upstream: past it the gateway cuts upstream (`timedOut`), as
 *   at shutdown (`cancelled`). The usage is then unknown, so the outcome carries none and the call is
 *   charged its hold, never a partial usage.
 * - After the settlement a caller has CALLER_DRAIN_TIMEOUT_MS to take the rest; then it is dropped.
 *   No relay waits for a caller forever.
 * - An error answer (outside 2xx, not streamed) is kept whole, up to MAX_UPSTREAM_ERROR_BODY_BYTES, and
 *   given to the caller as the provider's `errorAnswer` puts it: in the route's API's error shape.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Transform } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { Clock } from '../runtime/clock';
import type { FaultClass } from '../runtime/faults';
import { anthropicErrorBody, INVOCATION_ID_HEADER, REQUEST_ID_HEADER, sendAnthropicError } from './anthropic-error.body';
import { answerCodingOf } from './answer-encoding';
import type { AnthropicErrorType, GatewayCallOutcome } from './gateway-call.port';
import { markGatewayPhase, publishCallerDropped, publishGatewayCall } from './gateway-http.channels';
import type { GatewayAnswerReader, GatewayProvider } from './gateway-provider.port';

/**
 * Most of an answer buffered for a caller that does not take it as fast as upstream sends it, in
 * bytes (on top of what the sockets hold). Past it the caller is dropped and upstream read on.
 */
export const MAX_CALLER_BUFFER_BYTES = 8 * 1024 * 1024;
/** How long a caller has to take the rest of its answer once upstream ended and the call is settled, in ms. */
export const CALLER_DRAIN_TIMEOUT_MS = 60_000;
/**
 * Most of a non-streamed answer (decoded) read for its `usage`, in bytes. The reader keeps only the
 * few members it needs, so this bounds the reading's CPU, not memory; a longer answer is relayed
 * whole, its usage unread.
 */
export const MAX_READ_ANSWER_BYTES = 1024 * 1024 * 1024;
/**
 * Most of an upstream error answer kept to be put in the route's error shape, in bytes (errors are a
 * few hundred); a longer one is relayed as it came from there on, untranslated.
 */
export const MAX_UPSTREAM_ERROR_BODY_BYTES = 1024 * 1024;

export interface RelayOptions {
  readonly response: ServerResponse;
  /** The upstream time bound, from the call's first byte upstream to upstream's last byte. */
  readonly timeoutMs: number;
  readonly requestId: string;
  /** Sent back as `llm-ledger-invocation-id`: the call was recorded as this invocation. */
  readonly invocationId?: string;
  /** `performance.now()` when the request arrived, for the overhead metric. */
  readonly arrivedAt: number;
  /** The metrics' `model` label; a call without one (count_tokens) is not counted. */
  readonly metricsModel?: string;
}

/** A call being relayed, as whoever settles it sees it. */
export interface RelayedCall {
  /** Resolves once upstream has ended, with the outcome the relay observed; never rejects. */
  readonly upstreamEnded: Promise<GatewayCallOutcome>;
  /** Gives the caller the answer's last bytes (after the settlement); before upstream ended, it waits for it. */
  release(): void;
  /** Resolves once upstream, the release and the caller are all done with the call; never rejects. */
  readonly done: Promise<GatewayCallOutcome>;
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

export class GatewayRelay implements Dispatcher.DispatchHandler, RelayedCall {
  readonly upstreamEnded: Promise<GatewayCallOutcome>;
  readonly done: Promise<GatewayCallOutcome>;
  private resolveUpstreamEnded!: (outcome: GatewayCallOutcome) => void;
  private resolveDone!: (outcome: GatewayCallOutcome) => void;
  /** What the caller is given once released: the rest of the answer, or the gateway's own ending. */
  private thenCaller: (() => void) | undefined;
  private released = false;
  private controller: Dispatcher.DispatchController | undefined;
  private stopped: RelayStopped | undefined;
  private cancelTimer: (() => void) | undefined;
  private status = 0;
  private providerRequestId: string | undefined;
  /** The provider's reader of the answer, once it began. */
  private reader: GatewayAnswerReader | undefined;
  private readBytes = 0;
  /** The answer was not read for its usage: past MAX_READ_ANSWER_BYTES, or in a coding the relay cannot decode. */
  private unread = false;
  /** Upstream was cut or its answer could not be decoded: whatever usage was seen is not the final one. */
  private usageUnknown = false;
  private decoder: Transform | undefined;
  /** The bytes held back from the caller until the settlement: from `message_stop` on, or the last chunk. */
  private withheld: Buffer[] = [];
  private withholdingAll = false;
  /** An error answer being kept whole for the provider's `errorAnswer`, with its content type and size so far. */
  private errorBody: { readonly chunks: Buffer[]; bytes: number; readonly contentType: string | undefined } | undefined;
  private startedAtMs = 0;
  private sentAt = 0;
  private upstreamEndedAtMs = 0;
  private upstreamEndedAt = 0;
  private failure: UpstreamFailure | undefined;
  private upstreamDone = false;
  private restGiven = false;
  private callerDone = false;
  private callerGone = false;
  private finished = false;
  private answeredStatus = 0;
  private outcomeSeen: GatewayCallOutcome | undefined;

  constructor(
    private readonly options: RelayOptions,
    private readonly provider: GatewayProvider,
    private readonly clock: Clock,
  ) {
    this.upstreamEnded = new Promise((resolve) => (this.resolveUpstreamEnded = resolve));
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.upstreamDone) this.giveCallerTheRest();
  }

  /** Starts the call: `send` hands this handler to the upstream dispatcher. */
  start(send: (handler: Dispatcher.DispatchHandler) => void): void {
    const { response } = this.options;
    this.startedAtMs = this.clock.now();
    this.sentAt = performance.now();
    this.cancelTimer = this.clock.setTimer(this.options.timeoutMs, this.onTimeout);
    response.once('close', this.onCallerClose);
    // The caller left while the call was being admitted: it is still made, and read to its end.
    if (response.destroyed) this.callerGone = this.callerDone = true;
    markGatewayPhase(this.options.requestId, 'upstream_sent', this.sentAt);
    send(this);
  }

  /** Ends the call now (the service is shutting down): upstream is cut, the outcome `cancelled`. */
  stop(message: string): void {
    this.halt(new RelayStopped('cancelled', message));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    markGatewayPhase(this.options.requestId, 'upstream_written');
    if (this.stopped !== undefined) controller.abort(this.stopped);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (this.upstreamDone || statusCode < 200) return;
    markGatewayPhase(this.options.requestId, 'first_byte');
    this.status = statusCode;
    this.providerRequestId = textOf(headers[this.provider.requestIdHeader]);
    const contentType = textOf(headers['content-type']);
    const reader = (this.reader = this.provider.answerReader(statusCode, contentType));
    const contentEncoding = textOf(headers['content-encoding']);
    const coding = answerCodingOf(contentEncoding);
    if (coding.kind === 'decode') this.startDecoding(coding.decoder);
    this.unread = coding.kind === 'opaque';
    // An error in a coding the relay cannot decode goes as it came; any other is kept for the provider to put in the route's shape.
    if ((statusCode < 200 || statusCode >= 300) && !reader.streamed && coding.kind !== 'opaque') this.errorBody = { chunks: [], bytes: 0, contentType };
    if (this.callerGone) return;
    const response = this.options.response;
    response.statusCode = statusCode;
    this.answeredStatus = statusCode;
    if (contentType !== undefined) response.setHeader('content-type', contentType);
    if (this.providerRequestId !== undefined) response.setHeader(REQUEST_ID_HEADER, this.providerRequestId);
    const retryAfter = textOf(headers['retry-after']);
    if (retryAfter !== undefined) response.setHeader('retry-after', retryAfter);
    if (this.options.invocationId !== undefined) response.setHeader(INVOCATION_ID_HEADER, this.options.invocationId);
    // A decoded answer is re-framed (chunked, no coding); one the relay cannot decode goes as it came.
    if (coding.kind === 'opaque') response.setHeader('content-encoding', contentEncoding!);
    const length = textOf(headers['content-length']);
    if (!reader.streamed && coding.kind !== 'decode' && this.errorBody === undefined && length !== undefined) response.setHeader('content-length', length);
    // The caller learns at once that its stream began.
    if (reader.streamed) response.flushHeaders();
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.upstreamDone) return;
    if (this.decoder !== undefined) this.decoder.write(chunk);
    else this.answerData(chunk);
  }

  onResponseEnd(): void {
    if (this.upstreamDone) return;
    if (this.decoder !== undefined) this.decoder.end();
    else this.answerEnded();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.upstreamDone) return;
    this.decoder?.destroy();
    this.decoder = undefined;
    this.failure = error instanceof RelayStopped ? error.failure : 'connection';
    if (error instanceof RelayStopped) this.usageUnknown = true;
    this.endUpstream(() => this.failCaller(error));
  }

  private startDecoding(decoder: Transform): void {
    this.decoder = decoder;
    decoder.on('data', (decoded: Buffer) => this.answerData(decoded));
    decoder.once('end', () => this.answerEnded());
    decoder.once('error', () => {
      // An answer that cannot be decoded cannot be read for its usage: upstream is cut, the call held.
      this.usageUnknown = true;
      this.halt(new RelayStopped('connection', `The answer from the upstream (${this.provider.name}) could not be decoded.`));
    });
  }

  /** A piece of the answer, decoded: read for the accounting, then relayed (or held back). */
  private answerData(chunk: Buffer): void {
    const stopAt = this.read(chunk);
    if (this.callerGone) return;
    if (this.errorBody !== undefined && this.keepError(chunk)) return;
    if (this.withholdingAll) {
      this.withheld.push(chunk);
      return;
    }
    const response = this.options.response;
    const streamed = this.reader?.streamed === true;
    if (streamed && stopAt !== -1) {
      // From message_stop on, the stream waits for the settlement.
      if (stopAt > 0) response.write(chunk.subarray(0, stopAt));
      this.withheld.push(chunk.subarray(stopAt));
      this.withholdingAll = true;
    } else if (streamed) {
      response.write(chunk);
    } else {
      // A non-streamed answer's last chunk waits for the settlement: each chunk goes when the next comes.
      const previous = this.withheld.pop();
      if (previous !== undefined) response.write(previous);
      this.withheld.push(chunk);
    }
    if (response.writableLength > MAX_CALLER_BUFFER_BYTES) this.dropCaller('buffer');
  }

  /**
   * Keeps a chunk of an error answer; true while it is kept. Past MAX_UPSTREAM_ERROR_BODY_BYTES the
   * answer is relayed as it came: what was kept goes now (its last chunk waits, as any answer's does).
   */
  private keepError(chunk: Buffer): boolean {
    const kept = this.errorBody!;
    kept.chunks.push(chunk);
    kept.bytes += chunk.length;
    if (kept.bytes <= MAX_UPSTREAM_ERROR_BODY_BYTES) return true;
    this.errorBody = undefined;
    const last = kept.chunks.pop()!;
    for (const piece of kept.chunks) this.options.response.write(piece);
    this.withheld.push(last);
    return true;
  }

  /** Feeds the accounting's reader; returns where a stream's message_stop begins in the chunk, or -1. */
  private read(chunk: Buffer): number {
    if (this.unread || this.reader === undefined) return -1;
    if (this.reader.streamed) return this.reader.feed(chunk);
    this.readBytes += chunk.length;
    if (this.readBytes > MAX_READ_ANSWER_BYTES) this.unread = true;
    else this.reader.feed(chunk);
    return -1;
  }

  private answerEnded(): void {
    if (this.upstreamDone) return;
    this.endUpstream(() => this.endCaller());
  }

  private readonly onTimeout = (): void => {
    this.cancelTimer = undefined;
    this.halt(new RelayStopped('timeout', `The call did not complete within its time bound (${this.options.timeoutMs} ms).`));
  };

  private halt(reason: RelayStopped): void {
    if (!this.upstreamDone) {
      this.stopped = reason;
      // Still queued for a connection: it is aborted if a connection comes. Either way it fails now
      // (also when upstream's answer ended but the decoder had not finished it).
      if (this.controller !== undefined && !this.controller.aborted) this.controller.abort(reason);
      this.onResponseError(undefined, reason);
    } else if (!this.callerDone) {
      this.dropCaller('stopped');
    }
  }

  /** Upstream is done: the outcome is reported; once released, `thenCaller` gives the caller the rest. */
  private endUpstream(thenCaller: () => void): void {
    this.upstreamDone = true;
    this.upstreamEndedAtMs = this.clock.now();
    this.upstreamEndedAt = performance.now();
    markGatewayPhase(this.options.requestId, 'upstream_ended', this.upstreamEndedAt);
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.outcomeSeen = this.outcome();
    this.thenCaller = thenCaller;
    this.resolveUpstreamEnded(this.outcomeSeen);
    // Released before upstream ended (nothing to settle): the rest goes on the next turn, as after a settlement.
    if (this.released) queueMicrotask(() => this.giveCallerTheRest());
  }

  private giveCallerTheRest(): void {
    this.restGiven = true;
    if (!this.callerGone) {
      this.thenCaller!();
      this.cancelTimer = this.clock.setTimer(CALLER_DRAIN_TIMEOUT_MS, this.onDrainTimeout);
    }
    this.finishIfDone();
  }

  /** The whole answer came: the held-back bytes go (an error answer in the route's shape), and the response ends. */
  private endCaller(): void {
    const response = this.options.response;
    if (this.errorBody !== undefined) {
      const { chunks, contentType } = this.errorBody;
      const answer = this.provider.errorAnswer({ status: this.status, contentType, body: Buffer.concat(chunks), requestId: this.providerRequestId ?? this.options.requestId });
      if (answer.contentType === undefined) response.removeHeader('content-type');
      else response.setHeader('content-type', answer.contentType);
      response.setHeader('content-length', answer.body.length);
      response.end(answer.body);
      return;
    }
    for (const piece of this.withheld) response.write(piece);
    this.withheld = [];
    response.end();
  }

  /** Upstream failed or was cut: the caller gets an answer of the gateway's own, an error event, or a cut. */
  private failCaller(error: Error): void {
    const response = this.options.response;
    const message = error instanceof RelayStopped ? error.message : `The connection to the upstream (${this.provider.name}) failed before the answer was complete.`;
    const own = OWN_ANSWER_OF_FAILURE[this.failure!];
    if (!response.headersSent) {
      this.answeredStatus = own.status;
      sendAnthropicError(response, own.status, own.type, message, this.options.requestId, { invocationId: this.options.invocationId });
      return;
    }
    const streamed = this.reader?.streamed === true;
    if (streamed) for (const piece of this.withheld) response.write(piece);
    this.withheld = [];
    if (streamed && this.reader!.atEventBoundary) {
      // Mid-stream, between events: an `error` event, which Anthropic's SDKs raise as the API error it names.
      response.end(`event: error\ndata: ${JSON.stringify(anthropicErrorBody(own.type, message, this.options.requestId))}\n\n`);
    } else {
      // Mid-event, or mid-JSON: the only honest end is a broken connection.
      response.destroy();
    }
  }

  private readonly onDrainTimeout = (): void => {
    this.cancelTimer = undefined;
    this.dropCaller('drain_timeout');
  };

  /** The caller is not taking its answer: its socket is destroyed; upstream, if still running, is read on. */
  private dropCaller(reason: 'buffer' | 'drain_timeout' | 'stopped'): void {
    if (this.callerGone) return;
    const response = this.options.response;
    this.callerGone = true;
    this.withheld = [];
    publishCallerDropped(this.options.requestId, reason, response.writableLength);
    response.destroy();
  }

  private readonly onCallerClose = (): void => {
    if (!this.options.response.writableFinished) this.callerGone = true;
    this.callerDone = true;
    this.withheld = [];
    // Upstream is still read on to its end (if running), so its own usage is known.
    if (this.restGiven) {
      this.cancelTimer?.();
      this.cancelTimer = undefined;
    }
    this.finishIfDone();
  };

  private finishIfDone(): void {
    if (this.finished || !this.upstreamDone || !this.restGiven || !this.callerDone) return;
    this.finished = true;
    const callerDoneAt = performance.now();
    markGatewayPhase(this.options.requestId, 'caller_done', callerDoneAt);
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    const outcome = this.outcomeSeen!;
    if (this.options.metricsModel !== undefined) {
      const whole = !this.callerGone && this.failure === undefined;
      const overheadSeconds = whole ? (this.sentAt - this.options.arrivedAt + (callerDoneAt - this.upstreamEndedAt)) / 1_000 : undefined;
      publishGatewayCall(this.options.metricsModel, this.answeredStatus, overheadSeconds);
    }
    this.resolveDone(outcome);
  }

  private outcome(): GatewayCallOutcome {
    // An answer that never began is read as an empty one (the relay's own failure classifies it).
    const answer = (this.reader ?? this.provider.answerReader(this.status, undefined)).read(this.status);
    // Usage the gateway cut short is unknown; what upstream reported is read with its malformed field named.
    const { usage, malformedUsage } = this.usageUnknown ? {} : answer;
    return {
      startedAtMs: this.startedAtMs,
      durationMs: Math.max(0, this.upstreamEndedAtMs - this.startedAtMs),
      classification: this.classification(answer.classification),
      ...(this.status === 0 ? {} : { httpStatus: this.status }),
      ...(this.providerRequestId === undefined ? {} : { providerRequestId: this.providerRequestId }),
      ...(answer.responseModel === undefined ? {} : { responseModel: answer.responseModel }),
      ...(usage === undefined ? {} : { usage }),
      ...(malformedUsage === undefined ? {} : { malformedUsage }),
      timedOut: this.failure === 'timeout',
      callerDisconnected: this.callerGone,
      ...(answer.stopReason === undefined ? {} : { stopReason: answer.stopReason }),
    };
  }

  /** The relay's own failure first; then an answer left unread (a coding the relay cannot decode, or past its bound) is taken as sent. */
  private classification(answered: 'ok' | FaultClass): 'ok' | FaultClass {
    if (this.failure !== undefined) return this.failure;
    if (this.unread && this.status >= 200 && this.status < 300) return 'ok';
    return answered;
  }
}

function textOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
