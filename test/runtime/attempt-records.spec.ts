import {
  MAX_RETAINED_ATTEMPTS,
  priceAttempt,
  scriptedFault,
  scriptedText,
  scriptedToolUse,
  type AttemptRecord,
  type Prices,
  type ScriptedStep,
} from '../../src/runtime';
import { LIMITS, countingTool, harness, submitAnswer, usage } from './fixtures';

const RATES: Prices = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheReadPerMTok: 300_000 };
const finalAnswer = (tokens = 0) => scriptedToolUse([{ id: 'final', name: 'submit_answer', input: { value: 42 } }], { usage: usage(tokens, tokens) });

describe('BR-CAP-PFM-LLM-002-07 retries retain their own usage prices (ATS-PFM-LLM-002-07)', () => {
  const steps = () => [scriptedFault('overloaded', { httpStatus: 529 }), finalAnswer(100)];

  it('prices the failed attempt, which reported nothing, at zero', async () => {
    const { run } = harness(steps());
    const result = await run({ answerTool: submitAnswer(), prices: RATES });
    expect(result.attempts[0]).toMatchObject({ classification: 'overloaded', usage: undefined, priceCredits: 0 });
  });

  it('prices the retry from its own reported usage at the invocation’s rate version', async () => {
    const { run } = harness(steps());
    const result = await run({ answerTool: submitAnswer(), prices: RATES });
    // 100·3 + 100·15 = 1,800 credits.
    expect(result.attempts[1]).toMatchObject({ classification: 'ok', usage: usage(100, 100), priceCredits: 1_800 });
    expect(result.spentCredits).toBe(1_800);
  });

  it('numbers the retry as a retry of the same turn, not as a second turn', async () => {
    const { run } = harness(steps());
    const result = await run({ answerTool: submitAnswer(), prices: RATES });
    expect(result.attempts.map((a) => [a.turn, a.retry])).toEqual([
      [1, 0],
      [1, 1],
    ]);
    expect(result.turnsUsed).toBe(1);
  });

  it('bills usage that a failed attempt reported, because billed failures are never lost', async () => {
    const { run } = harness([scriptedFault('server_error', { usage: usage(10, 10) }), finalAnswer(1)]);
    const result = await run({ answerTool: submitAnswer(), prices: RATES });
    expect(result.attempts.map((a) => a.priceCredits)).toEqual([180, 18]);
    expect(result.spentCredits).toBe(198);
  });

  it('records timing, status, request id and the answering model of each attempt', async () => {
    const { run } = harness([
      scriptedFault('rate_limited', { httpStatus: 429, providerRequestId: 'req_1', latencyMs: 200 }),
      { reply: { ...finalAnswer(1).reply, model: 'test-model-2025', providerRequestId: 'req_2', httpStatus: 200 }, latencyMs: 300 },
    ]);
    const result = await run({ answerTool: submitAnswer() });
    expect(result.attempts).toEqual([
      expect.objectContaining({ startedAtMs: 0, durationMs: 200, waitBeforeMs: 0, httpStatus: 429, providerRequestId: 'req_1', model: 'test-model' }),
      expect.objectContaining({ startedAtMs: 700, durationMs: 300, waitBeforeMs: 500, httpStatus: 200, providerRequestId: 'req_2', model: 'test-model-2025' }),
    ]);
  });

  it('keeps no conversation body in an attempt record', async () => {
    const secret = 'TOP-SECRET-PROMPT';
    const { run } = harness([scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: secret } }], { usage: usage(1) }), finalAnswer(1)]);
    const result = await run({ tools: [countingTool('calc', { result: secret })], answerTool: submitAnswer(), messages: [{ role: 'user', content: [{ type: 'text', text: secret }] }] });
    const allowed = ['turn', 'retry', 'startedAtMs', 'durationMs', 'waitBeforeMs', 'classification', 'timedOut', 'httpStatus', 'providerRequestId', 'model', 'usage', 'priceCredits'];
    for (const attempt of result.attempts) expect(Object.keys(attempt).every((key) => allowed.includes(key))).toBe(true);
    expect(JSON.stringify(result.attempts)).not.toContain(secret);
  });
});

