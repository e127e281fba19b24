/**
 * The run as pure steps (src/invocations/run-workflow.ts; docs/lifecycle.md "What one run does, in
 * order"), given/when/then after Emmett's workflow specifications: given what the run's earlier steps
 * observed, when its latest step observes something, then the handler executes this step next. The
 * appends a step asks for are decided here through the real invocation decider, as the repository
 * would decide them, so each test names the STATE-PFM-LLM-001 transitions its steps drive.
 */
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountEvent } from '../../src/accounts/account.events';
import type { AccountState } from '../../src/accounts/account.state';
import type { CommandStep } from '../../src/aggregates/aggregate.repository';
import type { OperationState } from '../../src/catalog/operation.decider';
import type { Publication } from '../../src/catalog/operation.events';
import { IllegalTransitionError, ValidationError } from '../../src/domain/domain.errors';
import type { PreparedConversation } from '../../src/features/operation-feature';
import type { InvocationCommand } from '../../src/invocations/invocation.commands';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import type { InvocationEvent } from '../../src/invocations/invocation.events';
import { invocationSummary, type InvocationState } from '../../src/invocations/invocation.state';
import { UnknownOrganizationError } from '../../src/invocations/invocation-errors';
import { decideRun, startRun, type Observation, type RunDecision, type RunFacts, type RunStep } from '../../src/invocations/run-workflow';
import type { ToolLoopResult } from '../../src/runtime';
import { granted, settingsChanged } from '../accounts/account.fixtures';
import { at, attemptRecord, attemptRecorded, estimated, HISTORY, NO_USAGE, PRICE_A, PUBLICATION, USAGE_A } from './invocation.fixtures';

const FACTS: RunFacts = { invocationId: 'inv-1', operationId: 'generate-query', organizationId: 'org-1' };
const KEYED: RunFacts = { ...FACTS, idempotencyKey: 'key-1', fingerprint: 'f'.repeat(64) };
/** The instant of the observation under test; the given ones were made at +0 ms. */
const WHEN_MS = 1_000;
const CONVERSATION: PreparedConversation = { system: [], messages: [], tools: [] };

// What the handler observes.
const prepared: Observation = { type: 'Prepared', conversation: CONVERSATION };
const publicationRead = (inForce: Publication | undefined): Observation => ({
  type: 'PublicationRead',
  operation: { operationId: 'generate-query', inForce } satisfies OperationState,
});
const accountRead = (...events: AccountEvent[]): Observation => ({ type: 'AccountRead', account: account(events) });
const invoked = (history: readonly InvocationEvent[]): Observation => ({ type: 'Invoked', state: invocation(history) });
const threw = (error: unknown): Observation => ({ type: 'Threw', error });
const DONE: Observation = { type: 'Done' };
const ACCOUNT_CHANGED: Observation = { type: 'AccountChanged' };
const FUNDED = [granted(10_000)];

function account(events: readonly AccountEvent[]): AccountState {
  return events.reduce(accountDecider.evolve, accountDecider.initialState());
}

function invocation(history: readonly InvocationEvent[]): InvocationState {
  return history.reduce(invocationDecider.evolve, invocationDecider.initialState());
}

/** What the loop returns: one measured turn unless overridden. */
function loopResult(overrides: Partial<ToolLoopResult> = {}): ToolLoopResult {
  return {
    outcome: 'completed',
    turnsUsed: 1,
    toolCallsUsed: 0,
    spentCredits: PRICE_A,
    attempts: [],
    attemptCount: 1,
    attemptsTruncated: false,
    usageTotals: USAGE_A,
    priceTotalCredits: PRICE_A,
    usageReported: true,
    answer: { value: 42 },
    elapsedMs: 900,
    ...overrides,
  };
}

/**
 * given(observations).when(observation).then(step): the run started from `facts` observed the given
 * ones (at +0 ms) and then `observation` (at +WHEN_MS); `then` checks the step it decides and returns
 * the decision, so a test can read the phase or carry on.
 */
