import { replay } from '../../src/domain/decider';
import { IllegalTransitionError } from '../../src/domain/domain.errors';
import type { InvocationCommand } from '../../src/invocations/invocation.commands';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { TRANSITIONS } from '../../src/invocations/invocation.events';
import { deciderSpec } from '../support/decider-spec';
import {
  attemptRecord,
  complete,
  estimate,
  fail,
  HISTORY,
  HistoryName,
  markPending,
  NO_USAGE,
  recordAttempt,
  refuse,
  reserve,
  dispatch,
  settle,
  sweep,
} from './invocation.fixtures';

const spec = deciderSpec(invocationDecider);

const NOTHING_SENT = { turnsUsed: 0, attemptCount: 0, spentCredits: 0, usageTotals: NO_USAGE, usageReported: false };

/** One well-formed instance of every command; only the state decides whether it may happen. */
const COMMANDS: Record<string, InvocationCommand> = {
  estimate: estimate(),
  refuse: refuse({ reason: 'ai_disabled', figures: { aiEnabled: false } }),
  reserve: reserve(),
  dispatch: dispatch(),
  recordAttempt: recordAttempt(attemptRecord(1, 0)),
  complete: complete(NOTHING_SENT),
  fail: fail(NOTHING_SENT),
  markPending: markPending(),
  'settle by runtime': settle('runtime'),
  'settle by exception': settle('exception'),
  // Ten minutes on, past any threshold and conversation deadline: only the state can stop it.
  'settle by sweep': sweep(600_000, 60_000),
};

/**
 * docs/lifecycle.md, read as: in this state, this command makes a transition of the table. Recording an attempt
 * is not a transition but is allowed only while dispatched. Once a result is recorded (completed,
 * pending, failed) the runtime, its exception path and the sweep all close it at the same charge.
 */
const ALLOWED: Record<HistoryName, readonly string[]> = {
  initial: ['estimate'],
  estimated: ['refuse', 'reserve', 'settle by sweep'],
  refused: [],
  reserved: ['dispatch', 'settle by sweep'],
  dispatched: ['recordAttempt', 'complete', 'fail', 'settle by exception', 'settle by sweep'],
  completed: ['settle by runtime', 'settle by exception', 'settle by sweep'],
  // Without usage a completed result must pass through pending (transition 7) before settling.
  completedUnmeasured: ['markPending'],
  pending: ['settle by runtime', 'settle by exception', 'settle by sweep'],
  failed: ['settle by runtime', 'settle by exception', 'settle by sweep'],
  settled: [],
};

const cases = (Object.keys(HISTORY) as HistoryName[]).flatMap((state) =>
  Object.keys(COMMANDS).map((command) => [state, command, ALLOWED[state].includes(command)] as const),
);

describe('STATE-PFM-LLM-001 no transition outside the table: every other command is refused and writes nothing', () => {
  it.each(cases.filter(([, , allowed]) => !allowed))('in %s, %s throws IllegalTransitionError and emits nothing', (state, name) => {
    const history = HISTORY[state];
    const status = replay(invocationDecider, history).status;
    spec.given(history).when(COMMANDS[name]!).thenThrows(IllegalTransitionError, {
      code: 'illegal_transition',
      state: status,
      command: COMMANDS[name]!.type,
    });
  });

  it.each(cases.filter(([, , allowed]) => allowed))('in %s, %s moves along a row of the table', (state, name) => {
    const history = HISTORY[state];
    const before = replay(invocationDecider, history);
    const events = invocationDecider.decide(COMMANDS[name]!, before);
    expect(events).toHaveLength(1);
    const after = replay(invocationDecider, events, before);
    if (name === 'estimate') expect(after.status).toBe('estimated');
    else if (name === 'recordAttempt') expect(after.status).toBe(before.status);
    else expect(Object.values(TRANSITIONS)).toContainEqual({ from: before.status, to: after.status });
  });

  it('covers every state and every command of the lifecycle', () => {
    expect(cases).toHaveLength(10 * 11);
    expect(cases.filter(([, , allowed]) => allowed)).toHaveLength(21);
  });
});

describe('STATE-PFM-LLM-001 settled and refused are final (docs/http.md: settling twice is refused)', () => {
  it('refuses a second settlement by the runtime', () => {
    spec.given(HISTORY.settled).when(settle('runtime')).thenThrows(IllegalTransitionError, { state: 'settled', command: 'SettleInvocation' });
  });

  it('refuses a second sweep, so two sweeps racing settle a request once', () => {
    spec.given(HISTORY.settled).when(sweep(600_000, 0)).thenThrows(IllegalTransitionError, { state: 'settled' });
  });

  it('refuses to reserve a refused request', () => {
    spec.given(HISTORY.refused).when(reserve()).thenThrows(IllegalTransitionError, { state: 'refused', command: 'ReserveInvocation' });
  });

  it('refuses to estimate an invocation twice: the handler answers a repeat from the existing stream', () => {
    spec.given(HISTORY.estimated).when(estimate()).thenThrows(IllegalTransitionError, { state: 'estimated', command: 'EstimateInvocation' });
  });
});
