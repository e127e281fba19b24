import {
  FAULT_CLASSES,
  ScriptedProvider,
  VirtualClock,
  classifyHttpFault,
  executeWithRetry,
  isTimeoutReason,
  scriptedFault,
  scriptedText,
  type AttemptRecord,
  type ExecuteWithRetryInput,
  type ProviderRequest,
  type ScriptedStep,
  type SendOptions,
} from '../../src/runtime';
import { ONE_CREDIT_PER_TOKEN, firstJitter, usage } from './fixtures';

const REQUEST: ProviderRequest = {
  model: 'test-model',
  system: [],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  tools: [],
  maxOutputTokens: 100,
};

function setup(steps: ScriptedStep[], overrides: Partial<ExecuteWithRetryInput> = {}) {
  const clock = new VirtualClock();
  const provider = new ScriptedProvider(steps, { clock });
  const reported: AttemptRecord[] = [];
  const execute = () =>
    executeWithRetry({
      provider,
      request: REQUEST,
      clock,
      turn: 1,
      deadlineMs: 60_000,
      attemptTimeoutMs: 10_000,
      maxAttemptsPerTurn: 3,
      prices: ONE_CREDIT_PER_TOKEN,
      random: firstJitter,
      report: (record) => {
        reported.push(record);
      },
      ...overrides,
    });
  return { clock, provider, reported, execute };
}

describe('ATS-PFM-LLM-002-14 retry exhaustion reports every attempt (BR-CAP-PFM-LLM-002-05)', () => {
  it('reports all three, so the two that were billed are not lost', async () => {
    const { reported, execute } = setup([
      scriptedFault('overloaded', { httpStatus: 529, usage: usage(7, 0) }),
      scriptedFault('server_error', { httpStatus: 503 }),
      scriptedText('done', { usage: usage(10, 5) }),
    ]);
    const result = await execute();
    expect(result.ok).toBe(true);
    expect(reported.map((a) => [a.retry, a.classification, a.httpStatus])).toEqual([
      [0, 'overloaded', 529],
      [1, 'server_error', 503],
      [2, 'ok', undefined],
    ]);
    expect(reported.map((a) => a.priceCredits)).toEqual([7, 0, 15]);
  });

  it('waits longer before each retry, and records the wait before every attempt', async () => {
    const { reported, execute } = setup([scriptedFault('rate_limited'), scriptedFault('connection'), scriptedText('done')]);
    await execute();
    const waits = reported.map((a) => a.waitBeforeMs);
    expect(waits).toEqual([0, 500, 1_000]);
    expect(reported.map((a) => a.startedAtMs)).toEqual([0, 500, 1_500]);
    expect(reported.every((a) => a.turn === 1)).toBe(true);
  });

  it('ends failed with the last classification when the default budget of three is used up', async () => {
    const { provider, reported, execute } = setup([scriptedFault('overloaded'), scriptedFault('overloaded'), scriptedFault('server_error')]);
    expect(await execute()).toEqual({ ok: false, ending: 'failed', fault: 'server_error' });
    expect(provider.stepsPlayed).toBe(3);
    expect(reported).toHaveLength(3);
  });
});

describe('ATS-PFM-LLM-002-05 an abort by the attempt timeout is retried and recorded as out of time', () => {
  it('retries an abort, and records that the attempt ran out of time', async () => {
    const { provider, reported, execute } = setup([scriptedText('too slow', { latencyMs: 25_000 }), scriptedText('fast')]);
    const result = await execute();
    expect(result.ok).toBe(true);
    expect(reported[0]).toMatchObject({ classification: 'timeout', timedOut: true, durationMs: 10_000, retry: 0 });
    expect(reported[1]).toMatchObject({ classification: 'ok', timedOut: false, retry: 1, waitBeforeMs: 500 });
    // The runtime, not the provider, enforced the timeout: the provider's signal fired with a TimeoutError.
    expect(provider.calls[0]!.signal.aborted).toBe(true);
    expect(isTimeoutReason(provider.calls[0]!.signal.reason)).toBe(true);
  });

  it('times out a provider that ignores its signal, because the runtime races it on the clock', async () => {
    const hangs: ScriptedStep = () => new Promise(() => undefined);
    const { clock, reported, execute } = setup([hangs, scriptedText('ok')]);
    const result = await execute();
    expect(result.ok).toBe(true);
    expect(reported[0]).toMatchObject({ classification: 'timeout', timedOut: true, durationMs: 10_000 });
    expect(clock.now()).toBe(10_500);
  });

  it('aborts the signal the provider read, on timeout, with a TimeoutError reason', async () => {
    const clock = new VirtualClock();
    let seen: AbortSignal | undefined;
    const provider = {
      name: 'hanging',
      send: (_request: ProviderRequest, options: SendOptions) => {
        seen = options.signal;
        return new Promise<never>(() => undefined);
      },
    };
    const result = await executeWithRetry({
      provider,
      request: REQUEST,
      clock,
      turn: 1,
      deadlineMs: 5_000,
      attemptTimeoutMs: 1_000,
      maxAttemptsPerTurn: 1,
      prices: ONE_CREDIT_PER_TOKEN,
      random: firstJitter,
      report: () => undefined,
    });
    expect(result).toEqual({ ok: false, ending: 'failed', fault: 'timeout' });
    expect(seen?.aborted).toBe(true);
    expect(isTimeoutReason(seen?.reason)).toBe(true);
  });

  it('does not record a 408 as our own timeout: the server said it, the attempt did not run out', async () => {
    const { reported, execute } = setup([scriptedFault(classifyHttpFault({ status: 408 }), { httpStatus: 408 }), scriptedText('ok')]);
    await execute();
    expect(reported[0]).toMatchObject({ classification: 'timeout', timedOut: false, httpStatus: 408 });
  });
});