function runSpec(facts: RunFacts = FACTS) {
  return {
    given(observations: readonly Observation[]) {
      const fold = (): RunDecision =>
        observations.reduce((decision, observation) => decideRun(decision.state, { ...observation, at: at(0) }), startRun(facts));
      return {
        decision: fold,
        when(observation: Observation) {
          const decide = (): RunDecision => decideRun(fold().state, { ...observation, at: at(WHEN_MS) });
          return {
            then(expected: RunStep): RunDecision {
              const decision = decide();
              expect(decision.step).toStrictEqual(expected);
              return decision;
            },
            /** The step's type, when its content is checked apart (appends with computed steps). */
            step(): RunStep {
              return decide().step;
            },
          };
        },
      };
    },
  };
}

/**
 * The events a step would write on the invocation's stream, `history`, decided as AggregateRepository
 * does (for a step with the account, its steps before and after the account's command).
 */
function appendedBy(step: RunStep, history: readonly InvocationEvent[]): InvocationEvent[] {
  const steps: readonly CommandStep<InvocationCommand, InvocationState>[] =
    step.type === 'Invoke'
      ? [step.command]
      : step.type === 'InvokeAll'
        ? step.steps
        : step.type === 'WithAccount'
          ? [...step.before, ...step.after]
          : fail(`not an append: ${step.type}`);
  const events: InvocationEvent[] = [];
  let state = invocation(history);
  for (const each of steps) {
    const command = typeof each === 'function' ? each(state) : each;
    if (command === undefined) continue;
    for (const event of invocationDecider.decide(command, state)) {
      events.push(event);
      state = invocationDecider.evolve(state, event);
    }
  }
  return events;
}

function fail(message: string): never {
  throw new Error(message);
}

const ADMITTED = [prepared, publicationRead(PUBLICATION), accountRead(...FUNDED)];
const ESTIMATED = [...ADMITTED, invoked(HISTORY.estimated), DONE];
const DISPATCHED = [...ESTIMATED, invoked(HISTORY.dispatched)];

describe('docs/lifecycle.md step 1: a keyed request looks for its key’s first request before anything else', () => {
  it('reads the invocation’s stream first when the request has a key, and prepares at once when it has none', () => {
    expect(startRun(KEYED).step).toStrictEqual({ type: 'ReadInvocation' });
    expect(startRun(FACTS).step).toStrictEqual({ type: 'Prepare' });
  });

  it('answers as a repeat of the first request when the key’s stream exists, writing nothing', () => {
    const first = invocation(HISTORY.completed);
    runSpec(KEYED).given([]).when({ type: 'InvocationRead', state: first, revision: 4n }).then({ type: 'AnswerAsRepeat', first });
  });

  it('goes on to prepare when the key has no stream yet', () => {
    runSpec(KEYED).given([]).when({ type: 'InvocationRead', state: invocation([]), revision: undefined }).then({ type: 'Prepare' });
  });
});

describe('docs/lifecycle.md steps 2 and 3: prepare, the publication in force, admission on the account', () => {
  it('refuses bad input before anything is written: the run ends with the feature’s error', () => {
    const error = ValidationError.of('input.question', 'is required');
    runSpec().given([]).when(threw(error)).then({ type: 'Fail', error });
  });

  it('reads the publication after preparing, then the account as cached', () => {
    runSpec().given([]).when(prepared).then({ type: 'ReadPublication' });
    runSpec().given([prepared]).when(publicationRead(PUBLICATION)).then({ type: 'ReadAccount', cached: true });
  });

  it('estimates on a cached account that admits, copying the publication, the key and the fingerprint, at the instant it read', () => {
    const step = runSpec(KEYED)
      .given([{ type: 'InvocationRead', state: invocation([]), revision: undefined }, prepared, publicationRead(PUBLICATION)])
      .when(accountRead(...FUNDED))
      .then({
        type: 'Invoke',
        command: {
          type: 'EstimateInvocation',
          data: {
            invocationId: 'inv-1',
            operationId: 'generate-query',
            organizationId: 'org-1',
            publication: PUBLICATION,
            idempotencyKey: 'key-1',
            requestFingerprint: KEYED.fingerprint!,
            estimatedAt: at(WHEN_MS),
          },
        },
      }).step;
    expect(appendedBy(step, [])).toStrictEqual([
      { type: 'InvocationEstimated', data: { ...estimated().data, idempotencyKey: 'key-1', requestFingerprint: KEYED.fingerprint!, estimatedAt: at(WHEN_MS) } },
    ]);
  });

  it('concludes a refusal only from the account as read: a cached account that refuses is read again', () => {
    runSpec().given([prepared, publicationRead(PUBLICATION)]).when(accountRead()).then({ type: 'ReadAccount', cached: false });
    runSpec().given([prepared, publicationRead(PUBLICATION)]).when(accountRead(granted(100))).then({ type: 'ReadAccount', cached: false });
  });

  it('estimates when the account as read still refuses (the refusal is recorded after the estimate)', () => {
    const step = runSpec().given([prepared, publicationRead(PUBLICATION), accountRead(granted(100))]).when(accountRead(granted(100))).step();
    expect(step).toMatchObject({ type: 'Invoke', command: { type: 'EstimateInvocation' } });
  });

  it('writes nothing for an organization that has no account, even as read: UnknownOrganizationError', () => {
    const step = runSpec().given([prepared, publicationRead(PUBLICATION), accountRead()]).when(accountRead()).step();
    expect(step).toStrictEqual({ type: 'Fail', error: new UnknownOrganizationError('org-1') });
  });
});

