import { MAX_TOOL_ERROR_TEXT_CHARS, scriptedToolUse } from '../../src/runtime';
import { countingTool, harness, submitAnswer, toolResultsSent } from './fixtures';

const finalAnswer = scriptedToolUse([{ id: 'final', name: 'submit_answer', input: { value: 42 } }]);

describe('BR-CAP-PFM-LLM-002-08 the model receives one combined tool-results message and every answered call uses budget', () => {
  it('answers a batch with ONE user message holding one result per call id, in the order requested', async () => {
    const h = harness([
      scriptedToolUse([
        { id: 'slow', name: 'calc', input: { expression: 'slow' } },
        { id: 'fast', name: 'calc', input: { expression: 'fast' } },
        { id: 'bad', name: 'calc', input: {} },
      ]),
      finalAnswer,
    ]);
    // The first call finishes last, so request order cannot come from completion order.
    const calc = countingTool('calc', {
      behaviour: (input) => {
        const expression = (input as { expression: string }).expression;
        return h.clock.sleep(expression === 'slow' ? 300 : 100).then(() => `${expression} done`);
      },
    });
    const result = await h.run({ tools: [calc], answerTool: submitAnswer() });
    const second = h.provider.requests[1]!.messages;
    expect(second.at(-2)!.role).toBe('assistant');
    expect(second.at(-1)!.role).toBe('user');
    expect(toolResultsSent(h.provider, 1).map((block) => block.type === 'tool_result' && [block.toolUseId, block.isError])).toEqual([
      ['slow', false],
      ['fast', false],
      ['bad', true],
    ]);
    expect(result.toolCallsUsed).toBe(3);
    expect(h.clock.now()).toBe(300);
  });

  it('sends a string result as is and any other value as JSON', async () => {
    const { provider, run } = harness([
      scriptedToolUse([
        { id: 'a', name: 'text', input: {} },
        { id: 'b', name: 'json', input: {} },
      ]),
      finalAnswer,
    ]);
    const schema = { type: 'object' };
    await run({
      tools: [countingTool('text', { result: 'plain', schema }), countingTool('json', { result: { value: 42 }, schema })],
      answerTool: submitAnswer(),
    });
    expect(toolResultsSent(provider, 1).map((block) => block.type === 'tool_result' && block.content)).toEqual(['plain', '{"value":42}']);
  });
});

describe('BR-CAP-PFM-LLM-002-09 a thrown handler error becomes an error result for the model', () => {
  it('passes the failure back to the model as a tool result marked in error', async () => {
    const calc = countingTool('calc', {
      behaviour: () => {
        throw new Error('Division by zero in "1/0".');
      },
    });
    const { provider, run } = harness([scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '1/0' } }]), finalAnswer]);
    const result = await run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', toolCallsUsed: 1 });
    expect(toolResultsSent(provider, 1)).toEqual([{ type: 'tool_result', toolUseId: 'c1', content: 'Division by zero in "1/0".', isError: true }]);
  });

  it('sends neither a stack trace nor an oversized message', async () => {
    const calc = countingTool('calc', {
      behaviour: async () => {
        const error = new Error(`${'overflow '.repeat(500)}\n    at secret (/srv/internal/path.js:1:1)`);
        throw error;
      },
    });
    const { provider, run } = harness([scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: 'x' } }]), finalAnswer]);
    await run({ tools: [calc], answerTool: submitAnswer() });
    const [block] = toolResultsSent(provider, 1);
    if (block?.type !== 'tool_result') throw new Error('expected a tool result');
    expect(block.content.length).toBeLessThanOrEqual(MAX_TOOL_ERROR_TEXT_CHARS);
    expect(block.content).not.toMatch(/\bat secret\b|\/srv\/internal/);
  });

  it('answers a thrown non-Error with a generic text rather than its internal structure', async () => {
    const calc = countingTool('calc', {
      behaviour: () => {
        throw { query: 'SELECT * FROM secrets', code: 500 };
      },
    });
    const { provider, run } = harness([scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: 'x' } }]), finalAnswer]);
    await run({ tools: [calc], answerTool: submitAnswer() });
    expect(toolResultsSent(provider, 1)[0]).toMatchObject({ isError: true, content: 'Tool "calc" failed.' });
  });
});

describe('BR-CAP-PFM-LLM-002-15 a tool without a handler produces a repairable error (ATS-PFM-LLM-002-11)', () => {
  it('answers the call with an unavailable-tool error and completes in a later turn within the budgets', async () => {
    const lookup = countingTool('lookup', { withoutHandler: true });
    const { provider, run } = harness([scriptedToolUse([{ id: 'l1', name: 'lookup', input: { expression: 'x' } }]), finalAnswer]);
    const result = await run({ tools: [lookup], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', turnsUsed: 2, toolCallsUsed: 1 });
    const [block] = toolResultsSent(provider, 1);
    expect(block).toMatchObject({ toolUseId: 'l1', isError: true, content: expect.stringContaining('"lookup" is not available') });
  });
});
