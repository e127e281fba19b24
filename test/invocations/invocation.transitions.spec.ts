import { ValidationError } from '../../src/domain/domain.errors';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { invocationSummary } from '../../src/invocations/invocation.state';
import type { InvocationEvent } from '../../src/invocations/invocation.events';
import { deciderSpec } from '../support/decider-spec';
import {
  at,
  attemptRecord,
  attemptRecorded,
  complete,
  completed,
  dispatch,
  dispatched,
  estimate,
  estimated,
  fail,
  failed,
  HISTORY,
  markPending,
  NO_USAGE,
  pending,
  PRICE_A,
  PRICE_B,
  PUBLICATION,
  refuse,
  reserve,
  reserved,
  settle,
  settled,
  sumUsage,
  sweep,
  USAGE_A,
  USAGE_B,
} from './invocation.fixtures';

const spec = deciderSpec(invocationDecider);

describe('STATE-PFM-LLM-001 estimate: the first event copies the publication in force in full', () => {
  it('opens the stream with the request and its publication, whose creditHold is the estimate', () => {
    const state = spec.given([]).when(estimate()).then([estimated()]);
    expect(state).toMatchObject({ status: 'estimated', estimate: 500, publication: PUBLICATION, accountHeld: false });
  });

  it('keeps the idempotency key when the caller gave one, and leaves it out otherwise', () => {
    const withKey = estimated();
    spec
      .given([])
      .when(estimate(PUBLICATION, 'key-1'))
      .then([{ ...withKey, data: { ...withKey.data, idempotencyKey: 'key-1' } }]);
  });

  it.each([
    ['an organization id with a space', { organizationId: 'org 1' }, 'organizationId'],
    ['no publication field at all', { publication: undefined }, 'publication'],
    ['a publication without a version', { publication: { ...PUBLICATION, version: 0 } }, 'publication.version'],
    ['a blank idempotency key', { idempotencyKey: ' ' }, 'idempotencyKey'],
  ])('refuses an estimate with %s, naming the field', (_name, override, field) => {
    const command = estimate();
    spec
      .given([])
      .when({ ...command, data: { ...command.data, ...override } } as never)
      .thenThrows(ValidationError, { field });
  });

  it('records an operation never published with a null publication and an estimate of 0', () => {
    const state = spec.given([]).when(estimate(null)).then([estimated(null)]);
    expect(state.estimate).toBe(0);
  });
});

describe('STATE-PFM-LLM-001 transition 1: estimated → refused when the access check rejects the AI or operation switch', () => {
  it('refuses ai_disabled as transition 1, with its figures', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'ai_disabled', figures: { aiEnabled: false } }))
      .then([{ type: 'InvocationRefused', data: { transition: 1, reason: 'ai_disabled', figures: { aiEnabled: false }, refusedAt: at(5) } }]);
  });

  it('refuses operation_disabled as transition 1, naming the disabled version', () => {
    spec
      .given([estimated({ ...PUBLICATION, enabled: false })])
      .when(refuse({ reason: 'operation_disabled', figures: { version: 2, enabled: false } }))
      .then([
        { type: 'InvocationRefused', data: { transition: 1, reason: 'operation_disabled', figures: { version: 2, enabled: false }, refusedAt: at(5) } },
      ]);
  });

  it('refuses unknown_operation as transition 1', () => {
    spec
      .given([estimated(null)])
      .when(refuse({ reason: 'unknown_operation', figures: { publishedVersions: 0 } }))
      .then([
        { type: 'InvocationRefused', data: { transition: 1, reason: 'unknown_operation', figures: { publishedVersions: 0 }, refusedAt: at(5) } },
      ]);
  });
});

describe('STATE-PFM-LLM-001 transition 2: estimated → refused when admission cannot fit the reservation or allocate a slot', () => {
  it('refuses insufficient_credits as transition 2, with available and the hold', () => {
    const state = spec
      .given([estimated()])
      .when(refuse({ reason: 'insufficient_credits', figures: { available: 120, creditHold: 500 } }))
      .then([
        {
          type: 'InvocationRefused',
          data: { transition: 2, reason: 'insufficient_credits', figures: { available: 120, creditHold: 500 }, refusedAt: at(5) },
        },
      ]);
    expect(invocationSummary(state)).toMatchObject({ state: 'refused', refusalReason: 'insufficient_credits', charge: 0, estimate: 500 });
  });

  it('refuses no_running_slot as transition 2, with running and maxRunning', () => {
    spec
      .given([estimated()])
      .when(refuse({ reason: 'no_running_slot', figures: { running: 10, maxRunning: 10 } }))
      .then([
        { type: 'InvocationRefused', data: { transition: 2, reason: 'no_running_slot', figures: { running: 10, maxRunning: 10 }, refusedAt: at(5) } },
      ]);
  });
});

