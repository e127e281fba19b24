import { ATTEMPTS_COLLECTION, attemptsProjection, type AttemptHistoryView } from '../../projections';
import { MAX_RETAINED_ATTEMPTS } from '../../src/invocations/invocation.events';
import {
  attempt,
  completed,
  dispatched,
  estimated,
  EventLog,
  failed,
  figures,
  publicationV,
  refused,
  reserved,
  settled,
  usage,
} from './support/invocation-log';
import { project } from './support/in-memory-read-model';

const V1 = publicationV(1);

function history(log: EventLog, invocationId = 'inv-1'): AttemptHistoryView {
  const view = project(attemptsProjection, log.events).get<AttemptHistoryView>(ATTEMPTS_COLLECTION, invocationId);
  if (view === undefined) throw new Error(`no attempt history for ${invocationId}`);
  return view;
}

describe('ATS-PFM-LLM-002-13 / ATS-PFM-LLM-002-07 attempt history keeps retries distinct from turns (BR-CAP-PFM-LLM-002-07)', () => {
  it('shows an overload then its retry as two attempts of turn 1, the failed one priced at zero', () => {
    const log = new EventLog().invocation(
      'inv-1',
      estimated(V1),
      reserved(),
      dispatched(),
      attempt(1, 0, { classification: 'overloaded', httpStatus: 529, providerRequestId: 'req-a' }),
      attempt(1, 1, { waitBeforeMs: 612, usage: usage(2_000, 300), priceCredits: 11, httpStatus: 200, providerRequestId: 'req-b' }),
      completed('completed', figures({ turnsUsed: 1, spentCredits: 11, attemptCount: 2, usageTotals: usage(2_000, 300) })),
      settled(8, 11),
    );
    const view = history(log);
    expect(view.attempts).toEqual([
      {
        turn: 1,
        retry: 0,
        startedAtMs: expect.any(Number),
        durationMs: 30,
        waitBeforeMs: 0,
        classification: 'overloaded',
        timedOut: false,
        httpStatus: 529,
        providerRequestId: 'req-a',
        model: 'scripted-1',
        priceCredits: 0,
      },
      {
        turn: 1,
        retry: 1,
        startedAtMs: expect.any(Number),
        durationMs: 30,
        waitBeforeMs: 612,
        classification: 'ok',
        timedOut: false,
        httpStatus: 200,
        providerRequestId: 'req-b',
        model: 'scripted-1',
        usage: usage(2_000, 300),
        priceCredits: 11,
      },
    ]);
    // A failed attempt that reported nothing has no usage at all, not a zero usage.
    expect(view.attempts[0]).not.toHaveProperty('usage');
    expect(view).toMatchObject({
      invocationId: 'inv-1',
      organizationId: 'acme',
      operationId: 'demo.arithmetic',
      attemptCount: 2,
      attemptsTruncated: false,
      usageTotals: usage(2_000, 300),
      priceTotalCredits: 11,
    });
  });
});

describe('ATS-PFM-LLM-002-14 attempt history reports every attempt of an exhausted retry budget, in order', () => {
  it('keeps all three, with their classifications and growing waits', () => {
    const log = new EventLog().invocation(
      'inv-1',
      estimated(V1),
      reserved(),
      dispatched(),
      attempt(1, 0, { classification: 'server_error', httpStatus: 503 }),
      attempt(1, 1, { classification: 'timeout', timedOut: true, waitBeforeMs: 540 }),
      attempt(1, 2, { usage: usage(1_000), priceCredits: 3, waitBeforeMs: 1_090 }),
    );
    const view = history(log);
    expect(view.attempts.map(({ turn, retry, classification, timedOut, waitBeforeMs }) => ({ turn, retry, classification, timedOut, waitBeforeMs }))).toEqual([
      { turn: 1, retry: 0, classification: 'server_error', timedOut: false, waitBeforeMs: 0 },
      { turn: 1, retry: 1, classification: 'timeout', timedOut: true, waitBeforeMs: 540 },
      { turn: 1, retry: 2, classification: 'ok', timedOut: false, waitBeforeMs: 1_090 },
    ]);
    // Still in flight: the counts and totals are the rows so far.
    expect(view).toMatchObject({ attemptCount: 3, attemptsTruncated: false, usageTotals: usage(1_000), priceTotalCredits: 3 });
  });
});

