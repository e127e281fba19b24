import fc from 'fast-check';
import { MAX_SSE_KEPT_LINE_BYTES, SseUsageReader } from '../../src/gateway/providers/anthropic/sse-usage.reader';
import { cutAt as cut } from '../support/byte-chunks';

const event = (name: string, data: unknown): string => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

/** A stream shaped like Anthropic's, with a ping, two text deltas and cumulative usage. */
const STREAM = [
  event('message_start', {
    type: 'message_start',
    message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-served', content: [], usage: { input_tokens: 120, output_tokens: 1, cache_read_input_tokens: 30, cache_creation_input_tokens: null, service_tier: 'standard' } },
  }),
  event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  event('ping', { type: 'ping' }),
  event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello, ' } }),
  event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'world — ✓' } }),
  event('content_block_stop', { type: 'content_block_stop', index: 0 }),
  event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 15, input_tokens: null } }),
  event('message_stop', { type: 'message_stop' }),
].join('');

const EXPECTED = {
  stopped: true,
  model: 'claude-served',
  stopReason: 'end_turn',
  usage: { input_tokens: 120, output_tokens: 15, cache_read_input_tokens: 30, cache_creation_input_tokens: null, service_tier: 'standard' },
};

function read(chunks: readonly Buffer[]): SseUsageReader {
  const reader = new SseUsageReader();
  for (const chunk of chunks) reader.feed(chunk);
  return reader;
}

describe('usage is read from the stream as it passes, without re-serialising it (docs/gateway.md)', () => {
  it('takes message_start’s usage and model, and each count the cumulative message_delta gives over it', () => {
    expect(read([Buffer.from(STREAM)]).report).toEqual(EXPECTED);
  });

  it('reads the same wherever the chunks are cut: mid-line, mid-field name, mid-character', () => {
    const bytes = Buffer.from(STREAM);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), (points) => {
        expect(read(cut(bytes, points)).report).toEqual(EXPECTED);
      }),
    );
    expect(read([...bytes].map((byte) => Buffer.from([byte]))).report).toEqual(EXPECTED);
  });

  it('tells where the last event (message_stop, or an error) begins, wherever the chunks are cut, so the relay can hold it back', () => {
    const withError = STREAM.replace(/event: message_delta[^]*$/, event('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
    for (const [text, last] of [[STREAM, 'event: message_stop'], [withError, 'event: error']] as const) {
      const bytes = Buffer.from(text);
      const lastAt = bytes.indexOf(last);
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), (points) => {
          const reader = new SseUsageReader();
          let before = 0;
          let found = false;
          for (const chunk of cut(bytes, points)) {
            const at = found ? -1 : reader.feed(chunk);
            if (found) reader.feed(chunk);
            else if (at === -1) before += chunk.length;
            else {
              before += at;
              found = true;
            }
          }
          // What goes before the last event is relayed at once: everything up to its `event:` line when
          // that line begins in the chunk, up to the chunk's start when it began in an earlier one (the
          // line's newline, its blank line and its data are always held back).
          expect(found).toBe(true);
          expect(before).toBeGreaterThanOrEqual(lastAt);
          expect(before).toBeLessThanOrEqual(lastAt + last.length);
        }),
      );
    }
  });

  it('reads lines ended by \\r\\n as it does lines ended by \\n, with the \\r and \\n in different chunks', () => {
    const bytes = Buffer.from(STREAM.replace(/\n/g, '\r\n'));
    const everyCarriageReturn = [...bytes.entries()].filter(([, byte]) => byte === 0x0d).map(([index]) => index + 1);
    expect(read(cut(bytes, everyCarriageReturn)).report).toEqual(EXPECTED);
  });

  it('reads an error event’s type and message, and says the stream never stopped', () => {
    const reader = read([Buffer.from(STREAM.slice(0, STREAM.indexOf('event: content_block_stop')) + event('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))]);
    expect(reader.report).toMatchObject({ error: { type: 'overloaded_error', message: 'Overloaded' }, stopped: false, usage: { input_tokens: 120, output_tokens: 1 } });
  });

  it('keeps no text of a delta: a delta line past the kept-line bound is skipped, and what follows is still read', () => {
    const huge = event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(MAX_SSE_KEPT_LINE_BYTES * 2) } });
    const bytes = Buffer.from(STREAM.replace(event('ping', { type: 'ping' }), huge));
    const reader = read(cut(bytes, Array.from({ length: 64 }, (_, index) => Math.floor((bytes.length / 64) * index))));
    expect(reader.report).toEqual(EXPECTED);
  });

  it('says whether the bytes so far end between events, where an event of its own may be added', () => {
    const reader = new SseUsageReader();
    expect(reader.atEventBoundary).toBe(true);
    reader.feed(Buffer.from('event: content_block_delta\ndata: {"type":"content_bl'));
    expect(reader.atEventBoundary).toBe(false);
    reader.feed(Buffer.from('ock_delta"}\n'));
    expect(reader.atEventBoundary).toBe(false);
    reader.feed(Buffer.from('\n'));
    expect(reader.atEventBoundary).toBe(true);
  });

  it('ignores data it cannot parse and comments, reporting no usage rather than a guess', () => {
    const reader = read([Buffer.from(': a comment\n\nevent: message_start\ndata: {not json\n\nevent: message_stop\ndata: {}\n\n')]);
    expect(reader.report).toEqual({ stopped: true });
  });
});
