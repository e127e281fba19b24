/**
 * What the gateway benchmark sends and what its upstream answers, in the shapes of Anthropic's
 * Messages API: the request body, the non-streamed answer with its `usage` block, and the SSE events
 * of a streamed answer (message_start with usage, content_block_start, ping, content_block_delta…,
 * content_block_stop, message_delta with the cumulative usage, message_stop).
 *
 * Each text delta carries the upstream's send time (`ts=<ns>`, process.hrtime, the machine's
 * monotonic clock, the same in every process), so the client can time each event's trip through a
 * peer; `relayDelaysMicros` reads them back.
 */

export const BENCH_MODEL = 'claude-sonnet-4-5';
/** `max_tokens` of every benchmark call: it sizes the gateway's worst-case hold, not the answer. */
export const BENCH_MAX_TOKENS = 1_024;
export const ANTHROPIC_VERSION = '2023-06-01';
/** The key the upstream expects; every peer must call it with this one, never the caller's. */
export const UPSTREAM_API_KEY = 'bench-upstream-key';
/** The non-streamed answer's text, in bytes: about what a short answer weighs. */
const ANSWER_TEXT_BYTES = 600;
/** Bytes of text per streamed delta besides its timestamp: a few tokens, as Anthropic sends them. */
const DELTA_FILLER = ' lorem ipsum';
/** Anthropic counts about four bytes of English per token; the upstream reports usage on that basis. */
const BYTES_PER_TOKEN = 4;

/** A Messages request of about `bytes` bytes (a user turn padded with text), compact JSON as the SDKs send. */
export function requestBody(options: { readonly stream: boolean; readonly bytes: number }): Buffer {
  const base = { model: BENCH_MODEL, max_tokens: BENCH_MAX_TOKENS, ...(options.stream ? { stream: true } : {}) };
  const skeleton = JSON.stringify({ ...base, messages: [{ role: 'user', content: '' }] });
  const padding = Math.max(1, options.bytes - skeleton.length);
  const words = 'Summarise the ledger entries of the last billing period for the finance team. ';
  const content = words.repeat(Math.ceil(padding / words.length)).slice(0, padding);
  return Buffer.from(JSON.stringify({ ...base, messages: [{ role: 'user', content }] }));
}

export interface UsageReport {
  readonly input_tokens: number;
  readonly cache_creation_input_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly output_tokens: number;
}

export function usageFor(requestBytes: number, outputTokens: number): UsageReport {
  return {
    input_tokens: Math.max(1, Math.ceil(requestBytes / BYTES_PER_TOKEN)),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: outputTokens,
  };
}

/** The non-streamed answer, serialised. */
export function messageJson(id: string, requestBytes: number): string {
  const text = 'The ledger shows every grant, hold and charge of the period. '.repeat(Math.ceil(ANSWER_TEXT_BYTES / 60)).slice(0, ANSWER_TEXT_BYTES);
  return JSON.stringify({
    id,
    type: 'message',
    role: 'assistant',
    model: BENCH_MODEL,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { ...usageFor(requestBytes, Math.ceil(ANSWER_TEXT_BYTES / BYTES_PER_TOKEN)), service_tier: 'standard' },
  });
}

function sse(event: string, data: string): string {
  return `event: ${event}\ndata: ${data}\n\n`;
}

/** The events before the first delta: message_start (with the input usage), content_block_start, ping. */
export function streamHead(id: string, requestBytes: number): string {
  const message = {
    id,
    type: 'message',
    role: 'assistant',
    model: BENCH_MODEL,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { ...usageFor(requestBytes, 1), service_tier: 'standard' },
  };
  return (
    sse('message_start', JSON.stringify({ type: 'message_start', message })) +
    sse('content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}') +
    sse('ping', '{"type": "ping"}')
  );
}

/** One text delta stamped with the upstream's monotonic clock at the moment it is built. */
export function streamDelta(): string {
  return sse('content_block_delta', `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ts=${process.hrtime.bigint()}${DELTA_FILLER}"}}`);
}

/** The events after the last delta: content_block_stop, message_delta (cumulative usage), message_stop. */
export function streamTail(requestBytes: number, deltas: number): string {
  const outputTokens = Math.max(1, Math.ceil((deltas * (20 + DELTA_FILLER.length)) / BYTES_PER_TOKEN));
  const usage = usageFor(requestBytes, outputTokens);
  return (
    sse('content_block_stop', '{"type":"content_block_stop","index":0}') +
    sse('message_delta', JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage })) +
    sse('message_stop', '{"type":"message_stop"}')
  );
}

const STAMP = /ts=(\d+)/g;

/**
 * Reads a stream's complete events as they arrive: `push(chunk, receivedAtNs)` returns, for each
 * stamped delta completed by that chunk, its trip in microseconds (received minus stamped), and
 * notes whether message_stop has been seen. Events split across chunks are completed by the chunk
 * that ends them, which is when a client could act on them.
 */
export class StreamReader {
  private pending = '';
  stopped = false;
  events = 0;

  push(chunk: string, receivedAtNs: bigint, into: number[]): void {
    this.pending += chunk;
    const end = this.pending.lastIndexOf('\n\n');
    if (end < 0) return;
    const complete = this.pending.slice(0, end);
    this.pending = this.pending.slice(end + 2);
    for (const match of complete.matchAll(STAMP)) {
      into.push(Number(receivedAtNs - BigInt(match[1]!)) / 1_000);
    }
    this.events += countOf(complete, '\n\n') + 1;
    if (complete.includes('"message_stop"')) this.stopped = true;
  }
}

function countOf(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}
