import {
  EXPLANATION_BASIS_COLLECTION,
  EXPLANATION_COLLECTION,
  explanationsProjection,
  type ExplanationView,
} from '../../projections';
import type { DomainEvent } from '../../src/domain/decider';
import type { CompletedOutcome } from '../../src/invocations/invocation.events';
import type { EndingLimit, FaultClass } from '../../src/runtime';
import {
  attempt,
  completed,
  dispatched,
  estimated,
  EventLog,
  failed,
  figures,
  pending,
  publicationV,
  refused,
  reserved,
  settled,
} from './support/invocation-log';
import { InMemoryReadModelTx, project } from './support/in-memory-read-model';

const V1 = publicationV(1);

function explain(...events: DomainEvent[]): { view: ExplanationView; tx: InMemoryReadModelTx } {
  const tx = project(explanationsProjection, new EventLog().invocation('inv-1', ...events).events);
  const view = tx.get<ExplanationView>(EXPLANATION_COLLECTION, 'inv-1');
  if (view === undefined) throw new Error('no explanation written');
  return { view, tx };
}

/** A dispatched conversation of four priced turns whose first turn needed one retry: 10 + 9 + 9 + 9 = 37 credits. */
const FOUR_TURNS = [
  attempt(1, 0, { classification: 'overloaded', httpStatus: 529 }),
  attempt(1, 1, { priceCredits: 10 }),
  attempt(2, 0, { priceCredits: 9 }),
  attempt(3, 0, { priceCredits: 9 }),
  attempt(4, 0, { priceCredits: 9 }),
];
const FOUR_TURN_FIGURES = figures({ turnsUsed: 4, toolCallsUsed: 2, spentCredits: 37, attemptCount: 5 });
const conversation = (...ending: DomainEvent[]): DomainEvent[] => [estimated(V1), reserved(), dispatched(), ...FOUR_TURNS, ...ending];

describe('explanations projection: refusals name their reason and the figures behind it (docs/lifecycle.md, ATS-PFM-LLM-002-13)', () => {
  it.each([
    [
      'insufficient_credits',
      estimated(V1),
      refused({ reason: 'insufficient_credits', figures: { available: 120, creditHold: 500 } }, 2),
      'Refused: insufficient_credits — available 120 < hold 500.',
    ],
    [
      'no_running_slot',
      estimated(V1),
      refused({ reason: 'no_running_slot', figures: { running: 10, maxRunning: 10 } }, 2),
      'Refused: no_running_slot — running 10 of 10.',
    ],
    [
      'ledger_totals_bound',
      estimated(V1),
      refused({ reason: 'ledger_totals_bound', figures: { committedCredits: 9_007_199_254_740_000, creditHold: 500, overrunRoomCredits: 1_000_000_000_000, maxTotalCredits: 9_007_199_254_740_991 } }, 2),
      "Refused: ledger_totals_bound — committed 9007199254740000 + hold 500 + settlement room 1000000000000 > 9007199254740991, the exact-integer bound of the account's totals.",
    ],
    [
      'ai_disabled',
      estimated(V1),
      refused({ reason: 'ai_disabled', figures: { aiEnabled: false } }, 1),
      'Refused: ai_disabled — AI is switched off for organization acme.',
    ],
    [
      'operation_disabled',
      estimated(publicationV(3, { enabled: false })),
      refused({ reason: 'operation_disabled', figures: { version: 3, enabled: false } }, 1),
      'Refused: operation_disabled — demo.arithmetic v3 is published as disabled.',
    ],
    [
      'unknown_operation',
      estimated(null),
      refused({ reason: 'unknown_operation', figures: { publishedVersions: 0 } }, 1),
      'Refused: unknown_operation — demo.arithmetic has no published version.',
    ],
  ])('explains %s', (reason, estimate, refusal, sentence) => {
    const { view, tx } = explain(estimate, refusal);
    expect(view.sentence).toBe(sentence);
    expect(view.state).toBe('refused');
    expect(view.refusal).toEqual({ reason, figures: refusal.data.figures, transition: refusal.data.transition });
    expect(view.outcome).toBeUndefined();
    // A refused request is final: nothing of it stays open in the projection.
    expect(tx.get(EXPLANATION_BASIS_COLLECTION, 'inv-1')).toBeUndefined();
  });

  it('has no publication figures for an operation that was never published', () => {
    const { view } = explain(estimated(null), refused({ reason: 'unknown_operation', figures: { publishedVersions: 0 } }, 1));
    expect(view).toMatchObject({ turns: { used: 0 }, toolCalls: { used: 0 }, credits: { spent: 0, hold: 0 } });
    expect(view.publicationVersion).toBeUndefined();
    expect(view.turns.limit).toBeUndefined();
  });
});

