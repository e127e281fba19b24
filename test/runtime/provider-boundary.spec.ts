import { scriptedFault, scriptedToolUse, type TextBlock } from '../../src/runtime';
import { LIMITS, countingTool, harness, submitAnswer } from './fixtures';

const finalAnswer = scriptedToolUse([{ id: 'final', name: 'submit_answer', input: { value: 42 } }]);

describe('BR-CAP-PFM-LLM-002-12 stable content reaches the provider unchanged and marked, so the adapter can cache it (runtime half of ATS-PFM-LLM-002-09)', () => {
  it('sends the stable system blocks exactly as given and every tool definition marked stable, on every turn', async () => {
    const system: TextBlock[] = [
      { type: 'text', text: 'You are a careful calculator.\n  Keep   spacing.', stable: true },
      { type: 'text', text: 'Today is a test.' },
    ];
    const { provider, run } = harness([scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '1' } }]), finalAnswer]);
    await run({ system, tools: [countingTool('calc')], answerTool: submitAnswer() });
    for (const request of provider.requests) {
      expect(request.system).toEqual(system);
      expect(request.tools.map((tool) => [tool.name, tool.stable])).toEqual([
        ['calc', true],
        ['submit_answer', true],
      ]);
    }
    // The at-most-four cache markers are the Anthropic adapter's rule (ATS-PFM-LLM-002-09 is proved there).
  });
});

describe('BR-CAP-PFM-LLM-002-13 a failure never triggers a substitute model or provider', () => {
  it('sends every attempt of every turn to the one provider with the published model', async () => {
    const { provider, run } = harness([scriptedFault('overloaded'), scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '1' } }]), finalAnswer]);
    await run({ tools: [countingTool('calc')], answerTool: submitAnswer(), model: 'published-model' });
    expect(provider.requests.map((request) => request.model)).toEqual(['published-model', 'published-model', 'published-model']);
  });

  it('ends failed on a permanent fault without asking anyone else', async () => {
    const { provider, run } = harness([scriptedFault('unauthorized', { httpStatus: 401 }), finalAnswer]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'failed', faultClassification: 'unauthorized', attemptCount: 1 });
    expect(provider.stepsLeft).toBe(1);
  });

  it('ends failed with the last class when the retries of a turn are exhausted', async () => {
    const { run } = harness([scriptedFault('overloaded'), scriptedFault('server_error'), scriptedFault('connection'), finalAnswer]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'failed', faultClassification: 'connection', attemptCount: 3, endingLimit: undefined });
  });

  it('ends time_limit with the last fault when no time is left for the next attempt', async () => {
    const { run } = harness([scriptedFault('overloaded'), finalAnswer]);
    const result = await run({ answerTool: submitAnswer(), limits: { ...LIMITS, totalTimeMs: 300 } });
    expect(result).toMatchObject({ outcome: 'time_limit', endingLimit: 'totalTimeMs', faultClassification: 'overloaded' });
  });
});

describe('runToolLoop refuses invalid configuration before sending anything', () => {
  it.each([
    ['a negative turn budget', { limits: { ...LIMITS, maxTurns: -1 } }],
    ['a fractional hold', { creditHold: 1.5 }],
    ['a zero attempt budget', { limits: { ...LIMITS, maxAttemptsPerTurn: 0 } }],
    ['a negative price', { prices: { inputPerMTok: -1, outputPerMTok: 0, cacheWritePerMTok: 0, cacheReadPerMTok: 0 } }],
    ['an empty model', { model: '' }],
    ['two tools with one name', { tools: [countingTool('calc'), countingTool('calc')] }],
  ])('rejects %s', async (_label, overrides) => {
    const { provider, run } = harness([finalAnswer]);
    await expect(run(overrides)).rejects.toThrow();
    expect(provider.stepsPlayed).toBe(0);
  });
});
