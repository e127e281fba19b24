import { scriptedToolUse } from '../../src/runtime';
import { countingTool, harness, submitAnswer, toolResultsSent } from './fixtures';

const finalAnswer = scriptedToolUse([{ id: 'final', name: 'submit_answer', input: { value: 42 } }]);
const calcCall = (id: string, input: unknown = { expression: id }) => ({ id, name: 'calc', input });

describe('seed 003 batch-fatal faults end the conversation with protocol_error before anything runs', () => {
  it('refuses a batch that repeats a call id, running none of it', async () => {
    const calc = countingTool('calc');
    const { provider, run } = harness([scriptedToolUse([calcCall('same'), calcCall('same')]), finalAnswer]);
    const result = await run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'protocol_error', protocolViolation: 'duplicate_call_id', toolCallsUsed: 0 });
    expect(calc.runs).toHaveLength(0);
    expect(provider.stepsPlayed).toBe(1);
  });

  it('refuses a call id reused from an earlier turn', async () => {
    const calc = countingTool('calc');
    const { run } = harness([scriptedToolUse([calcCall('c1')]), scriptedToolUse([calcCall('c1', { expression: 'again' })]), finalAnswer]);
    const result = await run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'protocol_error', protocolViolation: 'reused_call_id', turnsUsed: 2, toolCallsUsed: 1 });
    expect(calc.runs).toEqual([{ expression: 'c1' }]);
  });

  it('refuses a call id already used in the transcript it was given', async () => {
    const calc = countingTool('calc');
    const { run } = harness([scriptedToolUse([calcCall('old')])]);
    const result = await run({
      tools: [calc],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'go' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'old', name: 'calc', input: { expression: '1' } }] },
        { role: 'user', content: [{ type: 'tool_result', toolUseId: 'old', content: '1', isError: false }] },
      ],
    });
    expect(result).toMatchObject({ outcome: 'protocol_error', protocolViolation: 'reused_call_id' });
  });

  it.each([
    ['before', ['w', 'r']],
    ['after', ['r', 'w']],
  ])('refuses a write tool with a read sibling %s it: the handler-run counter stays at zero', async (_label, order) => {
    const save = countingTool('save', { effect: 'write' });
    const calc = countingTool('calc');
    const calls = order.map((id) => (id === 'w' ? { id: 'w', name: 'save', input: { expression: 'x' } } : calcCall('r')));
    const { provider, run } = harness([scriptedToolUse(calls), finalAnswer]);
    const result = await run({ tools: [save, calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'protocol_error', protocolViolation: 'write_in_multi_call_batch' });
    expect(save.runs).toHaveLength(0);
    expect(calc.runs).toHaveLength(0);
    expect(provider.stepsPlayed).toBe(1);
  });

  it('refuses a write tool beside a malformed sibling too, so recovery cannot launder the batch into a lone write', async () => {
    const save = countingTool('save', { effect: 'write' });
    const { run } = harness([scriptedToolUse([{ id: 'w', name: 'save', input: { expression: 'x' } }, calcCall('m', {})]), finalAnswer]);
    const result = await run({ tools: [save, countingTool('calc')], answerTool: submitAnswer() });
    expect(result.outcome).toBe('protocol_error');
    expect(save.runs).toHaveLength(0);
  });

  it('runs a write tool that is alone in its batch', async () => {
    const save = countingTool('save', { effect: 'write' });
    const { run } = harness([scriptedToolUse([{ id: 'w', name: 'save', input: { expression: 'x' } }]), finalAnswer]);
    expect(await run({ tools: [save], answerTool: submitAnswer() })).toMatchObject({ outcome: 'completed', toolCallsUsed: 1 });
    expect(save.runs).toHaveLength(1);
  });
});

describe('seed 003 recoverable per-call faults are answered as repairable errors beside valid siblings', () => {
  it('runs the valid sibling and answers an unknown tool and malformed arguments with errors, in request order', async () => {
    const calc = countingTool('calc', { result: '42' });
    const { provider, run } = harness([
      scriptedToolUse([
        { id: 'u', name: 'telepathy', input: {} },
        calcCall('ok', { expression: '6*7' }),
        calcCall('m', { expression: ['6', '*', '7'] }),
      ]),
      finalAnswer,
    ]);
    const result = await run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', toolCallsUsed: 3 });
    expect(calc.runs).toEqual([{ expression: '6*7' }]);
    const results = toolResultsSent(provider, 1);
    expect(results).toEqual([
      { type: 'tool_result', toolUseId: 'u', isError: true, content: expect.stringContaining('"telepathy" is not available') },
      { type: 'tool_result', toolUseId: 'ok', isError: false, content: '42' },
      { type: 'tool_result', toolUseId: 'm', isError: true, content: expect.stringContaining('/expression must be string') },
    ]);
  });

  it('continues the bounded loop when every call in the batch is repairable, running nothing', async () => {
    const calc = countingTool('calc');
    const { run } = harness([scriptedToolUse([{ id: 'u', name: 'nope', input: {} }, calcCall('m', {})]), finalAnswer]);
    const result = await run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', turnsUsed: 2, toolCallsUsed: 2 });
    expect(calc.runs).toHaveLength(0);
  });
});