describe('ATS-PFM-LLM-002-13 explanations name the retained limit that ended a conversation, with its operation and version', () => {
  it('explains a turn limit with the figures of the conversation', () => {
    const { view } = explain(...conversation(completed('turn_limit', FOUR_TURN_FIGURES, 'maxTurns')));
    expect(view.sentence).toBe(
      'Ended by turn_limit: used 4 of 4 turns (maxTurns of demo.arithmetic v1); 2 of 10 tool calls; spent 37 of a 500-credit hold; 1 retry. Awaiting settlement.',
    );
    expect(view).toMatchObject({
      state: 'completed',
      outcome: 'turn_limit',
      publicationVersion: 1,
      endingLimit: { name: 'maxTurns', value: 4, operationId: 'demo.arithmetic', publicationVersion: 1 },
      turns: { used: 4, limit: 4 },
      toolCalls: { used: 2, limit: 10 },
      credits: { spent: 37, hold: 500 },
      retries: 1,
    });
  });

  it('values the limit from the publication the invocation was admitted under, not a later one', () => {
    const admittedUnder = publicationV(1, { limits: { ...V1.limits, maxTurns: 2 } });
    const log = new EventLog()
      .invocation('inv-1', estimated(admittedUnder), reserved(), dispatched(), attempt(1, 0), attempt(2, 0))
      // A publication raising the limit, while the conversation is still running: it changes nothing here.
      .append('operation-demo.arithmetic', { type: 'OperationPublished', data: { operationId: 'demo.arithmetic', ...publicationV(2) } })
      .invocation('inv-1', completed('turn_limit', figures({ turnsUsed: 2, attemptCount: 2 }), 'maxTurns'), settled(8, 0));
    const view = project(explanationsProjection, log.events).get<ExplanationView>(EXPLANATION_COLLECTION, 'inv-1');
    expect(view?.endingLimit).toEqual({ name: 'maxTurns', value: 2, operationId: 'demo.arithmetic', publicationVersion: 1 });
    expect(view?.sentence).toContain('used 2 of 2 turns (maxTurns of demo.arithmetic v1)');
  });

  it.each<[CompletedOutcome, EndingLimit, Partial<ReturnType<typeof figures>>, ExplanationView['endingLimit'], string]>([
    [
      'tool_limit',
      'maxToolCalls',
      { turnsUsed: 3, toolCallsUsed: 8, spentCredits: 28, attemptCount: 3 },
      { name: 'maxToolCalls', value: 10, operationId: 'demo.arithmetic', publicationVersion: 1 },
      'Ended by tool_limit: used 8 of 10 tool calls and the next batch asked for more (maxToolCalls of demo.arithmetic v1); 3 of 4 turns; spent 28 of a 500-credit hold; no retries.',
    ],
    [
      'credit_limit',
      'creditHold',
      { turnsUsed: 2, toolCallsUsed: 1, spentCredits: 530, attemptCount: 2 },
      { name: 'creditHold', value: 500, operationId: 'demo.arithmetic', publicationVersion: 1 },
      'Ended by credit_limit: spent 530, more than the 500-credit hold (creditHold of demo.arithmetic v1); 2 of 4 turns; 1 of 10 tool calls; no retries.',
    ],
    [
      'time_limit',
      'totalTimeMs',
      { turnsUsed: 2, toolCallsUsed: 1, spentCredits: 12, attemptCount: 2 },
      { name: 'totalTimeMs', value: 60_000, operationId: 'demo.arithmetic', publicationVersion: 1 },
      'Ended by time_limit: the 60000 ms conversation time ran out (totalTimeMs of demo.arithmetic v1); 2 of 4 turns; 1 of 10 tool calls; spent 12 of a 500-credit hold; no retries.',
    ],
  ])('explains %s by naming %s', (outcome, limit, conversationFigures, endingLimit, sentence) => {
    const { view } = explain(estimated(V1), reserved(), dispatched(), completed(outcome, figures(conversationFigures), limit));
    expect(view.endingLimit).toEqual(endingLimit);
    expect(view.sentence).toBe(`${sentence} Awaiting settlement.`);
  });
});

