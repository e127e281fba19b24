/**
 * KeyedRepeats on its own (docs/http.md "Idempotency keys"): a repeat while the key's first request
 * runs in this process joins it, another request under the key is refused naming how it differs, and
 * once the first is over the key is free to be looked up in the log again. The log-side waits
 * (`afterFirst`) are proved through the handler by test/ledger/keyed-repeat-across-processes.spec.ts
 * and test/http/idempotency.e2e.spec.ts.
 */
import type { AnswerStore } from '../../src/answer-store/answer-store.port';
import type { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { InvocationEndings } from '../../src/invocations/invocation-endings';
import { IdempotencyKeyReusedError } from '../../src/invocations/invocation-errors';
import type { InvocationResult } from '../../src/invocations/invocation-result';
import { differenceOf, KeyedRepeats } from '../../src/invocations/keyed-repeats';
import type { RunOperationRequest } from '../../src/invocations/run-operation.command';
import { VirtualClock } from '../../src/runtime';

const RESULT: InvocationResult = { invocationId: 'inv-1', state: 'settled', outcome: 'completed', estimate: 10, charge: 3, turnsUsed: 1, toolCallsUsed: 0, answer: 42 };

function repeats(): KeyedRepeats {
  // join never reads the log nor the answer store: only the fingerprint secret is used.
  return new KeyedRepeats({} as AggregateRepository, {} as AnswerStore, new VirtualClock(), Buffer.alloc(32, 7), new InvocationEndings());
}

function request(overrides: Partial<RunOperationRequest> = {}): RunOperationRequest {
  return { operationId: 'support.triage', organizationId: 'acme', input: { ticket: 1 }, idempotencyKey: 'key-1', ...overrides };
}

/** A first run that stays in flight until `finish` is called. */
function heldRun(): { run: (request: RunOperationRequest, fingerprint: string) => Promise<InvocationResult>; finish: () => void; calls: RunOperationRequest[] } {
  const calls: RunOperationRequest[] = [];
  let finish!: () => void;
  const done = new Promise<InvocationResult>((resolve) => (finish = () => resolve(RESULT)));
  return {
    calls,
    finish: () => finish(),
    run: (joined) => {
      calls.push(joined);
      return done;
    },
  };
}

describe('keyed repeats in this process: a repeat of a running key joins the first', () => {
  it('runs the first once and gives the repeat the same result, answer included', async () => {
    const keyed = repeats();
    const first = heldRun();
    const one = keyed.join('inv-1', request(), first.run);
    const two = keyed.join('inv-1', request({ input: { ticket: 1 } }), first.run);
    first.finish();
    await expect(one).resolves.toEqual(RESULT);
    await expect(two).resolves.toEqual(RESULT);
    expect(first.calls).toHaveLength(1);
  });

  it('tells a joining repeat the invocation exists once the first has estimated it', async () => {
    const keyed = repeats();
    const first = heldRun();
    const told: string[] = [];
    void keyed.join('inv-1', request(), first.run);
    void keyed.join('inv-1', request({ onEstimated: (id) => told.push(`repeat ${id}`) }), first.run);
    await Promise.resolve();
    expect(told).toEqual([]);
    first.calls[0]!.onEstimated!('inv-1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(told).toEqual(['repeat inv-1']);
    first.finish();
  });

  it.each([
    ['another input', { input: { ticket: 2 } }, 'input'],
    ['another operation', { operationId: 'support.summarize' }, 'operation'],
  ])('refuses a repeat with %s while the first runs, naming the difference', async (_name, overrides, difference) => {
    const keyed = repeats();
    const first = heldRun();
    void keyed.join('inv-1', request(), first.run);
    const repeat = keyed.join('inv-1', request(overrides), first.run);
    await expect(repeat).rejects.toThrow(IdempotencyKeyReusedError);
    await expect(repeat).rejects.toMatchObject({ idempotencyKey: 'key-1', differs: difference });
    expect(first.calls).toHaveLength(1);
    first.finish();
  });

  it('frees the key once the first is over: the next request runs (and then finds the first in the log)', async () => {
    const keyed = repeats();
    const first = heldRun();
    const one = keyed.join('inv-1', request(), first.run);
    first.finish();
    await one;
    const second = heldRun();
    void keyed.join('inv-1', request(), second.run);
    expect(second.calls).toHaveLength(1);
    second.finish();
  });
});

describe('differenceOf: how a keyed request differs from the key’s first one', () => {
  it('compares the operation first, then the fingerprint', () => {
    expect(differenceOf({ operationId: 'a', fingerprint: 'f' }, 'b', 'f')).toBe('operation');
    expect(differenceOf({ operationId: 'a', fingerprint: 'f' }, 'a', 'g')).toBe('input');
    expect(differenceOf({ operationId: 'a', fingerprint: 'f' }, 'a', 'f')).toBeUndefined();
  });

  it('compares only the operation of a first request recorded before fingerprints existed', () => {
    expect(differenceOf({ operationId: 'a', fingerprint: undefined }, 'a', 'g')).toBeUndefined();
  });
});
