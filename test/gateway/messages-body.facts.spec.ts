import { MAX_GATEWAY_JSON_NESTING_LEVELS } from '../../src/gateway/anthropic-body.reader';
import { MAX_MODEL_ID_CHARS, MAX_SHOWN_TOOL_TYPE_CHARS, readMessagesBodyFacts } from '../../src/gateway/messages-body.facts';
import { MAX_WEB_FETCH_CONTENT_TOKENS, MAX_WEB_FETCH_USES } from '../../src/gateway/worst-case-hold';

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
      webFetches: [],
      codeExecutionTools: [],
      mcpServers: 0,
      definedTools: 0,
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

  it('gives each server tool’s bounds: web search’s max_uses, web fetch’s max_uses and max_content_tokens, each code-execution tool by where it is', () => {
    const { facts } = readMessagesBodyFacts(
      bytesOf({
        ...minimal,
        tools: [
          { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
          { name: 'calculate', input_schema: { type: 'object' } },
          { type: 'web_search_20260101', name: 'search_again' },
          { type: 'web_fetch_20250910', name: 'fetch', max_uses: 9, max_content_tokens: 2_000 },
          { type: 'web_fetch_20260101', name: 'fetch_again' },
          { type: 'code_execution_20250825', name: 'code_execution' },
          { type: 'custom', name: 'mine', input_schema: { type: 'object' } },
        ],
      }),
    );
    expect(facts).toMatchObject({
      webSearchMaxUses: [5, undefined],
      webFetches: [{ maxUses: 9, maxContentTokens: 2_000 }, {}],
      codeExecutionTools: [{ field: 'tools[5]', type: 'code_execution_20250825' }],
      mcpServers: 0,
      definedTools: 5,
    });
  });

  it('counts the client tools Anthropic defines (bash, text editor, computer, memory) for their definitions only', () => {
    const tools = [
      { type: 'bash_20250124', name: 'bash' },
      { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
      { type: 'computer_20250124', name: 'computer', display_width_px: 1024, display_height_px: 768 },
      { type: 'memory_20250818', name: 'memory' },
    ];
    expect(readMessagesBodyFacts(bytesOf({ ...minimal, tools })).facts).toMatchObject({ definedTools: 4, webSearchMaxUses: [], webFetches: [], codeExecutionTools: [] });
  });

  it('counts the MCP servers named, or the MCP toolsets where no server list is given', () => {
    const servers = [{ type: 'url', url: 'https://a.example.org', name: 'a' }, { type: 'url', url: 'https://b.example.org', name: 'b' }];
    expect(readMessagesBodyFacts(bytesOf({ ...minimal, mcp_servers: servers })).facts).toMatchObject({ mcpServers: 2 });
    expect(readMessagesBodyFacts(bytesOf({ ...minimal, tools: [{ type: 'mcp_toolset', mcp_server_name: 'a' }] })).facts).toMatchObject({ mcpServers: 1, definedTools: 1 });
    expect(readMessagesBodyFacts(bytesOf({ ...minimal, mcp_servers: 'not a list' })).facts).toMatchObject({ mcpServers: 1 });
  });

  it('gives speed and inference_geo as asked, and leaves them out when the body does not say', () => {
    expect(readMessagesBodyFacts(bytesOf({ ...minimal, speed: 'fast', inference_geo: 'us' })).facts).toMatchObject({ speed: 'fast', inferenceGeo: 'us' });
    const { facts } = readMessagesBodyFacts(bytesOf(minimal));
    expect(facts).not.toHaveProperty('speed');
    expect(facts).not.toHaveProperty('inferenceGeo');
  });

  it('walks a body nested as deep as it may be, and refuses one nested far deeper than the call stack could recurse, without failing', () => {
    const body = (depth: number) => Buffer.from(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":${'['.repeat(depth)}{"type":"image"}${']'.repeat(depth)}}]}`);
    // The body, messages, the message and the block are four of the levels.
    expect(readMessagesBodyFacts(body(MAX_GATEWAY_JSON_NESTING_LEVELS - 4)).facts).toMatchObject({ imageBlocks: 1 });
    expect(readMessagesBodyFacts(body(200_000))).toEqual({ problem: { message: `The request body is nested deeper than ${MAX_GATEWAY_JSON_NESTING_LEVELS} levels.` } });
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
    [
      'an unknown server tool',
      { ...minimal, tools: [{ name: 'mine', input_schema: {} }, { type: 'tool_search_tool_bm25_20251119', name: 'search' }] },
      'tools[1].type: tool_search_tool_bm25_20251119 is a server tool the gateway cannot bound, so it cannot hold the call',
    ],
    [
      'an unknown server tool with a type of a megabyte, repeated only in part',
      { ...minimal, tools: [{ type: `x_${'y'.repeat(1_000_000)}`, name: 'big' }] },
      `tools[0].type: x_${'y'.repeat(MAX_SHOWN_TOOL_TYPE_CHARS - 2)}… is a server tool the gateway cannot bound, so it cannot hold the call`,
    ],
    ['a tool type that is not a string', { ...minimal, tools: [{ type: 7, name: 'x' }] }, 'tools[0].type: Input should be a string'],
    ['a web fetch past its max_uses bound', { ...minimal, tools: [{ type: 'web_fetch_20250910', name: 'f', max_uses: MAX_WEB_FETCH_USES + 1 }] }, `tools[0].max_uses: Input should be a whole number from 1 to ${MAX_WEB_FETCH_USES}`],
    ['a web fetch of 0 uses', { ...minimal, tools: [{ type: 'web_fetch_20250910', name: 'f', max_uses: 0 }] }, `tools[0].max_uses: Input should be a whole number from 1 to ${MAX_WEB_FETCH_USES}`],
    [
      'a web fetch past its max_content_tokens bound',
      { ...minimal, tools: [{ type: 'web_fetch_20250910', name: 'f', max_content_tokens: 1e20 }] },
      `tools[0].max_content_tokens: Input should be a whole number from 1 to ${MAX_WEB_FETCH_CONTENT_TOKENS}`,
    ],
  ])('refuses %s with a message naming the field', (_case, body, message) => {
    expect(readMessagesBodyFacts(bytesOf(body))).toEqual({ problem: { message } });
  });
});