describe('INV-DOM-PFM-LLM-001-08 attempt history retains at most 64 attempts while its totals stay exact (docs/rules.md rule 07)', () => {
  it('marks the history truncated and takes count, usage and price from the final figures', () => {
    const attempts = Array.from({ length: MAX_RETAINED_ATTEMPTS }, (_, index) =>
      attempt(Math.floor(index / 3) + 1, index % 3, { usage: usage(100), priceCredits: 1 }),
    );
    const log = new EventLog().invocation(
      'inv-1',
      estimated(V1),
      reserved(),
      dispatched(),
      ...attempts,
      failed('overloaded', figures({ turnsUsed: 24, spentCredits: 70, attemptCount: 70, attemptsTruncated: true, usageTotals: usage(7_000) })),
    );
    const view = history(log);
    expect(view.attempts).toHaveLength(MAX_RETAINED_ATTEMPTS);
    expect(view).toMatchObject({ attemptCount: 70, attemptsTruncated: true, usageTotals: usage(7_000), priceTotalCredits: 70 });
  });

  it('never grows past the bound, even if a log held more records than the decider allows', () => {
    const attempts = Array.from({ length: MAX_RETAINED_ATTEMPTS + 2 }, (_, index) => attempt(index + 1, 0, { priceCredits: 2 }));
    const view = history(new EventLog().invocation('inv-1', estimated(V1), reserved(), dispatched(), ...attempts));
    expect(view.attempts).toHaveLength(MAX_RETAINED_ATTEMPTS);
    expect(view).toMatchObject({ attemptCount: MAX_RETAINED_ATTEMPTS + 2, attemptsTruncated: true, priceTotalCredits: 2 * (MAX_RETAINED_ATTEMPTS + 2) });
  });
});

describe('attempt history per invocation', () => {
  it('is empty for a refused request, keyed by invocation and indexed by organization', () => {
    const log = new EventLog()
      .invocation('inv-1', estimated(V1), refused({ reason: 'insufficient_credits', figures: { available: 120, creditHold: 500 } }, 2))
      .invocation('inv-2', estimated(V1, { invocationId: 'inv-2', organizationId: 'globex' }), reserved(), dispatched(), attempt(1, 0));
    const tx = project(attemptsProjection, log.events);
    expect(tx.get(ATTEMPTS_COLLECTION, 'inv-1')).toMatchObject({ attempts: [], attemptCount: 0, priceTotalCredits: 0 });
    expect(tx.indexKeyOf(ATTEMPTS_COLLECTION, 'inv-2')).toBe('globex');
    expect(project(attemptsProjection, log.events).snapshot()).toEqual(tx.snapshot());
  });
});

describe('attempt history never faults on a sum past the exact-integer range (docs/http.md)', () => {
  it('two attempts in the log reporting 2^53−1 cache-read tokens each: the running total stops at the bound, each row keeps its own usage', () => {
    const huge = { ...usage(10, 5), cacheReadTokens: Number.MAX_SAFE_INTEGER };
    const log = new EventLog().invocation('inv-1', estimated(V1), reserved(), dispatched(), attempt(1, 0, { usage: huge }), attempt(2, 0, { usage: huge }));
    const view = history(log);
    expect(view.usageTotals).toEqual({ ...usage(20, 10), cacheReadTokens: Number.MAX_SAFE_INTEGER });
    expect(view.attempts.map((row) => row.usage)).toEqual([huge, huge]);
  });
});
