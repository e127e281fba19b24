import { isTimeoutReason, scriptedText, scriptedToolUse, type Verdict } from '../../src/runtime';
import { LIMITS, countingTool, harness, submitAnswer } from './fixtures';

// LIMITS: totalTimeMs 60,000, attemptTimeoutMs 10,000; the virtual clock starts at 0.
const calcTurn = (id: string) => scriptedToolUse([{ id, name: 'calc', input: { expression: id } }]);
const answerTurn = (value = 42) => scriptedToolUse([{ id: `answer-${value}`, name: 'submit_answer', input: { value } }]);

describe('BR-CAP-PFM-LLM-002-04 no remaining time means no provider request (ATS-PFM-LLM-002-04)', () => {
  it('stops before a turn it has no time left for', async () => {
    const { run } = harness([scriptedText('never')]);
    const result = await run({ limits: { ...LIMITS, totalTimeMs: 0 } });
    expect(result).toMatchObject({ outcome: 'time_limit', endingLimit: 'totalTimeMs', turnsUsed: 0 });
  });

  it('makes no provider request at all in that case', async () => {
    const { provider, run } = harness([scriptedText('never')]);
    await run({ limits: { ...LIMITS, totalTimeMs: 0 } });
    expect(provider.calls).toHaveLength(0);
  });

  it('sends no further turn once the time is used up between turns (a slow accounting write here)', async () => {
    const { clock, provider, run } = harness([scriptedText('hm'), scriptedText('never')]);
    const result = await run({
      answerTool: submitAnswer(),
      onAttempt: () => clock.sleep(60_000),
    });
    expect(result).toMatchObject({ outcome: 'time_limit', turnsUsed: 1, elapsedMs: 60_000 });
    expect(provider.calls).toHaveLength(1);
  });

  it('counts the time budget from the given start, so the deadline it keeps is the one recorded at dispatch', async () => {
    const h = harness([answerTurn()]);
    await h.clock.advance(55_000);
    const result = await h.run({ answerTool: submitAnswer(), startedAtMs: 0 });
    expect(result.outcome).toBe('completed');
    // 55,000 of the 60,000 ms had passed when the loop began: its one attempt gets the 5,000 left.
    expect(h.provider.calls.map((call) => call.timeoutMs)).toEqual([5_000]);
    const late = harness([scriptedText('never')]);
    await late.clock.advance(60_000);
    expect(await late.run({ startedAtMs: 0 })).toMatchObject({ outcome: 'time_limit', turnsUsed: 0 });
    expect(late.provider.calls).toHaveLength(0);
  });

  it('caps the provider attempt timeout at the conversation time that remains', async () => {
    const h = harness([calcTurn('c1'), answerTurn()]);
    const calc = countingTool('calc', { behaviour: () => h.clock.sleep(55_000).then(() => 'done') });
    const result = await h.run({ tools: [calc], answerTool: submitAnswer() });
    expect(result.outcome).toBe('completed');
    expect(h.provider.calls.map((call) => call.timeoutMs)).toEqual([10_000, 5_000]);
  });
});

describe('FND-PFM-LLM-061 a slow handler or judge meets the deadline on the injected clock', () => {
  it('ends with time_limit at the deadline while a handler is still running, and tells the handler to stop', async () => {
    const h = harness([calcTurn('c1'), answerTurn()]);
    let handlerSignal: AbortSignal | undefined;
    const calc = countingTool('calc', {
      behaviour: async (_input, { signal }) => {
        handlerSignal = signal;
        await h.clock.sleep(120_000, signal);
        return 'late';
      },
    });
    const result = await h.run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'time_limit', endingLimit: 'totalTimeMs', elapsedMs: 60_000, toolCallsUsed: 1 });
    expect(handlerSignal?.aborted).toBe(true);
    expect(isTimeoutReason(handlerSignal?.reason)).toBe(true);
    expect(h.provider.calls).toHaveLength(1);
  });

  it('does not wait for a handler that ignores its signal: the runtime races it on the clock', async () => {
    const h = harness([calcTurn('c1'), answerTurn()]);
    const calc = countingTool('calc', { behaviour: () => h.clock.sleep(600_000).then(() => 'very late') });
    const result = await h.run({ tools: [calc], answerTool: submitAnswer() });
    expect(result).toMatchObject({ outcome: 'time_limit', elapsedMs: 60_000 });
    expect(h.provider.calls).toHaveLength(1);
  });

  it('lets a handler that finishes just in time hand the next turn the little time left', async () => {
    const h = harness([calcTurn('c1'), answerTurn()]);
    const calc = countingTool('calc', { behaviour: () => h.clock.sleep(59_999).then(() => 'just in time') });
    const result = await h.run({ tools: [calc], answerTool: submitAnswer() });
    expect(result.outcome).toBe('completed');
    expect(h.provider.calls[1]!.timeoutMs).toBe(1);
  });

  it('ends with time_limit when the judge is still deciding at the deadline, even if it would accept', async () => {
    const h = harness([answerTurn()]);
    let judgeSignal: AbortSignal | undefined;
    const slowJudge = submitAnswer(async () => {
      await h.clock.sleep(90_000);
      return { accepted: true } as Verdict;
    });
    const answerTool = {
      ...slowJudge,
      judge: (input: unknown, context: { signal: AbortSignal }) => {
        judgeSignal = context.signal;
        return slowJudge.judge(input, context);
      },
    };
    const result = await h.run({ answerTool });
    expect(result).toMatchObject({ outcome: 'time_limit', endingLimit: 'totalTimeMs', elapsedMs: 60_000 });
    expect(result.answer).toBeUndefined();
    expect(judgeSignal?.aborted).toBe(true);
  });

  it('judges a text answer against the same deadline', async () => {
    const h = harness([scriptedText('42')]);
    const result = await h.run({ textJudge: () => h.clock.sleep(61_000).then((): Verdict => ({ accepted: true })) });
    expect(result).toMatchObject({ outcome: 'time_limit', elapsedMs: 60_000 });
  });
});
