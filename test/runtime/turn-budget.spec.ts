import { scriptedFault, scriptedText, scriptedToolUse } from '../../src/runtime';
import { LIMITS, countingTool, harness, submitAnswer } from './fixtures';

const wrongAnswer = (id: string) => scriptedToolUse([{ id, name: 'submit_answer', input: { value: 41 } }]);

describe('BR-CAP-PFM-LLM-002-01 the turn budget ends an unfinished conversation (ATS-PFM-LLM-002-01)', () => {
  it('stops a conversation that will not converge', async () => {
    const { provider, run } = harness([wrongAnswer('a1'), wrongAnswer('a2'), wrongAnswer('a3'), wrongAnswer('a4')]);
    const result = await run({ answerTool: submitAnswer(), limits: { ...LIMITS, maxTurns: 3 } });
    expect(result).toMatchObject({ outcome: 'turn_limit', endingLimit: 'maxTurns', turnsUsed: 3 });
    expect(provider.stepsPlayed).toBe(3);
  });

  it('made exactly the allowed number of provider requests, never one more', async () => {
    const { provider, run } = harness(Array.from({ length: 10 }, () => scriptedText('thinking…')));
    const result = await run({ answerTool: submitAnswer(), limits: { ...LIMITS, maxTurns: 4 } });
    expect(result.outcome).toBe('turn_limit');
    expect(provider.requests).toHaveLength(4);
    expect(provider.stepsLeft).toBe(6);
  });

  it('counts a retry as part of its turn, so retries never eat the turn budget', async () => {
    const { provider, run } = harness([scriptedFault('overloaded'), scriptedText('a'), scriptedText('b'), scriptedText('never')]);
    const result = await run({ answerTool: submitAnswer(), limits: { ...LIMITS, maxTurns: 2 } });
    expect(result).toMatchObject({ outcome: 'turn_limit', turnsUsed: 2, attemptCount: 3 });
    expect(provider.stepsPlayed).toBe(3);
  });

  it('does not run the last turn’s handlers, because no turn is left to read their results', async () => {
    const calc = countingTool('calc');
    const { run } = harness([
      scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '1' } }]),
      scriptedToolUse([{ id: 'c2', name: 'calc', input: { expression: '2' } }]),
    ]);
    const result = await run({ tools: [calc], limits: { ...LIMITS, maxTurns: 2 } });
    expect(result).toMatchObject({ outcome: 'turn_limit', endingLimit: 'maxTurns', toolCallsUsed: 1 });
    expect(calc.runs).toEqual([{ expression: '1' }]);
  });

  it('sends nothing at all with a budget of zero turns', async () => {
    const { provider, run } = harness([scriptedText('never')]);
    const result = await run({ limits: { ...LIMITS, maxTurns: 0 } });
    expect(result).toMatchObject({ outcome: 'turn_limit', turnsUsed: 0, attemptCount: 0 });
    expect(provider.stepsPlayed).toBe(0);
  });
});
