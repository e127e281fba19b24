import fc from 'fast-check';
import { JsonAnswerReader, MAX_JSON_KEPT_MEMBER_BYTES } from '../../src/gateway/json-answer.reader';
import { cutAt } from '../support/byte-chunks';

const WANTED = new Set(['usage', 'model', 'stop_reason', 'error']);

/** The wanted members as JSON.parse reads them (absent ones left out). */
function expected(text: string): Record<string, unknown> {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(parsed).filter(([name]) => WANTED.has(name)));
}

function read(chunks: readonly Buffer[]): Record<string, unknown> | undefined {
  const reader = new JsonAnswerReader(WANTED);
  for (const chunk of chunks) reader.feed(chunk);
  return reader.answer;
}

/** The bytes cut at the given offsets, each taken modulo the length so that most fall inside. */
const cut = (bytes: Buffer, offsets: readonly number[]): Buffer[] => cutAt(bytes, offsets.map((offset) => offset % (bytes.length + 1)));

const MESSAGE = JSON.stringify({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-served',
  content: [{ type: 'text', text: 'He said "usage": {"output_tokens": 1} \\ and left. } ] {' }, { type: 'tool_use', id: 't', name: 'n', input: { usage: { output_tokens: 2 } } }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 345, cache_creation_input_tokens: null, service_tier: 'standard' },
});

describe('JsonAnswerReader: the top-level usage, model, stop_reason and error of a non-streamed answer, the rest skipped (docs/gateway.md, Relaying)', () => {
  it('reads the wanted top-level members, never a nested or quoted look-alike', () => {
    expect(read([Buffer.from(MESSAGE)])).toEqual(expected(MESSAGE));
  });

  it('reads the same however the bytes are cut into chunks', () => {
    const bytes = Buffer.from(MESSAGE);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (offsets) => {
        expect(read(cut(bytes, offsets))).toEqual(expected(MESSAGE));
      }),
    );
  });

  it('reads what JSON.parse reads for any object, with escapes, unicode and nesting, in any chunks', () => {
    const member = fc.oneof(fc.constantFrom('usage', 'model', 'stop_reason', 'error', 'us\\u0061ge'), fc.string());
    const value = fc.jsonValue();
    fc.assert(
      fc.property(fc.array(fc.tuple(member, value), { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), fc.constantFrom('', ' ', '\n  '), (entries, offsets, space) => {
        const text = `{${space}${entries.map(([name, v]) => `${name.startsWith('us\\') ? `"${name}"` : JSON.stringify(name)}${space}:${space}${JSON.stringify(v)}`).join(`${space},${space}`)}${space}}`;
        expect(read(cut(Buffer.from(text), offsets))).toEqual(expected(text));
      }),
    );
  });

  it('reads an error answer', () => {
    const text = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' }, request_id: 'req_1' });
    expect(read([Buffer.from(text)])).toEqual({ error: { type: 'overloaded_error', message: 'Overloaded' } });
  });

  it('finds no answer in a cut object, an array, a scalar or HTML', () => {
    for (const text of [MESSAGE.slice(0, -1), '[1,2]', '42', '<html>busy</html>', '', '{"a":1}}']) expect(read([Buffer.from(text)])).toBeUndefined();
  });

  it('reads a member past its bound as absent, and goes on reading the others', () => {
    const text = JSON.stringify({ model: 'm', error: { message: 'x'.repeat(MAX_JSON_KEPT_MEMBER_BYTES) }, usage: { output_tokens: 3 } });
    expect(read([Buffer.from(text)])).toEqual({ model: 'm', error: undefined, usage: { output_tokens: 3 } });
  });
});
