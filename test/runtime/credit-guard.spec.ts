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

});

describe('BR-CAP-PFM-LLM-002-03 the credit guard also covers text turns that continue (docs/rules.md step 8)', () => {
  it('stops a text turn answered with the answer-tool reminder once it spends past the hold, rather than sending another request', async () => {
    const { provider, run } = harness([scriptedText('let me think', { usage: usage(101) }), acceptedAnswer(0)]);
    const result = await run({ answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'credit_limit', endingLimit: 'creditHold', spentCredits: 101, turnsUsed: 1 });
    expect(provider.stepsPlayed).toBe(1);
  });

  it('stops a pause_turn past the hold, because resuming it is another billed request', async () => {
    const { provider, run } = harness([scriptedText('searching', { usage: usage(150), stopReason: 'pause_turn' }), acceptedAnswer(0)]);
    const result = await run({ answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'credit_limit', spentCredits: 150, turnsUsed: 1 });
    expect(provider.stepsPlayed).toBe(1);
  });

  it('stops a rejected final text past the hold instead of sending the judge’s feedback', async () => {
    const { provider, run } = harness([scriptedText('41', { usage: usage(120) }), scriptedText('42', { usage: usage(1) })]);
    const result = await run({ creditHold: 100, textJudge: (text) => (text === '42' ? { accepted: true } : { accepted: false, feedback: 'Check it.' }) });
    expect(result).toMatchObject({ outcome: 'credit_limit', spentCredits: 120 });
    expect(provider.stepsPlayed).toBe(1);
  });

  it('lets a reminder or pause_turn continue at exactly the hold, because only strict excess stops (FND-PFM-LLM-061)', async () => {
    const { run } = harness([
      scriptedText('searching', { usage: usage(40), stopReason: 'pause_turn' }),
      scriptedText('let me think', { usage: usage(60) }),
      acceptedAnswer(0),
    ]);
    const result = await run({ answerTool: submitAnswer(), creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'completed', spentCredits: 100, turnsUsed: 3 });
  });

  it('still lets an accepted final text complete over the hold: nothing more would be sent (BR-CAP-PFM-LLM-002-14)', async () => {
    const { run } = harness([scriptedText('42', { usage: usage(500) })]);
    const result = await run({ creditHold: 100 });
    expect(result).toMatchObject({ outcome: 'completed', spentCredits: 500 });
  });
});