describe('STATE-PFM-LLM-001 transition 3: estimated → reserved when admission reserves credits and a slot', () => {
  it('records the hold taken from the publication, not from the caller', () => {
    const state = spec.given([estimated()]).when(reserve()).then([reserved(500)]);
    expect(state).toMatchObject({ status: 'reserved', accountHeld: true, heldCredits: 500 });
  });
});

describe('STATE-PFM-LLM-001 transition 4: reserved → dispatched before any provider call', () => {
  it('records the dispatch', () => {
    const state = spec.given([estimated(), reserved()]).when(dispatch()).then([dispatched()]);
    expect(state).toMatchObject({ status: 'dispatched', dispatchedAt: at(20) });
  });
});

describe('STATE-PFM-LLM-001 transition 5: dispatched → completed when the loop returns an outcome other than failed', () => {
  it('records the outcome and the figures it reported', () => {
    spec
      .given([...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))])
      .when(complete())
      .then([completed()]);
  });

  it('names the limit that ended a limit outcome, filled in when the loop left it out', () => {
    const state = spec
      .given([...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))])
      .when(complete({ outcome: 'turn_limit', turnsUsed: 4 }))
      .then([completed({ outcome: 'turn_limit', endingLimit: 'maxTurns', turnsUsed: 4 })]);
    expect(state).toMatchObject({ outcome: 'turn_limit', endingLimit: 'maxTurns' });
  });
});

describe('STATE-PFM-LLM-001 transition 6: dispatched → failed when the loop reports failure', () => {
  it('records the fault and what the failed conversation cost', () => {
    const state = spec
      .given([...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))])
      .when(fail())
      .then([failed()]);
    expect(state).toMatchObject({ status: 'failed', outcome: 'failed', fault: 'malformed_request', spentCredits: PRICE_A });
  });
});

describe('STATE-PFM-LLM-001 transition 7: completed → pending when a completed result contains no reported usage', () => {
  it('marks an unmeasured result pending', () => {
    spec.given(HISTORY.completedUnmeasured).when(markPending()).then([pending()]);
  });
});

describe('STATE-PFM-LLM-001 transition 8: completed → settled charges the sum of attempt prices', () => {
  it('charges what every attempt cost, retries included, and releases the hold', () => {
    const given = [
      ...HISTORY.dispatched,
      attemptRecorded(attemptRecord(1, 0)),
      attemptRecorded(attemptRecord(2, 0, { usage: USAGE_B, priceCredits: PRICE_B })),
      completed({ turnsUsed: 2, attemptCount: 2, spentCredits: PRICE_A + PRICE_B, usageTotals: sumUsage(USAGE_A, USAGE_B) }),
    ];
    const state = spec.given(given).when(settle('runtime')).then([settled(8, PRICE_A + PRICE_B, 500, 'runtime')]);
    expect(invocationSummary(state)).toMatchObject({ state: 'settled', outcome: 'completed', charge: 20, estimate: 500 });
  });

  it('charges 0 for a conversation that ended before sending anything: nothing was sent, nothing is owed', () => {
    const given = [
      ...HISTORY.dispatched,
      completed({ outcome: 'cancelled', turnsUsed: 0, attemptCount: 0, spentCredits: 0, usageTotals: NO_USAGE, usageReported: false }),
    ];
    spec.given(given).when(settle('runtime')).then([settled(8, 0, 500, 'runtime')]);
  });
});

describe('STATE-PFM-LLM-001 transition 9: pending → settled charges the estimate', () => {
  it('charges the hold when the runtime closes an unmeasured result', () => {
    spec.given(HISTORY.pending).when(settle('runtime')).then([settled(9, 500, 500, 'runtime')]);
  });

  it('charges the hold when stale-request recovery closes it', () => {
    spec.given(HISTORY.pending).when(sweep(70_000, 60_000)).then([settled(9, 500, 500, 'sweep', 70_000)]);
  });
});

describe('STATE-PFM-LLM-001 transition 10: failed → settled charges the sum of attempt prices', () => {
  it('charges the billed attempts of a failed conversation, so they are not lost', () => {
    const given = [
      ...HISTORY.dispatched,
      attemptRecorded(attemptRecord(1, 0, { classification: 'overloaded', httpStatus: 529, usage: USAGE_B, priceCredits: PRICE_B })),
      attemptRecorded(attemptRecord(1, 1, { classification: 'malformed_request', httpStatus: 400 })),
      failed({ attemptCount: 2, spentCredits: PRICE_A + PRICE_B, usageTotals: sumUsage(USAGE_A, USAGE_B) }),
    ];
    spec.given(given).when(settle('runtime')).then([settled(10, PRICE_A + PRICE_B, 500, 'runtime')]);
  });
});