describe('BR-CAP-PFM-LLM-002-07 every attempt is reported as it happens, for the accounting core', () => {
  it('awaits the report of each attempt, in order, before the loop goes on', async () => {
    const log: string[] = [];
    const h = harness([scriptedFault('overloaded'), scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '1' } }]), finalAnswer()]);
    const calc = countingTool('calc', { behaviour: () => log.push('handler ran') });
    await h.run({
      tools: [calc],
      answerTool: submitAnswer(),
      onAttempt: async (record: AttemptRecord, attemptNumber: number) => {
        await h.clock.sleep(10);
        log.push(`attempt ${attemptNumber} written (turn ${record.turn} retry ${record.retry} ${record.classification})`);
      },
    });
    expect(log).toEqual([
      'attempt 1 written (turn 1 retry 0 overloaded)',
      'attempt 2 written (turn 1 retry 1 ok)',
      'handler ran',
      'attempt 3 written (turn 2 retry 0 ok)',
    ]);
  });

  it('rejects with the accounting error rather than running on without a record', async () => {
    const calc = countingTool('calc');
    const { run } = harness([scriptedToolUse([{ id: 'c1', name: 'calc', input: { expression: '1' } }]), finalAnswer()]);
    const failing = run({ tools: [calc], onAttempt: () => Promise.reject(new Error('event store unavailable')) });
    await expect(failing).rejects.toThrow('event store unavailable');
    expect(calc.runs).toHaveLength(0);
  });

  it('says whether any attempt reported usage, so an unmeasured result can go to pending', async () => {
    const unmeasured = await harness([scriptedText('42')]).run();
    expect(unmeasured).toMatchObject({ usageReported: false, spentCredits: 0 });
    const measured = await harness([scriptedText('42', { usage: usage(0) })]).run();
    expect(measured.usageReported).toBe(true);
  });
});

describe('BR-CAP-PFM-LLM-002-07 attempts beyond 64 are counted and priced but not retained (FND-PFM-LLM-061)', () => {
  // Each turn: two billed overloads then a tool call, so attempts pile up three per turn.
  function manyAttempts(turns: number): ScriptedStep[] {
    const steps: ScriptedStep[] = [];
    for (let turn = 1; turn <= turns; turn++) {
      steps.push(scriptedFault('overloaded', { usage: usage(turn, 1) }));
      steps.push(scriptedFault('overloaded', { usage: usage(1, turn) }));
      steps.push(scriptedToolUse([{ id: `c${turn}`, name: 'calc', input: { expression: `${turn}` } }], { usage: usage(turn, turn, 7, 11) }));
    }
    return steps;
  }
  const limits = { ...LIMITS, maxTurns: 30, maxToolCalls: 100, totalTimeMs: 10_000_000 };

  it(`keeps the first ${MAX_RETAINED_ATTEMPTS}, marks the record truncated, and keeps the totals exact`, async () => {
    const h = harness(manyAttempts(30));
    const result = await h.run({ tools: [countingTool('calc')], limits, prices: RATES });
    expect(result.outcome).toBe('turn_limit');
    expect(result.attemptCount).toBe(90);
    expect(result.attempts).toHaveLength(MAX_RETAINED_ATTEMPTS);
    expect(result.attemptsTruncated).toBe(true);
    expect(result.attempts).toEqual(h.attempts.slice(0, MAX_RETAINED_ATTEMPTS));

    const expectedTotal = h.attempts.reduce((sum, a) => sum + priceAttempt(a.usage, RATES), 0);
    expect(result.spentCredits).toBe(expectedTotal);
    expect(result.priceTotalCredits).toBe(expectedTotal);
    const sum = (pick: (a: AttemptRecord) => number) => h.attempts.reduce((total, a) => total + pick(a), 0);
    expect(result.usageTotals).toEqual({
      inputTokens: sum((a) => a.usage!.inputTokens),
      outputTokens: sum((a) => a.usage!.outputTokens),
      cacheWriteTokens: 30 * 7,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 30 * 11,
      webSearchRequests: 0,
    });
    expect(result.usageTotals.inputTokens).toBe(465 + 30 + 465);
  });

  it(`is not truncated at exactly ${MAX_RETAINED_ATTEMPTS} attempts`, async () => {
    const steps = manyAttempts(22).slice(0, 63);
    steps.push(finalAnswer());
    const result = await harness(steps).run({ tools: [countingTool('calc')], answerTool: submitAnswer(), limits });
    expect(result).toMatchObject({ outcome: 'completed', attemptCount: 64, attemptsTruncated: false });
    expect(result.attempts).toHaveLength(64);
  });
});