describe('BR-CAP-PFM-LLM-002-05 permanent faults end the turn at once', () => {
  it('does not retry a 400, because the request itself is wrong', async () => {
    const { provider, execute } = setup([scriptedFault(classifyHttpFault({ status: 400 }), { httpStatus: 400 }), scriptedText('never')]);
    expect(await execute()).toEqual({ ok: false, ending: 'failed', fault: 'malformed_request' });
    expect(provider.stepsPlayed).toBe(1);
  });

  it('does not retry a 401, because our credentials will not improve', async () => {
    const { provider, execute } = setup([scriptedFault(classifyHttpFault({ status: 401 })), scriptedText('never')]);
    expect(await execute()).toEqual({ ok: false, ending: 'failed', fault: 'unauthorized' });
    expect(provider.stepsPlayed).toBe(1);
  });

  it('does not retry a 429 whose body says the balance is depleted (BR-CAP-PFM-LLM-002-06)', async () => {
    const classification = classifyHttpFault({ status: 429, message: 'Your credit balance is too low to access the Anthropic API.' });
    const { provider, reported, execute } = setup([scriptedFault(classification, { httpStatus: 429 }), scriptedText('never')]);
    expect(await execute()).toEqual({ ok: false, ending: 'failed', fault: 'credit_exhausted' });
    expect(provider.stepsPlayed).toBe(1);
    expect(reported[0]).toMatchObject({ classification: 'credit_exhausted', httpStatus: 429 });
  });

  it('rejects with an adapter’s unclassified error instead of guessing it is retryable', async () => {
    const broken: ScriptedStep = () => {
      throw new TypeError('adapter bug');
    };
    const { execute } = setup([broken, scriptedText('never')]);
    await expect(execute()).rejects.toThrow('adapter bug');
  });
});

describe('BR-CAP-PFM-LLM-002-04 retries never run past the conversation deadline', () => {
  it('honours retry-after from the provider', async () => {
    const { reported, execute } = setup([scriptedFault('rate_limited', { retryAfterMs: 4_000 }), scriptedText('ok')]);
    await execute();
    expect(reported[1]).toMatchObject({ waitBeforeMs: 4_000, startedAtMs: 4_000 });
  });

  it('ends with time_limit and the last fault when the next attempt cannot fit, without waiting', async () => {
    const { clock, provider, execute } = setup([scriptedFault('overloaded'), scriptedText('never')], { deadlineMs: 400 });
    expect(await execute()).toEqual({ ok: false, ending: 'time_limit', fault: 'overloaded' });
    expect(provider.stepsPlayed).toBe(1);
    expect(clock.now()).toBe(0);
  });

  it('does not wait for a retry-after that reaches past the deadline', async () => {
    const { clock, execute } = setup([scriptedFault('rate_limited', { retryAfterMs: 90_000 }), scriptedText('never')]);
    expect(await execute()).toEqual({ ok: false, ending: 'time_limit', fault: 'rate_limited' });
    expect(clock.now()).toBe(0);
  });

  it('caps the attempt timeout at the time left, then stops with time_limit when it runs out', async () => {
    const { provider, reported, execute } = setup([scriptedText('slow', { latencyMs: 5_000 })], { deadlineMs: 3_000 });
    expect(await execute()).toEqual({ ok: false, ending: 'time_limit', fault: 'timeout' });
    expect(provider.calls[0]!.timeoutMs).toBe(3_000);
    expect(reported[0]).toMatchObject({ timedOut: true, durationMs: 3_000 });
  });

  it('sends nothing when the deadline has already passed', async () => {
    const { provider, execute } = setup([scriptedText('never')], { deadlineMs: 0 });
    expect(await execute()).toEqual({ ok: false, ending: 'time_limit', fault: undefined });
    expect(provider.stepsPlayed).toBe(0);
  });
});

describe('cancellation during a retry wait ends the turn cancelled', () => {
  it('stops waiting and makes no further attempt', async () => {
    const controller = new AbortController();
    const { clock, provider, execute } = setup([scriptedFault('overloaded'), scriptedText('never')], { signal: controller.signal });
    void clock.sleep(200).then(() => controller.abort());
    expect(await execute()).toEqual({ ok: false, ending: 'cancelled', fault: 'overloaded' });
    expect(provider.stepsPlayed).toBe(1);
    expect(clock.now()).toBe(200);
  });
});

describe('docs/rules.md every fault class is retried or not, end to end, exactly as the table says (BR-CAP-PFM-LLM-002-05/06)', () => {
  const retried = new Set(['timeout', 'rate_limited', 'overloaded', 'server_error', 'connection', 'conflict']);
  it.each([...FAULT_CLASSES])('%s', async (fault) => {
    const { provider, reported, execute } = setup([scriptedFault(fault), scriptedText('recovered')]);
    const result = await execute();
    if (retried.has(fault)) {
      expect(result.ok).toBe(true);
      expect(reported.map((a) => a.classification)).toEqual([fault, 'ok']);
    } else {
      expect(result).toEqual({ ok: false, ending: fault === 'cancelled' ? 'cancelled' : 'failed', fault });
      expect(provider.stepsPlayed).toBe(1);
    }
  });
});
