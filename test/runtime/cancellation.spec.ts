import { scriptedFault, scriptedText, scriptedToolUse } from '../../src/runtime';
import { countingTool, harness, submitAnswer } from './fixtures';

const finalAnswer = scriptedToolUse([{ id: 'final', name: 'submit_answer', input: { value: 42 } }]);
const calcTurn = scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '1' } }]);

describe('docs/rules.md step 1 cancellation ends the conversation cancelled at every boundary, never retried', () => {
  it('sends nothing when cancelled before the first turn', async () => {
    const controller = new AbortController();
    controller.abort();
    const { provider, run } = harness([finalAnswer]);
    const result = await run({ answerTool: submitAnswer(), signal: controller.signal });
    expect(result).toMatchObject({ outcome: 'cancelled', turnsUsed: 0, attemptCount: 0 });
    expect(result.endingLimit).toBeUndefined();
    expect(provider.stepsPlayed).toBe(0);
  });

  it('sends no next turn once cancelled between turns', async () => {
    const controller = new AbortController();
    const { provider, run } = harness([scriptedText('hm'), finalAnswer]);
    const result = await run({ answerTool: submitAnswer(), signal: controller.signal, onAttempt: () => controller.abort() });
    expect(result).toMatchObject({ outcome: 'cancelled', turnsUsed: 1 });
    expect(provider.stepsPlayed).toBe(1);
  });

  it('aborts the attempt in flight, records it as cancelled and does not retry it', async () => {
    const controller = new AbortController();
    const h = harness([scriptedText('slow', { latencyMs: 5_000 }), finalAnswer]);
    void h.clock.sleep(1_000).then(() => controller.abort());
    const result = await h.run({ answerTool: submitAnswer(), signal: controller.signal });
    expect(result).toMatchObject({ outcome: 'cancelled', faultClassification: 'cancelled', attemptCount: 1, elapsedMs: 1_000 });
    expect(result.attempts[0]).toMatchObject({ classification: 'cancelled', durationMs: 1_000, timedOut: false });
    expect(h.provider.calls[0]!.signal.aborted).toBe(true);
    expect(h.provider.stepsPlayed).toBe(1);
  });

  it('stops waiting for handlers and tells them to stop', async () => {
    const controller = new AbortController();
    const h = harness([calcTurn, finalAnswer]);
    let handlerSignal: AbortSignal | undefined;
    const calc = countingTool('calc', {
      behaviour: (_input, { signal }) => {
        handlerSignal = signal;
        return h.clock.sleep(5_000, signal);
      },
    });
    void h.clock.sleep(1_000).then(() => controller.abort());
    const result = await h.run({ tools: [calc], answerTool: submitAnswer(), signal: controller.signal });
    expect(result).toMatchObject({ outcome: 'cancelled', elapsedMs: 1_000 });
    expect(handlerSignal?.aborted).toBe(true);
    expect(h.provider.stepsPlayed).toBe(1);
  });

  it('stops waiting for a judge', async () => {
    const controller = new AbortController();
    const h = harness([finalAnswer]);
    const slow = submitAnswer(() => h.clock.sleep(5_000).then(() => ({ accepted: true as const })));
    void h.clock.sleep(1_000).then(() => controller.abort());
    const result = await h.run({ answerTool: slow, signal: controller.signal });
    expect(result).toMatchObject({ outcome: 'cancelled', answer: undefined });
  });

  it('stops a retry wait without another attempt', async () => {
    const controller = new AbortController();
    const h = harness([scriptedFault('overloaded'), finalAnswer]);
    void h.clock.sleep(100).then(() => controller.abort());
    const result = await h.run({ answerTool: submitAnswer(), signal: controller.signal });
    expect(result).toMatchObject({ outcome: 'cancelled', attemptCount: 1 });
    expect(h.provider.stepsPlayed).toBe(1);
  });
});
