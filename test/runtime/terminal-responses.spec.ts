import { scriptedText, scriptedToolUse } from '../../src/runtime';
import { harness, submitAnswer, usage } from './fixtures';

const acceptable = [{ id: 'a1', name: 'submit_answer', input: { value: 42 } }];

describe('BR-CAP-PFM-LLM-002-11 a refusal or an output cut-off ends the conversation without an accepted answer', () => {
  it('ends refused_by_model without a retry, because asking again will not change the model’s mind', async () => {
    const { provider, run } = harness([scriptedText('I can’t help with that.', { stopReason: 'refusal', usage: usage(9) }), scriptedText('never')]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'refused_by_model', turnsUsed: 1, attemptCount: 1, spentCredits: 9 });
    expect(provider.stepsPlayed).toBe(1);
  });

  it('never judges an answer carried by a refused response', async () => {
    const tool = submitAnswer();
    const { run } = harness([scriptedToolUse(acceptable, { stopReason: 'refusal' })]);
    expect(await run({ answerTool: tool })).toMatchObject({ outcome: 'refused_by_model' });
    expect(tool.judged).toHaveLength(0);
  });

  it('ends incomplete on max_tokens, never with an accepted answer, because cut-off arguments are not an answer', async () => {
    const tool = submitAnswer();
    const { run } = harness([scriptedToolUse(acceptable, { stopReason: 'max_tokens' })]);
    const result = await run({ answerTool: tool });
    expect(result).toMatchObject({ outcome: 'incomplete' });
    expect(result.answer).toBeUndefined();
    expect(tool.judged).toHaveLength(0);
  });

  it('ends incomplete on max_tokens for a text answer too', async () => {
    const { run } = harness([scriptedText('The answer is 4', { stopReason: 'max_tokens' })]);
    expect(await run()).toMatchObject({ outcome: 'incomplete', answer: undefined });
  });

  it('ends incomplete when the context window is exceeded', async () => {
    const { run } = harness([scriptedText('', { stopReason: 'context_window_exceeded' })]);
    expect(await run({ answerTool: submitAnswer() })).toMatchObject({ outcome: 'incomplete' });
  });
});

describe('pause_turn and stop_sequence are ordinary, non-terminal stops', () => {
  it('sends a paused turn back to the model to continue, counting it as a turn', async () => {
    const { provider, run } = harness([scriptedText('Working on it', { stopReason: 'pause_turn' }), scriptedToolUse(acceptable)]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'completed', turnsUsed: 2 });
    const second = provider.requests[1]!.messages;
    expect(second.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Working on it' }] });
  });

  it('treats stop_sequence like end_turn: the text is the answer without an answer tool', async () => {
    const { run } = harness([scriptedText('42', { stopReason: 'stop_sequence' })]);
    expect(await run()).toMatchObject({ outcome: 'completed', answer: '42' });
  });

  it('treats stop_sequence like end_turn: a reminder with an answer tool', async () => {
    const { provider, run } = harness([scriptedText('42', { stopReason: 'stop_sequence' }), scriptedToolUse(acceptable)]);
    expect(await run({ answerTool: submitAnswer() })).toMatchObject({ outcome: 'completed', turnsUsed: 2 });
    expect(provider.requests[1]!.messages.at(-1)!.role).toBe('user');
  });
});
