import { AnthropicProvider } from '../../../src/providers/anthropic';
import {
  BASE_RETRY_WAIT_MS,
  runToolLoop,
  VirtualClock,
  type AttemptRecord,
  type ConversationLimits,
  type Prices,
  type ToolSpec,
} from '../../../src/runtime';
import { errorReply, MessagesApiServer, messageReply, textBlock, toolUseBlock } from '../../support/messages-api-server';

const API_KEY = 'sk-ant-test-e2e-key';

/** Credits per million tokens; cache writes and reads priced apart so leaving them out would show. */
const prices: Prices = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 };

const limits: ConversationLimits = {
  maxTurns: 4,
  maxToolCalls: 4,
  totalTimeMs: 60_000,
  attemptTimeoutMs: 30_000,
  maxOutputTokens: 512,
  maxAttemptsPerTurn: 3,
};

const calculate: ToolSpec<{ expression: string }> = {
  name: 'calculate',
  description: 'Evaluates an arithmetic expression.',
  inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'], additionalProperties: false },
  effect: 'read',
  handler: ({ expression }) => {
    if (expression !== '6*7') throw new Error(`unexpected expression ${expression}`);
    return 42;
  },
};

describe('runToolLoop over the Anthropic adapter and the real SDK: a tool turn, a 529 then success, a final answer (BR-CAP-PFM-LLM-002-05, BR-CAP-PFM-LLM-002-07, ATS-PFM-LLM-002-07, ATS-PFM-LLM-002-14)', () => {
  let server: MessagesApiServer;

  beforeEach(async () => {
    server = await MessagesApiServer.start();
  });

  afterEach(async () => {
    await server.close();
  });

  it('completes with every attempt recorded and priced from the usage the server reported, cache tokens included', async () => {
    server.reply(
      messageReply({
        stopReason: 'tool_use',
        content: [textBlock('Let me calculate.'), toolUseBlock('toolu_calc_1', 'calculate', { expression: '6*7' })],
        usage: { input_tokens: 1_000, output_tokens: 50, cache_creation_input_tokens: 2_000, cache_read_input_tokens: null },
      }),
      errorReply(529, 'overloaded_error', 'Overloaded'),
      messageReply({
        stopReason: 'tool_use',
        content: [toolUseBlock('toolu_answer_1', 'submit_answer', { value: 42 })],
        usage: { input_tokens: 1_100, output_tokens: 30, cache_creation_input_tokens: 0, cache_read_input_tokens: 2_000 },
      }),
    );
    // Real HTTP is in flight, so time moves only when this test moves it.
    const clock = new VirtualClock({ autoAdvance: false });
    const reported: AttemptRecord[] = [];
    let overloadReported!: () => void;
    const overloaded = new Promise<void>((resolve) => (overloadReported = resolve));

    const conversation = runToolLoop({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is 6*7?' }] }],
      system: [{ type: 'text', text: 'Use calculate, then submit_answer.', stable: true }],
      tools: [calculate as ToolSpec],
      answerTool: {
        name: 'submit_answer',
        description: 'Submits the final numeric answer.',
        inputSchema: { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] },
        judge: (input) => ((input as { value: number }).value === 42 ? { accepted: true } : { accepted: false, feedback: 'wrong value' }),
      },
      limits,
      prices,
      creditHold: 1_000,
      model: 'claude-published-model',
      provider: new AnthropicProvider({ apiKey: API_KEY, baseURL: server.baseURL }),
      clock,
      random: () => 0,
      onAttempt: (record) => {
        reported.push(record);
        if (record.classification === 'overloaded') overloadReported();
      },
    });

    // The retry waits on the virtual clock: with no jitter, exactly the first backoff step.
    await overloaded;
    await clock.advance(BASE_RETRY_WAIT_MS);
    const result = await conversation;

    expect(result).toMatchObject({ outcome: 'completed', answer: { value: 42 }, turnsUsed: 2, toolCallsUsed: 1 });
    expect(server.requests).toHaveLength(3);

    // Turn 1: 1,000·3,000 + 50·15,000 + 2,000·3,750 = 11,250,000 → 12 credits (3.75 → 4 without the cache write).
    // Turn 2, retry 0: the 529 reported no usage and costs 0.
    // Turn 2, retry 1: 1,100·3,000 + 30·15,000 + 2,000·300 = 4,350,000 → 5 credits (4 without the cache read).
    expect(result.attempts.map((a) => ({ turn: a.turn, retry: a.retry, classification: a.classification, httpStatus: a.httpStatus, providerRequestId: a.providerRequestId, waitBeforeMs: a.waitBeforeMs, usage: a.usage, priceCredits: a.priceCredits }))).toEqual([
      {
        turn: 1,
        retry: 0,
        classification: 'ok',
        httpStatus: 200,
        providerRequestId: 'req_fake_0001',
        waitBeforeMs: 0,
        usage: { inputTokens: 1_000, outputTokens: 50, cacheWriteTokens: 2_000, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 },
        priceCredits: 12,
      },
      { turn: 2, retry: 0, classification: 'overloaded', httpStatus: 529, providerRequestId: 'req_fake_0002', waitBeforeMs: 0, usage: undefined, priceCredits: 0 },
      {
        turn: 2,
        retry: 1,
        classification: 'ok',
        httpStatus: 200,
        providerRequestId: 'req_fake_0003',
        waitBeforeMs: BASE_RETRY_WAIT_MS,
        usage: { inputTokens: 1_100, outputTokens: 30, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 2_000, webSearchRequests: 0 },
        priceCredits: 5,
      },
    ]);
    expect(reported).toEqual(result.attempts);
    expect(result.spentCredits).toBe(17);
    expect(result.usageTotals).toEqual({ inputTokens: 2_100, outputTokens: 80, cacheWriteTokens: 2_000, cacheWrite1hTokens: 0, cacheReadTokens: 2_000, webSearchRequests: 0 });

    // What crossed the wire: the retry resent the same turn, which answered the call in ONE user message.
    const [first, second, third] = server.requests.map((r) => r.body as Record<string, any>);
    expect(third).toEqual(second);
    expect(first.messages).toHaveLength(1);
    expect(second.messages).toHaveLength(3);
    expect(second.messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_calc_1', content: '42' }] });
    expect(second.tools.map((tool: { name: string }) => tool.name)).toEqual(['calculate', 'submit_answer']);
    expect(JSON.stringify(second).match(/"cache_control"/g)).toHaveLength(3);
  });
});