describe('STATE-PFM-LLM-001 transitions 8 and 10 of a gateway call: charged at most its hold, the rest recorded as its overrun (docs/gateway.md "Settlement")', () => {
  /** Held at 10 credits; its one attempt (USAGE_A) costs 13. */
  const HELD_AT_10 = { ...PUBLICATION, creditHold: 10 };
  const gatewayCall = (): InvocationEvent[] => {
    const event = estimated(HELD_AT_10);
    const gateway = { keyId: 'key-1', keyName: 'ci-bot', model: 'scripted-1', rateCardVersion: 2, stream: false };
    return [{ ...event, data: { ...event.data, gateway } }, reserved(10), dispatched(), attemptRecorded(attemptRecord(1, 0))];
  };
  const withOverrun = (event: ReturnType<typeof settled>, overrunCredits: number) => ({ ...event, data: { ...event.data, overrunCredits } });

  it('finding 4: a completed gateway call priced above its hold is charged its hold and records the 3 credits beyond it as its overrun (transition 8)', () => {
    const state = spec.given([...gatewayCall(), completed()]).when(settle('runtime')).then([withOverrun(settled(8, 10, 10, 'runtime'), PRICE_A - 10)]);
    expect(state.settlement).toMatchObject({ chargeCredits: 10, overrunCredits: 3 });
  });

  it('finding 4: a failed gateway call priced above its hold is charged its hold and records its overrun (transition 10)', () => {
    spec.given([...gatewayCall(), failed()]).when(settle('runtime')).then([withOverrun(settled(10, 10, 10, 'runtime'), PRICE_A - 10)]);
  });

  it('records no overrun for a gateway call within its hold', () => {
    const event = estimated();
    const gateway = { keyId: 'key-1', keyName: 'ci-bot', model: 'scripted-1', rateCardVersion: 2, stream: false };
    spec
      .given([{ ...event, data: { ...event.data, gateway } }, reserved(), dispatched(), attemptRecorded(attemptRecord(1, 0)), completed()])
      .when(settle('runtime'))
      .then([settled(8, PRICE_A, 500, 'runtime')]);
  });

  it('has no cap on the operations path: an operation priced past its hold is charged in full, with no overrun (the account keeps room for it)', () => {
    spec.given([estimated(HELD_AT_10), reserved(10), dispatched(), attemptRecorded(attemptRecord(1, 0)), completed()]).when(settle('runtime')).then([settled(8, PRICE_A, 10, 'runtime')]);
  });
});

describe('STATE-PFM-LLM-001 transition 11: dispatched → settled when an exception escapes, charging the estimate', () => {
  it('charges the estimate: the real cost was never learned', () => {
    spec
      .given([...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))])
      .when(settle('exception'))
      .then([settled(11, 500, 500, 'exception')]);
  });
});

describe('STATE-PFM-LLM-001 transition 12: estimated → settled by the sweep, charging 0', () => {
  it('charges nothing and releases nothing: nothing was sent and no hold was recorded', () => {
    spec.given(HISTORY.estimated).when(sweep(120_000, 60_000)).then([settled(12, 0, 0, 'sweep', 120_000)]);
  });
});

describe('STATE-PFM-LLM-001 transition 13: reserved → settled by the sweep, charging 0 and releasing the hold', () => {
  it('charges nothing and releases the 500 credits held', () => {
    spec.given(HISTORY.reserved).when(sweep(120_000, 60_000)).then([settled(13, 0, 500, 'sweep', 120_000)]);
  });
});

describe('STATE-PFM-LLM-001 transition 14: dispatched → settled by the sweep, charging the estimate', () => {
  it('charges the estimate, because its real cost was never learned', () => {
    spec
      .given([...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))])
      .when(sweep(200_000, 60_000))
      .then([settled(14, 500, 500, 'sweep', 200_000)]);
  });
});

describe('ATS-PFM-LLM-002-12 a later publication never changes an earlier request’s budget or price', () => {
  const dispatchedUnder = (maxTurns: number) => [
    estimated({ ...PUBLICATION, limits: { ...PUBLICATION.limits, maxTurns } }),
    reserved(),
    dispatched(),
    attemptRecorded(attemptRecord(1, 0)),
  ];

  it('judges a result against the budget copied into its first event, not against the catalog', () => {
    // The same report of five turns: over the budget of a request resolved under maxTurns 4 ...
    spec.given(dispatchedUnder(4)).when(complete({ turnsUsed: 5 })).thenThrows(ValidationError, { field: 'turnsUsed' });
    // ... and within that of a request resolved after a publication raised it to 8.
    spec.given(dispatchedUnder(8)).when(complete({ turnsUsed: 5 })).then([completed({ turnsUsed: 5 })]);
  });
});
