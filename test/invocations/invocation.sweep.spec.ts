import { ValidationError, IllegalTransitionError } from '../../src/domain/domain.errors';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import type { SettleInvocation } from '../../src/invocations/invocation.commands';
import { isStale } from '../../src/invocations/invocation.state';
import { replay } from '../../src/domain/decider';
import { deciderSpec } from '../support/decider-spec';
import { at, attemptRecord, attemptRecorded, HISTORY, PRICE_A, settled, sweep, T0_MS } from './invocation.fixtures';

const spec = deciderSpec(invocationDecider);

describe('docs/lifecycle.md the sweep settles only stale requests, so it is safe beside live traffic', () => {
  it('leaves a request whose last transition is within the threshold, writing nothing', () => {
    spec.given(HISTORY.estimated).when(sweep(30_000, 60_000)).thenNothing();
  });

  it('settles it once the threshold has passed since its last transition', () => {
    spec.given(HISTORY.estimated).when(sweep(60_001, 60_000)).then([settled(12, 0, 0, 'sweep', 60_001)]);
  });

  it('counts a recorded attempt as activity: a conversation still talking to its provider is not stale', () => {
    const late = attemptRecord(1, 0, { startedAtMs: T0_MS + 59_000, durationMs: 900 });
    // Dispatched at +20 ms; the attempt ended at +59.9 s; the conversation deadline is +60.02 s.
    spec.given([...HISTORY.dispatched, attemptRecorded(late)]).when(sweep(100_000, 60_000)).thenNothing();
    spec.given([...HISTORY.dispatched, attemptRecorded(late)]).when(sweep(120_000, 60_000)).then([settled(14, 500, 500, 'sweep', 120_000)]);
  });

  it('never cuts short a dispatched conversation inside its own time budget, whatever the threshold', () => {
    // totalTimeMs is 60 s from dispatch at +20 ms.
    spec.given(HISTORY.dispatched).when(sweep(59_000, 0)).thenNothing();
    spec.given(HISTORY.dispatched).when(sweep(60_020, 0)).then([settled(14, 500, 500, 'sweep', 60_020)]);
  });

  it('settles a result the runtime recorded but never settled (a crash after completion) at its spend', () => {
    spec.given(HISTORY.completed).when(sweep(70_000, 60_000)).then([settled(8, PRICE_A, 500, 'sweep', 70_000)]);
  });

  it('settles a failed result left unsettled at its spend', () => {
    spec.given(HISTORY.failed).when(sweep(70_000, 60_000)).then([settled(10, PRICE_A, 500, 'sweep', 70_000)]);
  });

  it('refuses to settle an unmeasured completed result before it is marked pending (transition 7 first)', () => {
    spec
      .given(HISTORY.completedUnmeasured)
      .when(sweep(70_000, 60_000))
      .thenThrows(IllegalTransitionError, (error) => expect(error.guard).toContain('transition 7'));
  });

  it('requires its threshold', () => {
    const command = sweep(70_000, 60_000);
    spec
      .given(HISTORY.estimated)
      .when({ ...command, data: { by: 'sweep', settledAt: at(70_000) } } as never)
      .thenThrows(ValidationError, { field: 'olderThanMs' });
  });

  it('exposes the same staleness test to the sweep handler for selecting candidates', () => {
    const state = replay(invocationDecider, HISTORY.reserved);
    expect(isStale(state, T0_MS + 60_010, 60_000)).toBe(false);
    expect(isStale(state, T0_MS + 60_011, 60_000)).toBe(true);
  });
});

describe('STATE-PFM-LLM-001 transitions 8–14: recovery closes stale requests exactly as the sweep does, and is recorded as recovery (issue 24)', () => {
  const recover = (settledAtMs: number, olderThanMs: number): SettleInvocation => ({
    type: 'SettleInvocation',
    data: { by: 'recovery', settledAt: at(settledAtMs), olderThanMs },
  });

  it.each([
    ['estimated', 12, 0, 0],
    ['reserved', 13, 0, 500],
    ['dispatched', 14, 500, 500],
    ['completed', 8, PRICE_A, 500],
    ['pending', 9, 500, 500],
    ['failed', 10, PRICE_A, 500],
  ] as const)('settles a stale %s request with transition %i, settledBy recovery', (history, transition, charge, held) => {
    spec.given(HISTORY[history]).when(recover(70_000, 60_000)).then([settled(transition, charge, held, 'recovery', 70_000)]);
  });

  it('leaves a request that is not stale, and a dispatched one inside its budget, writing nothing', () => {
    spec.given(HISTORY.estimated).when(recover(30_000, 60_000)).thenNothing();
    spec.given(HISTORY.dispatched).when(recover(59_000, 1_000)).thenNothing();
  });

  it('is refused a second settlement: a request the sweep, another instance or its run already settled', () => {
    spec.given(HISTORY.settled).when(recover(70_000, 60_000)).thenThrows(IllegalTransitionError, { state: 'settled' });
    spec.given([...HISTORY.estimated, settled(12, 0, 0, 'sweep', 61_000)]).when(recover(70_000, 60_000)).thenThrows(IllegalTransitionError, { state: 'settled' });
  });

  it('requires its threshold, like the sweep', () => {
    spec
      .given(HISTORY.estimated)
      .when({ type: 'SettleInvocation', data: { by: 'recovery', settledAt: at(70_000) } } as never)
      .thenThrows(ValidationError, { field: 'olderThanMs' });
  });
});