describe('STATE-PFM-LLM-001 estimate: the first event, then the caller is told the invocation exists', () => {
  it('announces the estimate once it committed, before admission goes on', () => {
    runSpec().given(ADMITTED).when(invoked(HISTORY.estimated)).then({ type: 'AnnounceEstimated' });
  });

  it('answers as a repeat when another process estimated the same keyed request first', () => {
    const raced = [{ type: 'InvocationRead', state: invocation([]), revision: undefined } as const, ...ADMITTED];
    const error = new IllegalTransitionError('estimated', 'EstimateInvocation');
    runSpec(KEYED).given(raced).when(threw(error)).then({ type: 'ReadInvocation' });
    const first = invocation(HISTORY.estimated);
    runSpec(KEYED).given([...raced, threw(error)]).when({ type: 'InvocationRead', state: first, revision: 0n }).then({ type: 'AnswerAsRepeat', first });
  });

  it('ends with the error when an unkeyed estimate is refused or the append fails', () => {
    const error = new IllegalTransitionError('estimated', 'EstimateInvocation');
    runSpec().given(ADMITTED).when(threw(error)).then({ type: 'Fail', error });
  });
});

describe('STATE-PFM-LLM-001 transition 1: estimated → refused by the access check', () => {
  it('refuses an operation never published as unknown_operation, at the instant of the announcement', () => {
    const step = runSpec().given([prepared, publicationRead(undefined), accountRead(...FUNDED), accountRead(...FUNDED), invoked([estimated(null)])]).when(DONE).step();
    expect(appendedBy(step, [estimated(null)])).toStrictEqual([
      { type: 'InvocationRefused', data: { reason: 'unknown_operation', figures: { publishedVersions: 0 }, transition: 1, refusedAt: at(WHEN_MS) } },
    ]);
  });

  it('refuses an organization that switched AI off as ai_disabled, and the run ends with the refused summary', () => {
    const off = [prepared, publicationRead(PUBLICATION), accountRead(settingsChanged(false, 10)), accountRead(settingsChanged(false, 10)), invoked(HISTORY.estimated)];
    const step = runSpec().given(off).when(DONE).step();
    const refusedEvents = appendedBy(step, HISTORY.estimated);
    expect(refusedEvents).toMatchObject([{ type: 'InvocationRefused', data: { reason: 'ai_disabled', transition: 1 } }]);
    const refused = invocation([...HISTORY.estimated, ...refusedEvents]);
    runSpec().given([...off, DONE]).when(invoked([...HISTORY.estimated, ...refusedEvents])).then({ type: 'Refused', result: invocationSummary(refused) });
  });
});

