/**
 * The adapter's billing-relevant mapping, through the real `@anthropic-ai/sdk` against the local
 * Messages API server (no network): 1-hour cache markers, usage field by field, web search and
 * extended thinking passed through, and the prices Anthropic's rules give for each.
 */
import { AnthropicProvider } from '../../../src/providers/anthropic';
import { MAX_CACHE_MARKERS } from '../../../src/providers/anthropic/anthropic-request.builder';
import { runToolLoop, VirtualClock, type ConversationLimits, type Prices, type ProviderRequest, type ToolSpec } from '../../../src/runtime';
import { MessagesApiServer, messageReply, textBlock, toolUseBlock } from '../../support/messages-api-server';
import { SONNET_LIST_PRICES } from '../../support/list-prices';

const SONNET: Prices = SONNET_LIST_PRICES;

const limits: ConversationLimits = { maxTurns: 4, maxToolCalls: 4, totalTimeMs: 60_000, attemptTimeoutMs: 30_000, maxOutputTokens: 4_096, maxAttemptsPerTurn: 1 };

const lookup: ToolSpec = {
  name: 'lookup',
  description: 'Looks a figure up.',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  effect: 'read',
  handler: () => '42',
};

const WEB_SEARCH = { type: 'web_search_20250305', name: 'web_search', max_uses: 3 };
const THINKING = { type: 'thinking', thinking: 'The user wants a figure; search first, then look it up.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' };
const REDACTED = { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' };
const SEARCH_CALL = { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'population of Lyon' } };
const SEARCH_RESULT = {
  type: 'web_search_tool_result',
  tool_use_id: 'srvtoolu_01',
  content: [{ type: 'web_search_result', url: 'https://example.org/lyon', title: 'Lyon', encrypted_content: 'Eq0BCioIAhgB', page_age: null }],
};

