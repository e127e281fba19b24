import { AnthropicProvider, MAX_CACHE_MARKERS } from '../../../src/providers/anthropic';
import type { ProviderRequest, SendOptions } from '../../../src/runtime/provider.port';
import { MessagesApiServer, messageReply } from '../../support/messages-api-server';

const API_KEY = 'sk-ant-test-request-key';
const ATTEMPT_TIMEOUT_MS = 5_000;

function sendOptions(): SendOptions {
  return { timeoutMs: ATTEMPT_TIMEOUT_MS, signal: new AbortController().signal };
}

type JsonObject = Record<string, any>;

/** Every `cache_control` in the body, wherever it sits. */
function countCacheMarkers(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countCacheMarkers(item), 0);
  if (typeof value !== 'object' || value === null) return 0;
  return Object.entries(value).reduce(
    (sum, [key, item]) => sum + (key === 'cache_control' ? 1 : countCacheMarkers(item)),
    0,
  );
}

/** Texts chosen to break any normalisation: whitespace at both ends, CRLF, tabs, escapes, non-ASCII. */
const TRICKY_TEXTS = [
  '  You are the arithmetic assistant.  \n\n',
  'Line one\r\nLine two\r\n\ttabbed "quoted" \\ backslashed',
  'Unicode: café — 日本語 — 🙂 — zero\u200bwidth — combining e\u0301',
  '{"looks":"like json"} </system> <!-- not markup -->',
  '\u00a0non-breaking spaces\u00a0and trailing newline\n',
  'ﬁ ligature, Ω ohm, Å angstrom: no Unicode normalisation please',
] as const;

describe('AnthropicProvider request building (BR-CAP-PFM-LLM-002-12, ATS-PFM-LLM-002-09)', () => {
  let server: MessagesApiServer;
  let provider: AnthropicProvider;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
  });

  afterEach(async () => {
    await server.close();
  });

  /** Six blocks ask to be cached: two tools, two system blocks, two message texts. */
  const sixAsking: ProviderRequest = {
    model: 'claude-test-model',
    maxOutputTokens: 512,
    tools: [
      { name: 'calculate', description: 'Evaluates an expression.', inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] }, stable: true },
      { name: 'submit_answer', description: 'Submits the final value.', inputSchema: { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] }, stable: true },
    ],
    system: [
      { type: 'text', text: TRICKY_TEXTS[0], stable: true },
      { type: 'text', text: TRICKY_TEXTS[1], stable: true },
    ],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: TRICKY_TEXTS[2], stable: true },
          { type: 'text', text: TRICKY_TEXTS[3], stable: true },
          { type: 'text', text: 'What is 6*7?' },
        ],
      },
    ],
  };

  it('never sends more than the four markers Anthropic takes, however many blocks asked to be cached', async () => {
    server.reply(messageReply({}));

    await provider.send(sixAsking, sendOptions());

    const body = server.requests[0].body as JsonObject;
    expect(countCacheMarkers(body)).toBe(MAX_CACHE_MARKERS);
    expect(MAX_CACHE_MARKERS).toBe(4);
  });

  it('keeps the earliest-stable markers in the prefix order tools, system, messages, and drops the later ones', async () => {
    server.reply(messageReply({}));

    await provider.send(sixAsking, sendOptions());

    const body = server.requests[0].body as JsonObject;
    expect(body.tools.map((tool: JsonObject) => tool.cache_control)).toEqual([{ type: 'ephemeral' }, { type: 'ephemeral' }]);
    expect(body.system.map((block: JsonObject) => block.cache_control)).toEqual([{ type: 'ephemeral' }, { type: 'ephemeral' }]);
    for (const block of body.messages[0].content) expect(block).not.toHaveProperty('cache_control');
  });

  it('carries a marker past unmarked blocks to the next stable one, until four are spent', async () => {
    server.reply(messageReply({}));
    const request: ProviderRequest = {
      ...sixAsking,
      tools: sixAsking.tools.map((tool) => ({ ...tool, stable: false })),
      system: [{ type: 'text', text: 'volatile preamble' }, { type: 'text', text: TRICKY_TEXTS[0], stable: true }],
      messages: [
        { role: 'user', content: TRICKY_TEXTS.slice(1).map((text) => ({ type: 'text' as const, text, stable: true })) },
      ],
    };

    await provider.send(request, sendOptions());

    const body = server.requests[0].body as JsonObject;
    expect(countCacheMarkers(body)).toBe(4);
    expect(body.system[0]).not.toHaveProperty('cache_control');
    expect(body.system[1].cache_control).toEqual({ type: 'ephemeral' });
    const markedMessageTexts = body.messages[0].content.map((block: JsonObject) => block.cache_control !== undefined);
    expect(markedMessageTexts).toEqual([true, true, true, false, false]);
  });

  it('sends the marked blocks’ text exactly as it was, so marking it changes nothing the model reads', async () => {
    server.reply(messageReply({}));
    const request: ProviderRequest = {
      ...sixAsking,
      system: [{ type: 'text', text: TRICKY_TEXTS[0], stable: true }, { type: 'text', text: TRICKY_TEXTS[1], stable: true }],
      messages: [{ role: 'user', content: TRICKY_TEXTS.slice(2).map((text) => ({ type: 'text' as const, text, stable: true })) }],
    };

    await provider.send(request, sendOptions());

    const { body, rawBody } = server.requests[0] as { body: JsonObject; rawBody: string };
    const sentTexts = [...body.system, ...body.messages[0].content].map((block: JsonObject) => block.text);
    expect(sentTexts).toEqual([...TRICKY_TEXTS]);
    // Byte level too: each text's JSON encoding appears verbatim in what crossed the wire.
    for (const text of TRICKY_TEXTS) expect(rawBody).toContain(JSON.stringify(text));
  });

  it('sends no marker at all when nothing is marked stable', async () => {
    server.reply(messageReply({}));
    const request: ProviderRequest = {
      model: 'claude-test-model',
      maxOutputTokens: 64,
      tools: [],
      system: [{ type: 'text', text: 'plain' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
    };

    await provider.send(request, sendOptions());

    const body = server.requests[0].body as JsonObject;
    expect(countCacheMarkers(body)).toBe(0);
    expect(body).not.toHaveProperty('tools');
  });
});