describe('explanations projection: one wording for each outcome of docs/rules.md', () => {
  const ONE_TURN = figures({ turnsUsed: 1, toolCallsUsed: 0, spentCredits: 7, attemptCount: 1 });

  it.each<[CompletedOutcome, string]>([
    ['completed', 'Completed: answer accepted after 1 of 4 turns; 0 of 10 tool calls; spent 7 of a 500-credit hold; no retries.'],
    [
      'refused_by_model',
      'Ended by refused_by_model: the model declined to answer; 1 of 4 turns; 0 of 10 tool calls; spent 7 of a 500-credit hold; no retries.',
    ],
    [
      'incomplete',
      "Ended incomplete: the model's output was cut off at its token limit before an accepted answer; 1 of 4 turns; 0 of 10 tool calls; spent 7 of a 500-credit hold; no retries.",
    ],
    [
      'protocol_error',
      'Ended by protocol_error: the model asked for a tool batch that could not run safely (a repeated call id, or a write tool batched with others), so none of it ran; 1 of 4 turns; 0 of 10 tool calls; spent 7 of a 500-credit hold; no retries.',
    ],
    ['cancelled', 'Cancelled: the caller cancelled the request; 1 of 4 turns; 0 of 10 tool calls; spent 7 of a 500-credit hold; no retries.'],
  ])('explains %s, then its settlement', (outcome, sentence) => {
    const { view } = explain(estimated(V1), reserved(), dispatched(), attempt(1, 0, { priceCredits: 7 }), completed(outcome, ONE_TURN), settled(8, 7));
    expect(view.sentence).toBe(`${sentence} Settled (transition 8, by runtime): charged 7 credits, the sum of its attempt prices.`);
    expect(view).toMatchObject({ state: 'settled', outcome, credits: { spent: 7, hold: 500, charge: 7 } });
    expect(view.endingLimit).toBeUndefined();
    expect(view.settlement).toEqual({ transition: 8, by: 'runtime', chargeCredits: 7 });
  });

  it.each<[FaultClass, string]>([
    ['overloaded', 'overloaded — the provider was overloaded, and retries ran out'],
    ['timeout', 'timeout — provider attempts timed out, and retries ran out'],
    ['rate_limited', 'rate_limited — the provider rate-limited the requests, and retries ran out'],
    ['server_error', 'server_error — the provider returned server errors, and retries ran out'],
    ['connection', 'connection — the connection to the provider failed, and retries ran out'],
    ['conflict', 'conflict — the provider reported a conflict, and retries ran out'],
    ['credit_exhausted', "credit_exhausted — the provider account's credit is exhausted, which is not retried"],
    ['malformed_request', 'malformed_request — the provider rejected the request as malformed, which is not retried'],
    ['unauthorized', 'unauthorized — the provider refused our credentials, which is not retried'],
    ['cancelled', 'cancelled — the provider call was cancelled, which is not retried'],
  ])('explains failed with its fault %s', (fault, clause) => {
    const attempts = [attempt(1, 0, { classification: fault }), attempt(1, 1, { classification: fault }), attempt(1, 2, { classification: fault })];
    const { view } = explain(estimated(V1), reserved(), dispatched(), ...attempts, failed(fault, figures({ attemptCount: 3 })), settled(10, 0));
    expect(view.sentence).toBe(
      `Failed: ${clause}; 1 of 4 turns; 0 of 10 tool calls; spent 0 of a 500-credit hold; 2 retries. ` +
        'Settled (transition 10, by runtime): charged 0 credits for its billed attempts.',
    );
    expect(view).toMatchObject({ state: 'settled', outcome: 'failed', fault, retries: 2 });
  });
});

