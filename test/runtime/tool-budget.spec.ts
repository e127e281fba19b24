import { scriptedToolUse } from '../../src/runtime';
import { LIMITS, countingTool, harness, submitAnswer } from './fixtures';

const calcCall = (id: string) => ({ id, name: 'calc', input: { expression: id } });

describe('BR-CAP-PFM-LLM-002-02 an oversized tool batch ends the conversation before any of its handlers runs (ATS-PFM-LLM-002-02)', () => {
  it('runs no handler for the turn it refused, rather than half of it', async () => {
    const calc = countingTool('calc');
    const { provider, run } = harness([
      scriptedToolUse([calcCall('a'), calcCall('b')]),
      scriptedToolUse([calcCall('c'), calcCall('d')]),
      scriptedToolUse([{ id: 'z', name: 'submit_answer', input: { value: 42 } }]),
    ]);
    const result = await run({ tools: [calc], answerTool: submitAnswer(), limits: { ...LIMITS, maxToolCalls: 3 } });
    expect(result).toMatchObject({ outcome: 'tool_limit', endingLimit: 'maxToolCalls', toolCallsUsed: 2, turnsUsed: 2 });
    expect(calc.runs).toEqual([{ expression: 'a' }, { expression: 'b' }]);
    expect(provider.stepsPlayed).toBe(2);
  });

  it('runs a batch that exactly fits the calls left', async () => {
    const calc = countingTool('calc');
    const { run } = harness([
      scriptedToolUse([calcCall('a'), calcCall('b')]),
      scriptedToolUse([{ id: 'z', name: 'submit_answer', input: { value: 42 } }]),
    ]);
    const result = await run({ tools: [calc], answerTool: submitAnswer(), limits: { ...LIMITS, maxToolCalls: 2 } });
    expect(result).toMatchObject({ outcome: 'completed', toolCallsUsed: 2 });
    expect(calc.runs).toHaveLength(2);
  });

  it('counts a rejected answer call in the batch, because it would be answered like any other', async () => {
    const calc = countingTool('calc');
    const answer = submitAnswer();
    const { run } = harness([scriptedToolUse([calcCall('a'), { id: 'x', name: 'submit_answer', input: { value: 7 } }])]);
    const result = await run({ tools: [calc], answerTool: answer, limits: { ...LIMITS, maxToolCalls: 1 } });
    expect(result).toMatchObject({ outcome: 'tool_limit', toolCallsUsed: 0 });
    expect(answer.judged).toEqual([{ value: 7 }]);
    expect(calc.runs).toHaveLength(0);
  });

  it('refuses any tool request when the budget is zero', async () => {
    const calc = countingTool('calc');
    const { run } = harness([scriptedToolUse([calcCall('a')])]);
    const result = await run({ tools: [calc], limits: { ...LIMITS, maxToolCalls: 0 } });
    expect(result).toMatchObject({ outcome: 'tool_limit', toolCallsUsed: 0 });
    expect(calc.runs).toHaveLength(0);
  });
});