describe('AnthropicProvider request shape (docs/rules.md rule 12)', () => {
  let server: MessagesApiServer;
  let provider: AnthropicProvider;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
  });

  afterEach(async () => {
    await server.close();
  });

  const toolTurn: ProviderRequest = {
    model: 'claude-published-model',
    maxOutputTokens: 777,
    system: [{ type: 'text', text: 'Answer with submit_answer.' }],
    tools: [
      { name: 'calculate', description: 'Evaluates an arithmetic expression.', inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } },
    ],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'What is (2+3)*4 and 10/0?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Calculating both.' },
          { type: 'tool_use', id: 'toolu_1', name: 'calculate', input: { expression: '(2+3)*4' } },
          { type: 'tool_use', id: 'toolu_2', name: 'calculate', input: { expression: '10/0' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', toolUseId: 'toolu_1', content: '20', isError: false },
          { type: 'tool_result', toolUseId: 'toolu_2', content: 'division by zero', isError: true },
        ],
      },
    ],
  };

  it('posts the published model, max_tokens, system, tools with input_schema and the conversation to /v1/messages', async () => {
    server.reply(messageReply({}));

    await provider.send(toolTurn, sendOptions());

    expect(server.requests).toHaveLength(1);
    const { method, path, body } = server.requests[0] as { method: string; path: string; body: JsonObject };
    expect(method).toBe('POST');
    expect(path).toBe('/v1/messages');
    expect(body.model).toBe('claude-published-model');
    expect(body.max_tokens).toBe(777);
    expect(body.stream).toBeUndefined();
    expect(body.system).toEqual([{ type: 'text', text: 'Answer with submit_answer.' }]);
    expect(body.tools).toEqual([
      {
        name: 'calculate',
        description: 'Evaluates an arithmetic expression.',
        input_schema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
      },
    ]);
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Calculating both.' },
        { type: 'tool_use', id: 'toolu_1', name: 'calculate', input: { expression: '(2+3)*4' } },
        { type: 'tool_use', id: 'toolu_2', name: 'calculate', input: { expression: '10/0' } },
      ],
    });
  });

  it('answers a turn’s calls with ONE user message of tool_result blocks, is_error only on the failed one', async () => {
    server.reply(messageReply({}));

    await provider.send(toolTurn, sendOptions());

    const body = server.requests[0].body as JsonObject;
    expect(body.messages).toHaveLength(3);
    expect(body.messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: '20' },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: 'division by zero', is_error: true },
      ],
    });
  });

  it('merges results split over consecutive user messages into one, results first, so the API never sees two user turns', async () => {
    server.reply(messageReply({}));
    const [question, assistant] = toolTurn.messages;
    const split: ProviderRequest = {
      ...toolTurn,
      messages: [
        question,
        assistant,
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 'toolu_1', content: '20', isError: false }] },
        { role: 'user', content: [{ type: 'text', text: 'Remember to call submit_answer.' }] },
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 'toolu_2', content: 'division by zero', isError: true }] },
      ],
    };

    await provider.send(split, sendOptions());

    const body = server.requests[0].body as JsonObject;
    expect(body.messages).toHaveLength(3);
    expect(body.messages[2].content.map((block: JsonObject) => block.type)).toEqual(['tool_result', 'tool_result', 'text']);
    expect(body.messages[2].content.map((block: JsonObject) => block.tool_use_id ?? block.text)).toEqual([
      'toolu_1',
      'toolu_2',
      'Remember to call submit_answer.',
    ]);
  });

  it('authenticates with the configured key and speaks a pinned API version', async () => {
    server.reply(messageReply({}));

    await provider.send(toolTurn, sendOptions());

    const { headers } = server.requests[0];
    const credentials = `${headers.authorization ?? ''} ${headers['x-api-key'] ?? ''}`;
    expect(credentials).toContain(API_KEY);
    expect(headers['anthropic-version']).toEqual(expect.any(String));
    expect(headers['content-type']).toContain('application/json');
  });
});
