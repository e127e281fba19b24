import { JUDGE_FAILED_FEEDBACK, MAX_TOOL_ERROR_TEXT_CHARS, scriptedText, scriptedToolUse, type Verdict } from '../../src/runtime';
import { LIMITS, countingTool, harness, submitAnswer, toolResultsSent, usage } from './fixtures';

const answer = (id: string, value: unknown, tokens = 0) =>
  scriptedToolUse([{ id, name: 'submit_answer', input: { value } }], { usage: usage(tokens) });

describe('BR-CAP-PFM-LLM-002-10 rejected answers can be repaired (ATS-PFM-LLM-002-08)', () => {
  it('answers the rejected call with what the consumer gave it, as that call’s own result', async () => {
    const { provider, run } = harness([answer('first', 41), answer('second', 42)]);
    await run({ answerTool: submitAnswer() });
    expect(toolResultsSent(provider, 1)).toEqual([{ type: 'tool_result', toolUseId: 'first', content: '41 is not the value.', isError: true }]);
  });

  it('counts the rejected call against the tool-call budget, because it was answered like any other', async () => {
    const { run } = harness([answer('first', 41), answer('second', 42)]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result.toolCallsUsed).toBe(1);
  });

  it('ends on the answer the consumer accepted, which is the repaired one (SC-CAP-PFM-LLM-002-02)', async () => {
    const { run } = harness([answer('first', 41), answer('second', 42)]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', answer: { value: 42 }, turnsUsed: 2 });
  });

  it('reads the throw as a rejection rather than losing the account of what the turns cost', async () => {
    let calls = 0;
    const judge = (input: { value: number }): Verdict => {
      calls += 1;
      if (calls === 1) throw new Error('judge database is down\n    at query (/srv/judge.js:1:1)');
      return input.value === 42 ? { accepted: true } : { accepted: false, feedback: 'no' };
    };
    const { provider, run } = harness([answer('first', 42, 30), answer('second', 42, 12)]);
    const result = await run({ answerTool: submitAnswer(judge) });
    expect(result).toMatchObject({ outcome: 'completed', spentCredits: 42, turnsUsed: 2 });
    const [rejected] = toolResultsSent(provider, 1);
    expect(rejected).toMatchObject({ toolUseId: 'first', isError: true, content: JUDGE_FAILED_FEEDBACK });
  });

  it('bounds the judge’s feedback before the model sees it', async () => {
    const { provider, run } = harness([answer('first', 41), answer('second', 42)]);
    await run({ answerTool: submitAnswer((input) => (input.value === 42 ? { accepted: true } : { accepted: false, feedback: 'z'.repeat(5_000) })) });
    const [rejected] = toolResultsSent(provider, 1);
    expect(rejected!.type === 'tool_result' && rejected!.content.length).toBe(MAX_TOOL_ERROR_TEXT_CHARS);
  });

  it('never judges an answer that fails its schema, and tells the model why instead', async () => {
    const tool = submitAnswer();
    const { provider, run } = harness([answer('first', 'forty-two'), answer('second', 42)]);
    await run({ answerTool: tool });
    expect(tool.judged).toEqual([{ value: 42 }]);
    const [rejected] = toolResultsSent(provider, 1);
    expect(rejected).toMatchObject({ isError: true, content: expect.stringContaining('/value must be number') });
  });
});

describe('BR-CAP-PFM-LLM-002-14 final acceptance precedes the later budget guards (ATS-PFM-LLM-002-10)', () => {
  it('completes on an accepted answer despite excess cost and requested tools, and runs none of them (FND-PFM-LLM-061)', async () => {
    const calc = countingTool('calc');
    const save = countingTool('save', { effect: 'write' });
    const { run } = harness([
      scriptedToolUse(
        [
          { id: 'c1', name: 'calc', input: { expression: '1' } },
          { id: 's1', name: 'save', input: { expression: '2' } },
          { id: 'c1', name: 'calc', input: { expression: 'dup' } },
          { id: 'a1', name: 'submit_answer', input: { value: 42 } },
        ],
        { usage: usage(5_000) },
      ),
    ]);
    const result = await run({ tools: [calc, save], answerTool: submitAnswer(), creditHold: 100, limits: { ...LIMITS, maxToolCalls: 1 } });
    expect(result).toMatchObject({ outcome: 'completed', answer: { value: 42 }, spentCredits: 5_000, toolCallsUsed: 0 });
    expect(calc.runs).toHaveLength(0);
    expect(save.runs).toHaveLength(0);
  });

  it('adds nothing to the answered-tool count for the accepted answer', async () => {
    const calc = countingTool('calc');
    const { run } = harness([scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '6*7' } }]), answer('a1', 42)]);
    const result = await run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', toolCallsUsed: 1 });
  });

  it('judges several answer calls in order and completes on the first accepted one', async () => {
    const tool = submitAnswer();
    const { run } = harness([
      scriptedToolUse([
        { id: 'a1', name: 'submit_answer', input: { value: 1 } },
        { id: 'a2', name: 'submit_answer', input: { value: 42 } },
        { id: 'a3', name: 'submit_answer', input: { value: 3 } },
      ]),
    ]);
    const result = await run({ answerTool: tool });
    expect(result).toMatchObject({ outcome: 'completed', answer: { value: 42 } });
    expect(tool.judged).toEqual([{ value: 1 }, { value: 42 }]);
  });
});

describe('docs/rules.md step 7 a text-only turn is the final answer only when no answer tool is designated', () => {
  it('accepts the text as the final answer when there is neither answer tool nor judge', async () => {
    const { run } = harness([scriptedText('The answer is 42.')]);
    expect(await run()).toMatchObject({ outcome: 'completed', answer: 'The answer is 42.', turnsUsed: 1 });
  });

  it('judges the text when a text judge is given, and sends its feedback back for a repair', async () => {
    const { provider, run } = harness([scriptedText('41'), scriptedText('42')]);
    const result = await run({ textJudge: (text) => (text === '42' ? { accepted: true } : { accepted: false, feedback: 'Check the product again.' }) });
    expect(result).toMatchObject({ outcome: 'completed', answer: '42', turnsUsed: 2 });
    const last = provider.requests[1]!.messages.at(-1)!;
    expect(last).toEqual({ role: 'user', content: [{ type: 'text', text: 'Check the product again.' }] });
  });

  it('reminds the model to call the answer tool, and goes on, when one is designated', async () => {
    const { provider, run } = harness([scriptedText('It is 42.'), answer('a1', 42)]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', turnsUsed: 2, toolCallsUsed: 0 });
    const messages = provider.requests[1]!.messages;
    expect(messages.at(-2)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'It is 42.' }] });
    expect(messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'text', text: 'Give your final answer by calling the submit_answer tool.' }] });
  });
});