describe('explanations projection: in-flight states and every settlement transition (docs/lifecycle.md)', () => {
  it('says where a request stands before it ends', () => {
    expect(explain(estimated(V1)).view.sentence).toBe('Estimated: awaiting admission for a 500-credit hold (demo.arithmetic v1).');
    expect(explain(estimated(V1), reserved()).view.sentence).toBe('Reserved: 500 credits and a running slot held; not yet dispatched.');
    const inFlight = explain(estimated(V1), reserved(), dispatched(), ...FOUR_TURNS.slice(0, 3)).view;
    expect(inFlight.sentence).toBe('In flight: 2 of 4 turns started; spent 19 of a 500-credit hold; 1 retry so far.');
    expect(inFlight).toMatchObject({ state: 'dispatched', turns: { used: 2, limit: 4 }, credits: { spent: 19, hold: 500 }, retries: 1 });
  });

  it('explains a result whose cost was never measured while it is pending, then at its estimate (transitions 7 and 9)', () => {
    const unmeasured = completed('completed', figures({ usageReported: false }));
    expect(explain(estimated(V1), reserved(), dispatched(), attempt(1, 0), unmeasured, pending()).view.sentence).toBe(
      'Completed: answer accepted after 1 of 4 turns; 0 of 10 tool calls; spent 0 of a 500-credit hold; no retries. ' +
        'Pending: no attempt reported usage, so it will be charged its 500-credit estimate.',
    );
    const { view } = explain(estimated(V1), reserved(), dispatched(), attempt(1, 0), unmeasured, pending(), settled(9, 500, 'sweep'));
    expect(view.sentence).toBe(
      'Completed: answer accepted after 1 of 4 turns; 0 of 10 tool calls; spent 0 of a 500-credit hold; no retries. ' +
        'Settled (transition 9, by sweep): no attempt reported usage, so charged the estimate, 500 credits.',
    );
    expect(view.credits).toEqual({ spent: 0, hold: 500, charge: 500 });
  });

  it.each<[string, DomainEvent[], string]>([
    [
      '11: an exception escaped a dispatched conversation',
      [estimated(V1), reserved(), dispatched(), attempt(1, 0, { priceCredits: 4 }), settled(11, 500, 'exception')],
      'Stopped in flight after 1 of 4 turns; spent 4 of a 500-credit hold; no retries. ' +
        'Settled (transition 11, by exception): an error escaped the conversation, so charged the estimate, 500 credits.',
    ],
    [
      '12: the sweep closed a stale estimated request',
      [estimated(V1), settled(12, 0, 'sweep', 0)],
      'Settled (transition 12, by sweep): abandoned before admission; nothing was sent and 0 credits charged.',
    ],
    [
      '13: the sweep closed a stale reserved request',
      [estimated(V1), reserved(), settled(13, 0, 'sweep')],
      'Settled (transition 13, by sweep): abandoned while reserved; nothing was sent, the hold was released and 0 credits charged.',
    ],
    [
      '14: the sweep closed a stale dispatched request',
      [estimated(V1), reserved(), dispatched(), attempt(1, 0), attempt(1, 1), settled(14, 500, 'sweep')],
      'Stopped in flight after 1 of 4 turns; spent 0 of a 500-credit hold; 1 retry. ' +
        'Settled (transition 14, by sweep): abandoned in flight; its real cost was never learned, so charged the estimate, 500 credits.',
    ],
  ])('explains transition %s', (_name, events, sentence) => {
    const { view, tx } = explain(...events);
    expect(view.sentence).toBe(sentence);
    expect(view.state).toBe('settled');
    expect(view.outcome).toBeUndefined();
    expect(tx.get(EXPLANATION_BASIS_COLLECTION, 'inv-1')).toBeUndefined();
  });

  it('is keyed by invocation, indexed by organization, and the same on every replay', () => {
    const log = new EventLog()
      .invocation('inv-1', ...conversation(completed('turn_limit', FOUR_TURN_FIGURES, 'maxTurns'), settled(8, 37)))
      .invocation('inv-2', estimated(V1, { invocationId: 'inv-2', organizationId: 'globex' }), refused({ reason: 'ai_disabled', figures: { aiEnabled: false } }, 1));
    const first = project(explanationsProjection, log.events);
    expect(first.ids(EXPLANATION_COLLECTION)).toEqual(['inv-1', 'inv-2']);
    expect(first.indexKeyOf(EXPLANATION_COLLECTION, 'inv-2')).toBe('globex');
    expect(project(explanationsProjection, log.events).snapshot()).toEqual(first.snapshot());
    // Only open invocations keep their basis document.
    expect(first.ids(EXPLANATION_BASIS_COLLECTION)).toEqual([]);
  });
});