describe('STATE-PFM-LLM-001 transition 2: estimated → refused for want of credits or a slot', () => {
  it('refuses a hold the account as read cannot fit as insufficient_credits', () => {
    const poor = [prepared, publicationRead(PUBLICATION), accountRead(granted(100)), accountRead(granted(100)), invoked(HISTORY.estimated)];
    const step = runSpec().given(poor).when(DONE).step();
    expect(appendedBy(step, HISTORY.estimated)).toStrictEqual([
      { type: 'InvocationRefused', data: { reason: 'insufficient_credits', figures: { available: 100, creditHold: 500 }, transition: 2, refusedAt: at(WHEN_MS) } },
    ]);
  });

  it('places the hold for the publication’s creditHold once admitted, with the reservation and the dispatch in the same commit', () => {
    runSpec()
      .given(ADMITTED.concat(invoked(HISTORY.estimated)))
      .when(DONE)
      .then({
        type: 'WithAccount',
        command: { type: 'PlaceHold', data: { invocationId: 'inv-1', credits: 500, placedAt: at(WHEN_MS) } },
        before: [],
        after: [
          { type: 'ReserveInvocation', data: { reservedAt: at(WHEN_MS) } },
          { type: 'DispatchInvocation', data: { dispatchedAt: at(WHEN_MS) } },
        ],
      });
  });

  it('records the account’s own refusal of the hold (decided on its stream) as the refusal', () => {
    const refusal = { reason: 'no_running_slot', figures: { running: 10, maxRunning: 10 } } as const;
    const step = runSpec().given(ESTIMATED).when(threw(new AdmissionRefusedError(refusal))).step();
    expect(appendedBy(step, HISTORY.estimated)).toStrictEqual([{ type: 'InvocationRefused', data: { ...refusal, transition: 2, refusedAt: at(WHEN_MS) } }]);
  });

  it('ends with the error, the invocation left estimated for the sweep, when the hold fails otherwise', () => {
    const error = new Error('store unavailable');
    runSpec().given(ESTIMATED).when(threw(error)).then({ type: 'Fail', error });
  });
});

describe('STATE-PFM-LLM-001 transitions 3 and 4: reserved and dispatched in the hold’s commit, then the conversation', () => {
  it('reserves and dispatches at the instant the hold was placed, in its commit', () => {
    const step = runSpec().given(ADMITTED.concat(invoked(HISTORY.estimated))).when(DONE).step();
    expect(step.type).toBe('WithAccount');
    expect(appendedBy(step, HISTORY.estimated)).toStrictEqual([
      { type: 'InvocationReserved', data: { creditHold: 500, reservedAt: at(WHEN_MS) } },
      { type: 'InvocationDispatched', data: { dispatchedAt: at(WHEN_MS) } },
    ]);
  });

  it('converses under the copied publication, its time budget running from the recorded dispatch', () => {
    runSpec()
      .given(ESTIMATED)
      .when(invoked(HISTORY.dispatched))
      .then({ type: 'Converse', conversation: CONVERSATION, publication: PUBLICATION, dispatchedAtMs: Date.parse(at(0)) });
  });

  it('stops a conversation asked to stop before it began, then starts it so it ends cancelled sending nothing', () => {
    const cancellation = { requestedBy: 'org_member of org-1', requestedAt: at(5) };
    const cancelled = [...HISTORY.dispatched, { type: 'InvocationCancellationRequested', data: cancellation } as const];
    runSpec().given(ESTIMATED).when(invoked(cancelled)).then({ type: 'StopBeforeStart', cancellation });
    runSpec().given([...ESTIMATED, invoked(cancelled)]).when(DONE).then({ type: 'Converse', conversation: CONVERSATION, publication: PUBLICATION, dispatchedAtMs: Date.parse(at(0)) });
  });
});

/** A dispatched invocation after its conversation's one attempt (with usage unless `unmeasured`). */
const CONVERSED = [...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0))];
const CONVERSED_UNMEASURED = [...HISTORY.dispatched, attemptRecorded(attemptRecord(1, 0, { usage: undefined, priceCredits: 0 }))];

/** The closing append after the conversation returned `result`, decided on `history` (the stream with its attempts). */
function closeAfter(result: ToolLoopResult, history: readonly InvocationEvent[] = CONVERSED): { events: InvocationEvent[]; closed: InvocationEvent[]; settled: InvocationState } {
  const step = runSpec().given(DISPATCHED).when({ type: 'Conversed', result }).step();
  const events = appendedBy(step, history);
  const closed = [...history, ...events];
  return { events, closed, settled: invocation(closed) };
}