describe('docs/rules.md rule 12 BR-CAP-PFM-LLM-002-12 the Anthropic adapter over the real SDK: cache lifetimes, usage kinds, server tools and thinking', () => {
  let server: MessagesApiServer;
  let provider: AnthropicProvider;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    provider = new AnthropicProvider({ apiKey: 'sk-ant-test-billing', baseURL: server.baseURL });
  });

  afterEach(() => server.close());

  const send = (request: Partial<ProviderRequest>) =>
    provider.send(
      { model: 'claude-test-sonnet', system: [], messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], tools: [], maxOutputTokens: 64, ...request },
      { timeoutMs: 10_000, signal: new AbortController().signal },
    );

  it('marks blocks that ask for an hour with ttl 1h, places 1-hour markers before 5-minute ones, and sends at most four', async () => {
    server.reply(messageReply({}));
    await send({
      tools: [
        { name: 'a', description: 'A.', inputSchema: { type: 'object' }, stable: true, cacheTtl: '1h' },
        { name: 'b', description: 'B.', inputSchema: { type: 'object' }, stable: true },
      ],
      system: [
        // Asks for an hour after a 5-minute marker: the API would refuse that order, so it is cached for 5 minutes.
        { type: 'text', text: 'Policy.', stable: true, cacheTtl: '1h' },
        { type: 'text', text: 'Examples.', stable: true },
      ],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Fifth asker: no marker left.', stable: true, cacheTtl: '1h' }] }],
    });
    const body = server.requests[0]!.body as { tools: { cache_control?: unknown }[]; system: { text: string; cache_control?: unknown }[]; messages: { content: { text: string; cache_control?: unknown }[] }[] };
    expect(body.tools.map((tool) => tool.cache_control)).toEqual([{ type: 'ephemeral', ttl: '1h' }, { type: 'ephemeral' }]);
    expect(body.system).toEqual([
      { type: 'text', text: 'Policy.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Examples.', cache_control: { type: 'ephemeral' } },
    ]);
    expect(body.messages[0]!.content).toEqual([{ type: 'text', text: 'Fifth asker: no marker left.' }]);
    const markers = [...body.tools, ...body.system, ...body.messages[0]!.content].filter((block) => block.cache_control !== undefined);
    expect(markers).toHaveLength(MAX_CACHE_MARKERS);
  });

  it('keeps an all-1-hour prefix at 1 hour, so a feature that caches for an hour is billed and cached for an hour', async () => {
    server.reply(messageReply({}));
    await send({ system: [{ type: 'text', text: 'Long policy.', stable: true, cacheTtl: '1h' }], messages: [{ role: 'user', content: [{ type: 'text', text: 'Doc.', stable: true, cacheTtl: '1h' }] }] });
    const body = server.requests[0]!.body as { system: { cache_control: unknown }[]; messages: { content: { cache_control: unknown }[] }[] };
    expect(body.system[0]!.cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
    expect(body.messages[0]!.content[0]!.cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
  });

  it('maps usage field by field: 5-minute and 1-hour writes, reads, web searches and the service tier', async () => {
    server.reply(
      messageReply({
        usage: {
          input_tokens: 1_000,
          output_tokens: 500,
          cache_creation_input_tokens: 12_000,
          cache_creation: { ephemeral_5m_input_tokens: 2_000, ephemeral_1h_input_tokens: 10_000 },
          cache_read_input_tokens: 3_000,
          server_tool_use: { web_search_requests: 2 },
          service_tier: 'standard',
        },
      }),
    );
    expect((await send({})).usage).toEqual({
      inputTokens: 1_000,
      outputTokens: 500,
      cacheWriteTokens: 2_000,
      cacheWrite1hTokens: 10_000,
      cacheReadTokens: 3_000,
      webSearchRequests: 2,
      serviceTier: 'standard',
    });
  });

  it('sends web search and extended thinking as the feature asks, and sends thinking and search blocks back exactly as received', async () => {
    server.reply(
      messageReply({
        stopReason: 'tool_use',
        content: [THINKING, SEARCH_CALL, SEARCH_RESULT, REDACTED, textBlock('Lyon has about 520,000 people; checking.'), toolUseBlock('toolu_1', 'lookup', { q: 'lyon' })],
        usage: { input_tokens: 2_000, output_tokens: 300, server_tool_use: { web_search_requests: 3 } },
      }),
      messageReply({ content: [textBlock('About 520,000.')], usage: { input_tokens: 2_500, output_tokens: 20 } }),
    );
    const result = await runToolLoop({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'How many people live in Lyon?' }] }],
      tools: [lookup],
      providerFeatures: { serverTools: [WEB_SEARCH], thinking: { budgetTokens: 2_048 } },
      limits,
      prices: SONNET,
      creditHold: 1_000_000,
      model: 'claude-test-sonnet',
      provider,
      clock: new VirtualClock({ autoAdvance: false }),
    });
    expect(result.outcome).toBe('completed');

    const first = server.requests[0]!.body as { tools: unknown[]; thinking: unknown };
    expect(first.tools).toEqual([expect.objectContaining({ name: 'lookup' }), WEB_SEARCH]);
    expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 2_048 });
    const second = server.requests[1]!.body as { messages: { role: string; content: unknown[] }[] };
    expect(second.messages[1]).toEqual({
      role: 'assistant',
      content: [THINKING, SEARCH_CALL, SEARCH_RESULT, REDACTED, { type: 'text', text: 'Lyon has about 520,000 people; checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'lyon' } }],
    });
    // The raw bytes carry the signature unchanged (a re-serialised or edited thinking block is refused by the API).
    expect(server.requests[1]!.rawBody).toContain(`"signature":"${THINKING.signature}"`);

    // Turn 1: 2,000·3 + 300·15 + 3 searches·10,000,000/1,000 = 6,000 + 4,500 + 30,000 credits.
    // Turn 2: 2,500·3 + 20·15 = 7,500 + 300.
    expect(result.attempts.map((attempt) => attempt.priceCredits)).toEqual([40_500, 7_800]);
    expect(result.usageTotals).toMatchObject({ webSearchRequests: 3 });
    expect(result.spentCredits).toBe(48_300);
  });

  it('prices an attempt with 1-hour writes and one past the long-context threshold exactly as Anthropic bills them', async () => {
    server.reply(
      messageReply({
        stopReason: 'tool_use',
        content: [toolUseBlock('toolu_1', 'lookup', { q: 'doc' })],
        usage: {
          input_tokens: 1_000,
          output_tokens: 500,
          cache_creation_input_tokens: 10_000,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 10_000 },
          cache_read_input_tokens: 0,
        },
      }),
      messageReply({
        content: [textBlock('Done.')],
        usage: {
          input_tokens: 150_000,
          output_tokens: 2_000,
          cache_creation_input_tokens: 30_000,
          cache_creation: { ephemeral_5m_input_tokens: 30_000, ephemeral_1h_input_tokens: 0 },
          cache_read_input_tokens: 25_000,
        },
      }),
    );
    const result = await runToolLoop({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarise the document.', stable: true, cacheTtl: '1h' }] }],
      tools: [lookup],
      limits,
      prices: SONNET,
      creditHold: 10_000_000,
      model: 'claude-test-sonnet',
      provider,
      clock: new VirtualClock({ autoAdvance: false }),
    });
    expect(result.outcome).toBe('completed');
    // Turn 1: 1,000·3 + 500·15 + 10,000 one-hour writes·6 = 3,000 + 7,500 + 60,000 (at the 5-minute rate it would be 48,000).
    // Turn 2: input 150,000 + 30,000 + 25,000 = 205,000 > 200,000, so all of it at the long-context rates:
    // 150,000·6 + 30,000·7.5 + 25,000·0.6 + 2,000·22.5 = 900,000 + 225,000 + 15,000 + 45,000.
    expect(result.attempts.map((attempt) => attempt.priceCredits)).toEqual([70_500, 1_185_000]);
    expect(result.attempts[0]!.usage).toMatchObject({ cacheWriteTokens: 0, cacheWrite1hTokens: 10_000 });
    expect(result.spentCredits).toBe(1_255_500);
  });
});