describe('explanations projection: what recovery finished says so (issue 24, STATE-PFM-LLM-001 transitions 8–14)', () => {
  const holdSettled = (settledBy?: 'sweep' | 'recovery'): DomainEvent => ({
    type: 'HoldSettled',
    data: { invocationId: 'inv-1', heldCredits: 500, chargedCredits: 37, settledAt: '2025-01-01T00:10:00.000Z', ...(settledBy === undefined ? {} : { settledBy }) },
  });
  const logOf = (...account: DomainEvent[]) =>
    new EventLog().invocation('inv-1', ...conversation(completed('completed', FOUR_TURN_FIGURES), settled(8, 37))).append('account-acme', ...account).events;

  it('names recovery, after a restart, as what settled an invocation a crash stopped in flight', () => {
    const { view } = explain(estimated(V1), reserved(), dispatched(), attempt(1, 0, { priceCredits: 9 }), settled(14, 500, 'recovery'));
    expect(view.settlement).toEqual({ transition: 14, by: 'recovery', chargeCredits: 500 });
    expect(view.sentence).toBe(
      'Stopped in flight after 1 of 4 turns; spent 9 of a 500-credit hold; no retries. ' +
        'Settled by recovery after a restart or a lost process (transition 14): abandoned in flight; its real cost was never learned, so charged the estimate, 500 credits.',
    );
  });

  it('issue 31 finding 2: says which of a lapsed lease or a passed deadline made recovery settle what a lease owned', () => {
    const withGround = (recovery: Record<string, unknown>): DomainEvent => {
      const event = settled(14, 500, 'recovery');
      return { ...event, data: { ...(event.data as object), recovery } };
    };
    const lapsed = explain(estimated(V1), reserved(), dispatched(), withGround({ because: 'lease_expired', leaseId: 'lease-1', leaseLapsedAt: '2025-01-01T00:01:00.000Z' }));
    expect(lapsed.view.sentence).toMatch(
      /Settled by recovery because the instance that ran it stopped: its lease expired at 2025-01-01T00:01:00\.000Z \(transition 14\): abandoned in flight;/,
    );
    const late = explain(estimated(V1), reserved(), dispatched(), withGround({ because: 'deadline_passed', deadlineAt: '2025-01-01T00:02:00.000Z', pastByMs: 65_400 }));
    expect(late.view.sentence).toMatch(/Settled by recovery because it passed its deadline \(2025-01-01T00:02:00\.000Z\) by 65 s \(transition 14\): abandoned in flight;/);
    expect(late.view.sentence).not.toMatch(/restart or a lost process/);
  });

  it('adds the hold recovery released for an invocation its own run settled, from the account stream', () => {
    const view = project(explanationsProjection, logOf(holdSettled('recovery'))).get<ExplanationView>(EXPLANATION_COLLECTION, 'inv-1')!;
    expect(view.holdRelease).toEqual({ by: 'recovery', heldCredits: 500 });
    expect(view.sentence).toMatch(/Settled \(transition 8, by runtime\): charged 37 credits, the sum of its attempt prices\. Its 500-credit hold was released by recovery after a restart or a lost process\.$/);
  });

  it("changes nothing for the run's own release, nor for one written before settledBy existed", () => {
    const plain = project(explanationsProjection, logOf()).get<ExplanationView>(EXPLANATION_COLLECTION, 'inv-1')!;
    const own = project(explanationsProjection, logOf(holdSettled())).get<ExplanationView>(EXPLANATION_COLLECTION, 'inv-1')!;
    expect(own).toEqual(plain);
    expect(own.holdRelease).toBeUndefined();
  });
});
