import type { Publication } from '../../src/catalog/operation.events';
import { ValidationError } from '../../src/domain/domain.errors';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { MAX_RETAINED_ATTEMPTS } from '../../src/invocations/invocation.events';
import { deciderSpec } from '../support/decider-spec';
import {
  attemptRecord,
  attemptRecorded,
  complete,
  completed,
  dispatched,
  estimated,
  fail,
  HISTORY,
  NO_USAGE,
  PRICE_A,
  PUBLICATION,
  recordAttempt,
  reserved,
  settle,
  settled,
  USAGE_A,
} from './invocation.fixtures';

const spec = deciderSpec(invocationDecider);

describe('ATS-PFM-LLM-002-07 retries retain their own usage prices', () => {
  const failedFirst = attemptRecord(1, 0, {
    classification: 'overloaded',
    httpStatus: 529,
    usage: undefined,
    priceCredits: 0,
  });
  const retry = attemptRecord(1, 1, { waitBeforeMs: 500 });

  it('prices the failed attempt, which reported nothing, at zero', () => {
    spec.given(HISTORY.dispatched).when(recordAttempt(failedFirst)).then([attemptRecorded(failedFirst)]);
  });

  it('numbers the retry as a retry of the same turn, not as a second turn, priced from its own usage', () => {
    const state = spec
      .given([...HISTORY.dispatched, attemptRecorded(failedFirst)])
      .when(recordAttempt(retry))
      .then([attemptRecorded(retry)]);
    expect(state).toMatchObject({ attemptCount: 2, spentCredits: PRICE_A, lastAttempt: { turn: 1, retry: 1 } });
  });

  it('charges only what was reported', () => {
    const given = [
      ...HISTORY.dispatched,
      attemptRecorded(failedFirst),
      attemptRecorded(retry),
      completed({ attemptCount: 2, spentCredits: PRICE_A }),
    ];
    spec.given(given).when(settle('runtime')).then([settled(8, PRICE_A, 500, 'runtime')]);
  });

  it('refuses a priced attempt that reported no usage: it costs 0 (docs/rules.md rule 07)', () => {
    spec
      .given(HISTORY.dispatched)
      .when(recordAttempt({ ...failedFirst, priceCredits: 3 }))
      .thenThrows(ValidationError, { field: 'priceCredits' });
  });

  it('refuses a price that is not the price of its usage (docs/rules.md rule 07) at the invocation’s rate version', () => {
    spec
      .given(HISTORY.dispatched)
      .when(recordAttempt(attemptRecord(1, 0, { priceCredits: 12 })))
      .thenThrows(ValidationError, (error) => {
        expect(error.field).toBe('priceCredits');
        expect(error.message).toContain('13 credits at rate version 2');
      });
  });
});

describe('docs/rules.md rule 07 attempts are recorded in order, while dispatched, without any conversation body', () => {
  it('refuses an attempt that skips a retry, so a billed attempt cannot go missing', () => {
    spec
      .given([...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))])
      .when(recordAttempt(attemptRecord(1, 2)))
      .thenThrows(ValidationError, { field: 'turn' });
  });

  it('refuses a first attempt that is not turn 1 retry 0', () => {
    spec.given(HISTORY.dispatched).when(recordAttempt(attemptRecord(2, 0))).thenThrows(ValidationError, { field: 'turn' });
  });

  it('writes nothing for the last attempt recorded again (a retried append)', () => {
    spec.given([...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))]).when(recordAttempt(attemptRecord(1, 0))).thenNothing();
  });

  it('refuses a retry past maxAttemptsPerTurn and a turn past maxTurns', () => {
    spec.given(HISTORY.dispatched).when(recordAttempt(attemptRecord(1, 3))).thenThrows(ValidationError, { field: 'retry' });
    spec.given(HISTORY.dispatched).when(recordAttempt(attemptRecord(5, 0))).thenThrows(ValidationError, { field: 'turn' });
  });

  it.each([
    ['an unknown classification', { classification: 'teapot' }, 'classification'],
    ['negative usage', { usage: { ...USAGE_A, outputTokens: -1 } }, 'usage.outputTokens'],
    ['a fractional duration', { durationMs: 1.5 }, 'durationMs'],
    ['an impossible HTTP status', { httpStatus: 42 }, 'httpStatus'],
    ['no model', { model: '' }, 'model'],
  ])('refuses an attempt with %s, naming the field', (_name, override, field) => {
    spec
      .given(HISTORY.dispatched)
      .when(recordAttempt({ ...attemptRecord(1, 0), ...override } as never))
      .thenThrows(ValidationError, { field });
  });

  it('keeps only the fields of an attempt record, so a prompt riding along is never stored', () => {
    const withBody = { ...attemptRecord(1, 0), prompt: 'What is 6*7?', messages: [{ role: 'user' }] };
    spec.given(HISTORY.dispatched).when(recordAttempt(withBody as never)).then([attemptRecorded(attemptRecord(1, 0))]);
  });
});