describe('STATE-PFM-LLM-001 transitions 5 and 8: a completed, measured result and its settlement in one append', () => {
  it('records the result with its figures and settles it at its spend', () => {
    const { events } = closeAfter(loopResult());
    expect(events.map((event) => event.type)).toEqual(['InvocationCompleted', 'InvocationSettled']);
    expect(events[0]).toMatchObject({ data: { outcome: 'completed', turnsUsed: 1, spentCredits: PRICE_A, completedAt: at(WHEN_MS) } });
    expect(events[1]).toMatchObject({ data: { transition: 8, chargeCredits: PRICE_A, heldCredits: 500, settledBy: 'runtime', settledAt: at(WHEN_MS) } });
  });

  it('names the limit that ended a conversation at a limit', () => {
    const { events } = closeAfter(loopResult({ outcome: 'turn_limit', endingLimit: 'maxTurns', answer: undefined }));
    expect(events[0]).toMatchObject({ type: 'InvocationCompleted', data: { outcome: 'turn_limit', endingLimit: 'maxTurns' } });
  });

  it('settles the account’s hold at the charge in the same commit, then ends with the settled summary and the answer', () => {
    const { closed, settled } = closeAfter(loopResult());
    const afterClose = [...DISPATCHED, { type: 'Conversed', result: loopResult() } as const];
    const step = runSpec().given(DISPATCHED).when({ type: 'Conversed', result: loopResult() }).step();
    if (step.type !== 'WithAccount' || typeof step.command !== 'function') return fail(`expected the account's settlement as a function of the invocation's, got ${step.type}`);
    expect({ after: step.after, command: step.command(settled) }).toStrictEqual({
      after: [],
      command: { type: 'SettleHold', data: { invocationId: 'inv-1', chargeCredits: PRICE_A, settledAt: at(WHEN_MS) } },
    });
    runSpec()
      .given(afterClose)
      .when(invoked(closed))
      .then({ type: 'Settled', result: invocationSummary(settled), answer: { value: 42 } });
  });

  it('ends without an answer an outcome other than completed', () => {
    const result = loopResult({ outcome: 'refused_by_model', answer: undefined });
    const { closed, settled } = closeAfter(result);
    runSpec()
      .given([...DISPATCHED, { type: 'Conversed', result }])
      .when(invoked(closed))
      .then({ type: 'Settled', result: invocationSummary(settled) });
  });
});

describe('STATE-PFM-LLM-001 transitions 5, 7 and 9: a completed result that reported no usage is pending, then charged the estimate', () => {
  it('marks it pending and settles it at the hold, in the same append', () => {
    const { events } = closeAfter(loopResult({ spentCredits: 0, priceTotalCredits: 0, usageTotals: NO_USAGE, usageReported: false }), CONVERSED_UNMEASURED);
    expect(events.map((event) => event.type)).toEqual(['InvocationCompleted', 'InvocationPending', 'InvocationSettled']);
    expect(events[2]).toMatchObject({ data: { transition: 9, chargeCredits: 500 } });
  });

  it('settles a result that sent nothing by transition 8 at 0: nothing was unmeasured', () => {
    const { events } = closeAfter(loopResult({ outcome: 'cancelled', answer: undefined, turnsUsed: 0, spentCredits: 0, priceTotalCredits: 0, attemptCount: 0, usageTotals: NO_USAGE, usageReported: false }), HISTORY.dispatched);
    expect(events.map((event) => event.type)).toEqual(['InvocationCompleted', 'InvocationSettled']);
    expect(events[1]).toMatchObject({ data: { transition: 8, chargeCredits: 0 } });
  });
});

describe('STATE-PFM-LLM-001 transitions 6 and 10: a failed result keeps its billed attempts', () => {
  it('records the fault and settles at the sum of the attempt prices', () => {
    const { events } = closeAfter(loopResult({ outcome: 'failed', faultClassification: 'rate_limited', answer: undefined }));
    expect(events).toMatchObject([
      { type: 'InvocationFailed', data: { fault: 'rate_limited', spentCredits: PRICE_A, failedAt: at(WHEN_MS) } },
      { type: 'InvocationSettled', data: { transition: 10, chargeCredits: PRICE_A } },
    ]);
  });
});

