import { AnthropicProvider } from '../../../src/providers/anthropic';
import { ProviderFault } from '../../../src/runtime/faults';
import type { ProviderRequest, SendOptions, StopReason } from '../../../src/runtime/provider.port';
import { MessagesApiServer, messageReply, textBlock, toolUseBlock } from '../../support/messages-api-server';

const API_KEY = 'sk-ant-test-response-key';
const ATTEMPT_TIMEOUT_MS = 5_000;

const request: ProviderRequest = {
  model: 'claude-published-model',
  maxOutputTokens: 256,
  system: [],
  tools: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'What is 6*7?' }] }],
};

function sendOptions(): SendOptions {
  return { timeoutMs: ATTEMPT_TIMEOUT_MS, signal: new AbortController().signal };
}

describe('AnthropicProvider response mapping (docs/rules.md rule 12)', () => {
  let server: MessagesApiServer;
  let provider: AnthropicProvider;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
    provider = new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL });
  });

  afterEach(async () => {
    await server.close();
  });

  it.each<[string, StopReason]>([
    ['end_turn', 'end_turn'],
    ['tool_use', 'tool_use'],
    ['max_tokens', 'max_tokens'],
    ['refusal', 'refusal'],
    ['pause_turn', 'pause_turn'],
    ['stop_sequence', 'stop_sequence'],
    ['model_context_window_exceeded', 'context_window_exceeded'],
  ])('maps stop reason %s to %s', async (apiStopReason, expected) => {
    server.reply(messageReply({ stopReason: apiStopReason }));

    const response = await provider.send(request, sendOptions());

    expect(response.stopReason).toBe(expected);
  });

  it('keeps text and tool_use blocks in the order the model produced them', async () => {
    server.reply(
      messageReply({
        stopReason: 'tool_use',
        content: [textBlock('Let me calculate.'), toolUseBlock('toolu_a', 'calculate', { expression: '6*7' }), textBlock('And check.')],
      }),
    );

    const response = await provider.send(request, sendOptions());

    expect(response.content).toEqual([
      { type: 'text', text: 'Let me calculate.' },
      { type: 'tool_use', id: 'toolu_a', name: 'calculate', input: { expression: '6*7' } },
      { type: 'text', text: 'And check.' },
    ]);
  });

  it('reports usage with the cache write and read tokens, the request id, the answering model and the status', async () => {
    server.reply(
      messageReply({
        model: 'claude-answering-model-2026',
        usage: { input_tokens: 1_200, output_tokens: 85, cache_creation_input_tokens: 3_000, cache_read_input_tokens: 9_000 },
      }),
    );

    const response = await provider.send(request, sendOptions());

    expect(response.usage).toEqual({ inputTokens: 1_200, outputTokens: 85, cacheWriteTokens: 3_000, cacheWrite1hTokens: 0, cacheReadTokens: 9_000, webSearchRequests: 0 });
    expect(response.providerRequestId).toBe('req_fake_0001');
    expect(response.model).toBe('claude-answering-model-2026');
    expect(response.httpStatus).toBe(200);
  });

  it('reports the mode the request was served in (service tier, speed, inference geography), which its price depends on', async () => {
    server.reply(
      messageReply({ usage: { input_tokens: 40, output_tokens: 2, service_tier: 'priority', speed: 'fast', inference_geo: 'us' } }),
      messageReply({ usage: { input_tokens: 41, output_tokens: 3, service_tier: null, speed: null, inference_geo: '' } }),
    );

    const served = await provider.send(request, sendOptions());
    const unsaid = await provider.send(request, sendOptions());

    expect(served.usage).toMatchObject({ serviceTier: 'priority', speed: 'fast', inferenceGeo: 'us' });
    expect(unsaid.usage).not.toHaveProperty('serviceTier');
    expect(unsaid.usage).not.toHaveProperty('speed');
    expect(unsaid.usage).not.toHaveProperty('inferenceGeo');
  });

  it('counts null or absent cache counters as 0, because a request that used no cache reports null', async () => {
    server.reply(
      messageReply({ usage: { input_tokens: 40, output_tokens: 2, cache_creation_input_tokens: null, cache_read_input_tokens: null } }),
      messageReply({ usage: { input_tokens: 41, output_tokens: 3 } }),
    );

    const first = await provider.send(request, sendOptions());
    const second = await provider.send(request, sendOptions());

    expect(first.usage).toEqual({ inputTokens: 40, outputTokens: 2, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 });
    expect(second.usage).toEqual({ inputTokens: 41, outputTokens: 3, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 });
  });

  it('reports no usage when the provider reported none, so the attempt is not priced from invented numbers', async () => {
    server.reply(messageReply({ usage: null }));

    const response = await provider.send(request, sendOptions());

    expect(response.usage).toBeUndefined();
  });

  it('turns a 200 that is not JSON (a proxy’s page) into a server_error, which may succeed on retry', async () => {
    server.reply({ kind: 'raw', status: 200, body: '<html><body>maintenance</body></html>' });

    const fault = await provider.send(request, sendOptions()).catch((error: unknown) => error);

    expect(fault).toBeInstanceOf(ProviderFault);
    expect((fault as ProviderFault).classification).toBe('server_error');
    expect((fault as ProviderFault).details.httpStatus).toBe(200);
  });

  it('turns a 200 without a stop reason into a server_error that still carries the reported usage', async () => {
    server.reply(messageReply({ stopReason: null, usage: { input_tokens: 7, output_tokens: 1 } }));

    const fault = await provider.send(request, sendOptions()).catch((error: unknown) => error);

    expect(fault).toBeInstanceOf(ProviderFault);
    expect((fault as ProviderFault).classification).toBe('server_error');
    expect((fault as ProviderFault).details.usage).toEqual({ inputTokens: 7, outputTokens: 1, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 });
    expect((fault as ProviderFault).details.providerRequestId).toBe('req_fake_0001');
  });
});