describe('docs/rules.md rule 07 at most MAX_RETAINED_ATTEMPTS attempts are retained; the totals stay exact', () => {
  // Long enough for 70 attempts: 35 turns of 2 attempts, nothing reported after the first.
  const LONG: Publication = { ...PUBLICATION, limits: { ...PUBLICATION.limits, maxTurns: 40, maxAttemptsPerTurn: 2 } };
  const free = (turn: number, retry: number) =>
    attemptRecord(turn, retry, { classification: 'rate_limited', httpStatus: 429, usage: undefined, priceCredits: 0 });
  const records = Array.from({ length: MAX_RETAINED_ATTEMPTS }, (_, i) =>
    i === 0 ? attemptRecord(1, 0) : free(Math.floor(i / 2) + 1, i % 2),
  );
  const full = [estimated(LONG), reserved(), dispatched(), ...records.map(attemptRecorded)];

  it(`records ${MAX_RETAINED_ATTEMPTS} attempts and no more`, () => {
    expect(full.filter((event) => event.type === 'AttemptRecorded')).toHaveLength(64);
    spec.given(full).when(recordAttempt(free(33, 0))).thenNothing();
  });

  it('marks the record truncated and carries the exact totals, so the charge is unaffected', () => {
    const totals = { attemptCount: 70, turnsUsed: 35, spentCredits: PRICE_A + 40, usageTotals: { ...USAGE_A, inputTokens: USAGE_A.inputTokens + 9_000 } };
    const state = spec
      .given(full)
      .when(complete({ outcome: 'turn_limit', ...totals }))
      .then([completed({ outcome: 'turn_limit', endingLimit: 'maxTurns', ...totals, attemptsTruncated: true })]);
    expect(invocationDecider.decide(settle('runtime'), state)).toEqual([settled(8, PRICE_A + 40, 500, 'runtime')]);
  });

  it('refuses truncated totals smaller than what the retained attempts already cost', () => {
    spec
      .given(full)
      .when(complete({ attemptCount: 70, turnsUsed: 35, spentCredits: PRICE_A - 1 }))
      .thenThrows(ValidationError, { field: 'spentCredits' });
  });

  it('refuses a count past the bound when fewer than MAX_RETAINED_ATTEMPTS were recorded', () => {
    spec
      .given([estimated(LONG), reserved(), dispatched(), attemptRecorded(attemptRecord(1, 0))])
      .when(complete({ attemptCount: 70, turnsUsed: 35 }))
      .thenThrows(ValidationError, { field: 'attemptCount' });
  });
});

describe('docs/rules.md a finished conversation reports figures within its published limits and its recorded attempts', () => {
  const oneAttempt = [...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))];

  it.each([
    ['spend that differs from the recorded attempts', { spentCredits: PRICE_A + 1 }, 'spentCredits'],
    ['an attempt count that differs from the records', { attemptCount: 2 }, 'attemptCount'],
    ['usage that differs from the records', { usageTotals: NO_USAGE }, 'usageTotals'],
    ['a usage flag that differs from the records', { usageReported: false }, 'usageReported'],
    ['more turns than maxTurns', { turnsUsed: 5 }, 'turnsUsed'],
    ['more tool calls than maxToolCalls', { toolCallsUsed: 9 }, 'toolCallsUsed'],
    ['the failed outcome, which is FailInvocation’s', { outcome: 'failed' as never }, 'outcome'],
    ['a limit that did not end this outcome', { outcome: 'time_limit', endingLimit: 'maxTurns' }, 'endingLimit'],
    ['a limit on an outcome that ends at none', { endingLimit: 'creditHold' }, 'endingLimit'],
  ] as const)('refuses a completion with %s', (_name, override, field) => {
    spec.given(oneAttempt).when(complete(override)).thenThrows(ValidationError, { field });
  });

  it('refuses a failure without a known fault class', () => {
    spec.given(oneAttempt).when(fail({ fault: 'weird' as never })).thenThrows(ValidationError, { field: 'fault' });
  });

  it('records credit_limit over the hold: the crossing turn stays billed (docs/rules.md rule 03)', () => {
    // One turn costing 13 credits in a conversation whose publication holds 10.
    const small: Publication = { ...PUBLICATION, creditHold: 10 };
    const given = [estimated(small), reserved(10), dispatched(), attemptRecorded(attemptRecord(1, 0))];
    const state = spec
      .given(given)
      .when(complete({ outcome: 'credit_limit', toolCallsUsed: 1 }))
      .then([completed({ outcome: 'credit_limit', endingLimit: 'creditHold', toolCallsUsed: 1 })]);
    expect(invocationDecider.decide(settle('runtime'), state)).toEqual([settled(8, PRICE_A, 10, 'runtime')]);
  });
});
