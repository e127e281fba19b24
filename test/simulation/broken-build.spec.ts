import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { RECOVERY_DEADLINE_MARGIN_MS } from '../../src/invocations/invocation-ownership';
import { runSimulation, type AppendTamper } from '../../src/simulation/simulator';

// A scenario with its gateway calls takes seconds alone; the bound leaves room for the full suite on a loaded machine.
const TIMEOUT_MS = 180_000;

/** A broken settlement: every hold that charges something is settled twice, so the account charges twice. */
const chargeTwice: AppendTamper = (_stream, events) =>
  events.flatMap((event): NewEvent[] => {
    const charged = (event.data as { chargedCredits?: number }).chargedCredits ?? 0;
    return event.type === 'HoldSettled' && charged > 0 ? [event, { ...event, id: randomUUID() }] : [event];
  });

/** A broken settlement rule: a completed conversation is charged more than its attempts cost (docs/lifecycle.md transition 8). */
const overchargeCompleted: AppendTamper = (_stream, events) =>
  events.map((event) => {
    const data = event.data as { transition?: number; chargeCredits?: number };
    return event.type === 'InvocationSettled' && data.transition === 8 ? { ...event, data: { ...data, chargeCredits: (data.chargeCredits ?? 0) * 2 + 1 } } : event;
  });

/**
 * A broken recovery (issue 31, finding 2): what it settles past a live call's deadline it settles half
 * a margin sooner, inside the time its relay still has, saying it passed a deadline a moment before.
 */
const recoverInsideTheMargin: AppendTamper = (_stream, events) =>
  events.map((event) => {
    const data = event.data as { settledAt?: string; recovery?: { because: string; deadlineAt: string } };
    if (event.type !== 'InvocationSettled' || data.recovery?.because !== 'deadline_passed') return event;
    const settledAtMs = Date.parse(data.recovery.deadlineAt) - RECOVERY_DEADLINE_MARGIN_MS / 2;
    return { ...event, data: { ...data, settledAt: new Date(settledAtMs).toISOString(), recovery: { because: 'deadline_passed', deadlineAt: new Date(settledAtMs - 1).toISOString(), pastByMs: 1 } } };
  });

describe('issue 8: a deliberately broken build fails the simulation with its seed and the history that shows the bug', () => {
  it(
    'catches a settlement that charges an account twice, and prints the hold settled twice',
    async () => {
      const result = await runSimulation({ seed: 3, invocations: 30, tamper: chargeTwice });
      expect(result.violation?.invariant).toBe('account.hold-settled-once');
      expect(result.report).toContain('seed 3; replay with: npm run simulate -- --seed 3 --invocations 30');
      expect(result.report).toMatch(/HoldSettled .*"chargedCredits":[1-9].*\n.*HoldSettled .*"chargedCredits":[1-9]/);
      // Only the streams involved: the invocation and its account.
      expect(new Set(result.violation?.streams.map((stream) => stream.split('-')[0]))).toEqual(new Set(['account', 'invocation']));
    },
    TIMEOUT_MS,
  );

  it(
    'catches a build whose recovery never runs: what its crashes left is still in flight after the final idle (issue 24)',
    async () => {
      const off = { intervalMs: 0, staleAfterMs: 60_000 };
      const result = await runSimulation({ seed: 5, invocations: 60, recovery: { node: off, second: off } });
      expect(result.violation?.invariant).toBe('recovery.leaves-nothing-in-flight');
      expect(result.report).toContain('no sweep run');
    },
    TIMEOUT_MS,
  );

  it(
    'issue 31 finding 2: catches a recovery that settles a call its live instance owns before the call\'s deadline',
    async () => {
      const result = await runSimulation({ seed: 1, invocations: 60, tamper: recoverInsideTheMargin });
      expect(result.violation?.invariant).toBe('recovery.never-touches-a-live-lease');
      expect(result.report).toContain('before its deadline');
    },
    TIMEOUT_MS,
  );

  it(
    'catches a settlement whose charge is not the one docs/lifecycle.md gives its path',
    async () => {
      const result = await runSimulation({ seed: 3, invocations: 30, tamper: overchargeCompleted });
      expect(result.violation?.invariant).toBe('settlement.charge-per-spec');
      expect(result.report).toContain('transition 8 charged');
      expect(result.report).toContain('InvocationCompleted');
    },
    TIMEOUT_MS,
  );
});
