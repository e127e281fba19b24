import { MAX_MODEL_ID_CHARS, readMessagesBodyFacts } from '../../src/gateway/messages-body.facts';

const bytesOf = (body: unknown): Buffer => Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
const minimal = { model: 'claude-test', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] };

describe('a Messages body is read once for what the hold needs, never for its text (docs/gateway.md)', () => {
  it('gives the body’s UTF-8 byte length as received, the model, max_tokens and whether it streams', () => {
    const text = JSON.stringify({ ...minimal, stream: true, messages: [{ role: 'user', content: 'déjà vu — ✓' }] });
    const { facts } = readMessagesBodyFacts(Buffer.from(text));
    expect(facts).toEqual({
      bodyBytes: Buffer.byteLength(text),
      model: 'claude-test',
      maxTokens: 64,
      stream: true,
      imageBlocks: 0,
      documentBlocks: 0,
      webSearchMaxUses: [],
    });
    expect(facts!.bodyBytes).toBeGreaterThan(text.length);
  });

  it('counts image and document blocks anywhere: in messages, inside tool results, and in system', () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } };
    const document = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } };
    const { facts } = readMessagesBodyFacts(
      bytesOf({
        ...minimal,
        system: [{ type: 'text', text: 'policy' }, document],
        messages: [
          { role: 'user', content: [image, { type: 'text', text: 'look' }, document] },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'fetch', input: { url: 'x' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [image, image, { type: 'text', text: 'ok' }] }] },
        ],
      }),
    );
    expect(facts).toMatchObject({ imageBlocks: 3, documentBlocks: 2 });
  });

  it('gives each web-search tool’s max_uses, undefined where it sets none, and ignores other tools', () => {
    const { facts } = readMessagesBodyFacts(
      bytesOf({
        ...minimal,
        tools: [
          { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
          { name: 'calculate', input_schema: { type: 'object' } },
          { type: 'web_search_20260101', name: 'search_again' },
          { type: 'web_fetch_20250910', name: 'fetch', max_uses: 9 },
        ],
      }),
    );
    expect(facts!.webSearchMaxUses).toEqual([5, undefined]);
  });

  it('gives speed and inference_geo as asked, and leaves them out when the body does not say', () => {
    expect(readMessagesBodyFacts(bytesOf({ ...minimal, speed: 'fast', inference_geo: 'us' })).facts).toMatchObject({ speed: 'fast', inferenceGeo: 'us' });
    const { facts } = readMessagesBodyFacts(bytesOf(minimal));
    expect(facts).not.toHaveProperty('speed');
    expect(facts).not.toHaveProperty('inferenceGeo');
  });

  it('walks a body nested far deeper than the call stack could recurse, without failing', () => {
    const depth = 200_000;
    const text = `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":${'['.repeat(depth)}{"type":"image"}${']'.repeat(depth)}}]}`;
    expect(readMessagesBodyFacts(Buffer.from(text)).facts).toMatchObject({ imageBlocks: 1 });
  });

  it.each<[string, unknown, string]>([
    ['malformed JSON', '{"model": "m", ', 'The request body is not valid JSON.'],
    ['a JSON array', '[1, 2]', 'The request body must be a JSON object.'],
    ['a bare string', '"hello"', 'The request body must be a JSON object.'],
    ['no model', { max_tokens: 1, messages: [] }, 'model: Field required'],
    ['a model that is not a string', { ...minimal, model: 7 }, 'model: Input should be a non-empty string'],
    ['an empty model', { ...minimal, model: '' }, 'model: Input should be a non-empty string'],
    ['a model past its bound', { ...minimal, model: 'm'.repeat(MAX_MODEL_ID_CHARS + 1) }, `model: String should have at most ${MAX_MODEL_ID_CHARS} characters`],
    ['no max_tokens', { model: 'm', messages: [] }, 'max_tokens: Field required'],
    ['a fractional max_tokens', { ...minimal, max_tokens: 1.5 }, 'max_tokens: Input should be a valid integer'],
    ['max_tokens as text', { ...minimal, max_tokens: '64' }, 'max_tokens: Input should be a valid integer'],
    ['max_tokens 0', { ...minimal, max_tokens: 0 }, 'max_tokens: Input should be greater than or equal to 1'],
    ['no messages', { model: 'm', max_tokens: 1 }, 'messages: Field required'],
    ['messages that are not a list', { ...minimal, messages: { role: 'user' } }, 'messages: Input should be a valid list'],
  ])('refuses %s with a message naming the field', (_case, body, message) => {
    expect(readMessagesBodyFacts(bytesOf(body))).toEqual({ problem: { message } });
  });
});
