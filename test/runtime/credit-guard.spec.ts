import { scriptedFault, scriptedText, scriptedToolUse } from '../../src/runtime';
import { countingTool, harness, submitAnswer, usage } from './fixtures';

// ONE_CREDIT_PER_TOKEN: a turn's price equals its token count, so the figures read directly.
const toolTurn = (id: string, tokens: number) => scriptedToolUse([{ id, name: 'calc', input: { expression: id } }], { usage: usage(tokens) });
const acceptedAnswer = (tokens: number) => scriptedToolUse([{ id: 'final', name: 'submit_answer', input: { value: 42 } }], { usage: usage(tokens) });

describe('BR-CAP-PFM-LLM-002-03 the credit guard uses strict excess (ATS-PFM-LLM-002-03)', () => {
  it('stops when the reservation is spent, whether or not the next turn would have converged', async () => {
    const calc = countingTool('calc');
    const { provider, run } = harness([toolTurn('t1', 60), toolTurn('t2', 60), acceptedAnswer(1)]);
    const result = await run({ tools: [calc], answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'credit_limit', endingLimit: 'creditHold', turnsUsed: 2 });
    expect(provider.stepsPlayed).toBe(2);
    expect(calc.runs).toEqual([{ expression: 't1' }]);
  });

  it('reports what was actually spent, which is over the limit by the turn that crossed it', async () => {
    const { run } = harness([toolTurn('t1', 60), toolTurn('t2', 60)]);
    const result = await run({ tools: [countingTool('calc')], creditHold: 100 });
    expect(result.spentCredits).toBe(120);
    expect(result.attempts.map((a) => a.priceCredits)).toEqual([60, 60]);
  });

  it('continues when exactly the hold is spent, because only strict excess stops (FND-PFM-LLM-061)', async () => {
    const calc = countingTool('calc');
    const { run } = harness([toolTurn('t1', 50), toolTurn('t2', 50), acceptedAnswer(0)]);
    const result = await run({ tools: [calc], answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'completed', spentCredits: 100 });
    expect(calc.runs).toHaveLength(2);
  });

  it('stops at the hold plus one credit and keeps that crossing turn’s charge (FND-PFM-LLM-061)', async () => {
    const calc = countingTool('calc');
    const { run } = harness([toolTurn('t1', 50), toolTurn('t2', 51), acceptedAnswer(0)]);
    const result = await run({ tools: [calc], answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'credit_limit', spentCredits: 101 });
    expect(calc.runs).toHaveLength(1);
  });

  it('counts a billed failed attempt toward the guard, because the turn’s cost is all its attempts', async () => {
    const { run } = harness([toolTurn('t1', 60), scriptedFault('overloaded', { usage: usage(30) }), toolTurn('t2', 20)]);
    const result = await run({ tools: [countingTool('calc')], creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'credit_limit', spentCredits: 110 });
  });

  it('lets an accepted answer complete even over the hold, because final answers are checked first (BR-CAP-PFM-LLM-002-14)', async () => {
    const { run } = harness([toolTurn('t1', 90), acceptedAnswer(500)]);
    const result = await run({ tools: [countingTool('calc')], answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'completed', spentCredits: 590 });
  });

  it('applies only to tool-requesting turns, as SPEC §5 step 8 says: an over-budget text turn is bounded by the turn budget instead', async () => {
    const { run } = harness([scriptedText('let me think', { usage: usage(500) }), acceptedAnswer(0)]);
    const result = await run({ answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'completed', spentCredits: 500 });
  });
});
