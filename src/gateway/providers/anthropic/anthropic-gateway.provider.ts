/**
 * Anthropic's first-party Messages API as the gateway's upstream (docs/gateway.md "Providers"): a
 * route's call goes to the same path under `ANTHROPIC_BASE_URL` with the service's own key as
 * `x-api-key`; a streamed answer is read by SseUsageReader, a JSON one by JsonAnswerReader; faults
 * are classified by Anthropic's error mapper, as the operations' Anthropic provider classifies them;
 * Message Batches go to Anthropic's batches API through its SDK (anthropic-batches.upstream.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { anthropicErrorEvidence, classifyAnthropicFault } from '../../../providers/anthropic/anthropic-error.mapper';
import { readUsageReport } from '../../../providers/anthropic/anthropic-response.mapper';
import { ANTHROPIC_DEFAULT_BASE_URL } from '../../../providers/anthropic/anthropic.provider';
import type { FaultClass } from '../../../runtime/faults';
import { STATUS_OF_ANTHROPIC_ERROR_TYPE } from '../../anthropic-error.body';
import type { AnthropicErrorType } from '../../gateway-call.port';
import type { GatewayAnswer, GatewayAnswerReader, GatewayProviderFactory, GatewayUpstreamCall } from '../../gateway-provider.port';
import { JsonAnswerReader } from '../../json-answer.reader';
import { AnthropicBatchUpstream } from './anthropic-batches.upstream';
import { SseUsageReader, type StreamReport } from './sse-usage.reader';

/** The request headers passed upstream as they came (the caller's key is never among them). */
const PASSED_HEADERS = ['anthropic-version', 'anthropic-beta', 'content-type'] as const;
/** The top-level members of a non-streamed answer the accounting reads. */
const ANSWER_MEMBERS: ReadonlySet<string> = new Set(['usage', 'model', 'stop_reason', 'error']);
const UPSTREAM_PATHS: Readonly<Record<GatewayUpstreamCall['route'], string>> = { messages: '/v1/messages', count_tokens: '/v1/messages/count_tokens' };

export const anthropicGatewayProvider: GatewayProviderFactory = (config) => {
  const apiKey = config.anthropicApiKey;
  const baseURL = config.anthropicBaseUrl ?? ANTHROPIC_DEFAULT_BASE_URL;
  return {
    name: 'anthropic',
    baseURL,
    configured: apiKey !== undefined,
    requestIdHeader: 'request-id',
    upstreamPath: (call) => `${UPSTREAM_PATHS[call.route]}${call.query}`,
    upstreamHeaders: (caller) => [...(apiKey === undefined ? [] : ['x-api-key', apiKey]), ...passedHeaders(caller, PASSED_HEADERS)],
    answerReader: (status, contentType) =>
      status >= 200 && status < 300 && contentType !== undefined && contentType.startsWith('text/event-stream') ? new AnthropicStreamReader() : new AnthropicJsonReader(),
    // Anthropic's errors are already in the shape the `/anthropic` routes answer in.
    errorAnswer: (answer) => answer,
    batches: new AnthropicBatchUpstream({ baseURL, ...(apiKey === undefined ? {} : { apiKey }) }),
  };
};

/** The caller's headers among `names`, as a flat list; a repeated one joined with commas. */
export function passedHeaders(caller: IncomingHttpHeaders, names: readonly string[]): string[] {
  const list: string[] = [];
  for (const name of names) {
    const value = caller[name];
    if (value !== undefined) list.push(name, Array.isArray(value) ? value.join(',') : value);
  }
  return list;
}

/** A Messages event stream: usage from `message_start` and the last `message_delta`. */
class AnthropicStreamReader implements GatewayAnswerReader {
  readonly streamed = true;
  private readonly sse = new SseUsageReader();

  get atEventBoundary(): boolean {
    return this.sse.atEventBoundary;
  }

  feed(chunk: Buffer): number {
    return this.sse.feed(chunk);
  }

  read(_status: number): GatewayAnswer {
    // Only a 2xx answer is read as a stream (answerReader).
    const report = this.sse.report;
    return answerOf(report.usage, report.model, report.stopReason, streamClassification(report));
  }
}

/** A JSON answer (a message, or an error): its `usage`, `model`, `stop_reason` and `error`. */
class AnthropicJsonReader implements GatewayAnswerReader {
  readonly streamed = false;
  readonly atEventBoundary = false;
  private readonly json = new JsonAnswerReader(ANSWER_MEMBERS);

  feed(chunk: Buffer): number {
    this.json.feed(chunk);
    return -1;
  }

  read(status: number): GatewayAnswer {
    const body = this.json.answer;
    const classification = status < 200 || status >= 300 ? classifyAnthropicFault(anthropicErrorEvidence(status, body)) : body === undefined ? 'server_error' : 'ok';
    return answerOf(body?.usage, body?.model, body?.stop_reason, classification);
  }
}

function streamClassification(report: StreamReport): 'ok' | FaultClass {
  if (report.error !== undefined) {
    const type = report.error.type;
    const status = type !== undefined && Object.hasOwn(STATUS_OF_ANTHROPIC_ERROR_TYPE, type) ? STATUS_OF_ANTHROPIC_ERROR_TYPE[type as AnthropicErrorType] : 500;
    return classifyAnthropicFault({ status, ...(type === undefined ? {} : { errorType: type }), ...(report.error.message === undefined ? {} : { message: report.error.message }) });
  }
  // A stream that ended without message_stop was cut short upstream.
  return report.stopped ? 'ok' : 'server_error';
}

/** The answer's usage read with its malformed field named, and its model and stop reason when they are text. */
function answerOf(reported: unknown, model: unknown, stopReason: unknown, classification: 'ok' | FaultClass): GatewayAnswer {
  const { usage, malformedField } = readUsageReport(reported);
  return {
    classification,
    ...(usage === undefined ? {} : { usage }),
    ...(malformedField === undefined ? {} : { malformedUsage: malformedField }),
    ...(typeof model === 'string' && model !== '' ? { responseModel: model } : {}),
    ...(typeof stopReason === 'string' ? { stopReason } : {}),
  };
}
