import { invocationDecider } from '../../src/invocations/invocation.decider';
import type { InvocationEvent } from '../../src/invocations/invocation.events';
import {
  closeAndSettle,
  estimate,
  oneAttemptEnd,
  placeHold,
  reserveAndDispatch,
  settleHold,
  settlement,
  type LifecycleStep,
} from '../../src/invocations/invocation-lifecycle';
import { replay } from '../../src/domain/decider';
import type { InvocationState } from '../../src/invocations/invocation.state';
import { at, attemptRecord, PRICE_A, PUBLICATION, USAGE_A } from './invocation.fixtures';

/** Decides `steps` in order on `state`, as one append of the repository does; the events and the state after. */
function decideAll(state: InvocationState, steps: readonly LifecycleStep[]): { events: InvocationEvent[]; state: InvocationState } {
  const events: InvocationEvent[] = [];
  for (const step of steps) {
    const command = typeof step === 'function' ? step(state) : step;
    if (command === undefined) continue;
    const decided = invocationDecider.decide(command, state);
    events.push(...decided);
    state = replay(invocationDecider, decided, state);
  }
  return { events, state };
}

const FACTS = { invocationId: 'inv-1', operationId: 'gateway.anthropic-messages', organizationId: 'org-1', publication: PUBLICATION };

function dispatchedCall(): InvocationState {
  const opened = decideAll(invocationDecider.initialState(), [estimate(FACTS, at(0))]).state;
  return decideAll(opened, reserveAndDispatch(at(10))).state;
}

describe('one lifecycle (src/invocations/invocation-lifecycle.ts): the commands every transport writes', () => {
  it('STATE-PFM-LLM-001 transitions 3 and 4: reserveAndDispatch reserves, then dispatches, in one append', () => {
    const opened = decideAll(invocationDecider.initialState(), [estimate(FACTS, at(0))]).state;
    const { events, state } = decideAll(opened, reserveAndDispatch(at(10)));
    expect(events.map((event) => event.type)).toEqual(['InvocationReserved', 'InvocationDispatched']);
    expect(state.status).toBe('dispatched');
  });

  it('STATE-PFM-LLM-001 transitions 5, 7, 9: one attempt without usage is recorded, completed, marked pending and settled at its hold', () => {
    const attempt = attemptRecord(1, 0, { usage: undefined, priceCredits: 0 });
    const { events, state } = decideAll(dispatchedCall(), closeAndSettle(oneAttemptEnd(0, undefined), at(5_000), attempt));
    expect(events.map((event) => event.type)).toEqual(['AttemptRecorded', 'InvocationCompleted', 'InvocationPending', 'InvocationSettled']);
    expect(state.settlement).toMatchObject({ transition: 9, chargeCredits: PUBLICATION.creditHold });
  });

  it('STATE-PFM-LLM-001 transitions 6, 10: a failed attempt that reported usage is failed and charged that usage, not marked pending', () => {
    const attempt = attemptRecord(1, 0, { classification: 'server_error', httpStatus: 500 });
    const { events, state } = decideAll(dispatchedCall(), closeAndSettle(oneAttemptEnd(PRICE_A, USAGE_A, 'server_error'), at(5_000), attempt));
    expect(events.map((event) => event.type)).toEqual(['AttemptRecorded', 'InvocationFailed', 'InvocationSettled']);
    expect(events[1]!.data).toMatchObject({ fault: 'server_error', spentCredits: PRICE_A, turnsUsed: 1, attemptCount: 1, usageReported: true });
    expect(state.settlement?.chargeCredits).toBe(PRICE_A);
  });

  it('oneAttemptEnd: the totals keep the counts only; the served mode stays on the attempt', () => {
    const end = oneAttemptEnd(PRICE_A, { ...USAGE_A, serviceTier: 'priority', speed: 'fast', inferenceGeo: 'us' });
    expect(end.usageTotals).toEqual(USAGE_A);
    expect(end.outcome).toBe('completed');
  });

  it('settlement: a pending date the closer withholds (a live result, for the sweep) marks nothing pending', () => {
    const completed = decideAll(dispatchedCall(), [
      { type: 'RecordAttempt', data: attemptRecord(1, 0, { usage: undefined, priceCredits: 0 }) },
      { type: 'CompleteInvocation', data: { ...oneAttemptEnd(0, undefined), outcome: 'completed', completedAt: at(5_000) } },
    ]).state;
    const [pendingStep] = settlement({ by: 'runtime', settledAt: at(5_100) }, () => undefined);
    expect(typeof pendingStep === 'function' ? pendingStep(completed) : pendingStep).toBeUndefined();
    const [dated] = settlement({ by: 'runtime', settledAt: at(5_100) }, (state) => state.lastTransitionAt);
    expect(typeof dated === 'function' ? dated(completed) : dated).toEqual({ type: 'MarkInvocationPending', data: { pendingAt: at(5_000) } });
  });

  it('placeHold and settleHold: a gateway call’s key and model go on the hold; the settled charge (0 when unsettled) on its release', () => {
    const gateway = { gatewayKey: { keyId: 'key-1', period: '' }, gatewayCall: { model: 'claude-x', maxTokens: 10 } };
    expect(placeHold('inv-1', 500, at(1), gateway)).toEqual({ type: 'PlaceHold', data: { invocationId: 'inv-1', credits: 500, placedAt: at(1), ...gateway } });
    expect(settleHold('inv-1', {}, at(2), 'sweep')).toEqual({ type: 'SettleHold', data: { invocationId: 'inv-1', chargeCredits: 0, settledAt: at(2), by: 'sweep' } });
  });
});