describe('STATE-PFM-LLM-001 transition 11: something escaped the protected block around the conversation', () => {
  const error = new Error('handler bug');

  it('reports the escape, then settles by the exception path at the estimate', () => {
    runSpec().given(DISPATCHED).when(threw(error)).then({ type: 'ReportEscape', error });
    const step = runSpec().given([...DISPATCHED, threw(error)]).when(DONE).step();
    expect(appendedBy(step, HISTORY.dispatched)).toStrictEqual([
      { type: 'InvocationSettled', data: { transition: 11, chargeCredits: 500, heldCredits: 500, settledBy: 'exception', settledAt: at(WHEN_MS) } },
    ]);
  });

  it('takes the same path when the closing append fails, and the answer of that result is not given', () => {
    const closing = [...DISPATCHED, { type: 'Conversed', result: loopResult() } as const];
    runSpec().given(closing).when(threw(error)).then({ type: 'ReportEscape', error });
    const settledEvents = appendedBy(runSpec().given([...closing, threw(error)]).when(DONE).step(), HISTORY.dispatched);
    const history = [...HISTORY.dispatched, ...settledEvents];
    const settling = [...closing, threw(error), DONE];
    runSpec()
      .given(settling)
      .when(invoked(history))
      .then({ type: 'OnAccount', command: { type: 'SettleHold', data: { invocationId: 'inv-1', chargeCredits: 500, settledAt: at(WHEN_MS) } } });
    runSpec().given([...settling, invoked(history)]).when(ACCOUNT_CHANGED).then({ type: 'Settled', result: invocationSummary(invocation(history)) });
  });

  it('ends with the error when the exception settlement itself fails (the sweep settles it: transition 14)', () => {
    const failure = new Error('store unavailable');
    runSpec().given([...DISPATCHED, threw(error), DONE]).when(threw(failure)).then({ type: 'Fail', error: failure });
  });
});

describe('docs/lifecycle.md step 9: the hold is settled on the account after the invocation', () => {
  it('ends with the error when the account append after an exception settlement fails: the sweep releases the hold later', () => {
    const error = new Error('handler bug');
    const settledEvents = appendedBy(runSpec().given([...DISPATCHED, threw(error)]).when(DONE).step(), HISTORY.dispatched);
    const failure = new Error('store unavailable');
    runSpec()
      .given([...DISPATCHED, threw(error), DONE, invoked([...HISTORY.dispatched, ...settledEvents])])
      .when(threw(failure))
      .then({ type: 'Fail', error: failure });
  });
});

describe('one whole run, step by step (docs/lifecycle.md "What one run does, in order")', () => {
  it('reads three times, commits three times around the conversation’s own attempt appends, and ends settled', () => {
    const { closed } = closeAfter(loopResult());
    const observations: Observation[] = [...DISPATCHED, { type: 'Conversed', result: loopResult() }, invoked(closed)];
    const steps: string[] = [];
    let decision = startRun(FACTS);
    for (const observation of observations) {
      steps.push(decision.step.type);
      decision = decideRun(decision.state, { ...observation, at: at(0) });
    }
    steps.push(decision.step.type);
    expect(steps).toEqual(['Prepare', 'ReadPublication', 'ReadAccount', 'Invoke', 'AnnounceEstimated', 'WithAccount', 'Converse', 'WithAccount', 'Settled']);
    expect(decision.state.phase).toBe('over');
  });

  it('issue 35: writes the estimate, then the hold with the reservation and the dispatch, then the result and its settlement with the hold’s, each one commit', () => {
    const { closed } = closeAfter(loopResult());
    const observations: Observation[] = [...DISPATCHED, { type: 'Conversed', result: loopResult() }, invoked(closed)];
    const commits: string[] = [];
    let decision = startRun(FACTS);
    for (const observation of [...observations, undefined]) {
      const step = decision.step;
      if (step.type === 'Invoke') commits.push(step.command.type);
      if (step.type === 'WithAccount') {
        const types = (steps: readonly unknown[]) => steps.map((each) => (typeof each === 'function' ? 'decided' : (each as { type: string }).type));
        commits.push([...types(step.before), typeof step.command === 'function' ? 'SettleHold' : step.command.type, ...types(step.after)].join(' + '));
      }
      if (observation !== undefined) decision = decideRun(decision.state, { ...observation, at: at(0) });
    }
    // The estimate is announced to the caller; the provider is called after the second commit, and the caller answered after the third.
    expect(commits).toEqual(['EstimateInvocation', 'PlaceHold + ReserveInvocation + DispatchInvocation', 'CompleteInvocation + decided + SettleInvocation + SettleHold']);
  });

  it('refuses an observation its phase does not expect: a bug in the handler, never a silent step', () => {
    expect(() => runSpec().given([]).when(ACCOUNT_CHANGED).step()).toThrow('the run in phase preparing expected Prepared, observed AccountChanged');
  });
});
