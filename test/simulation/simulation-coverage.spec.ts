import { FAULT_CLASSES } from '../../src/runtime';
import { CRASH_BOUNDARIES } from '../../src/simulation/scenario';
import { runSimulation, type SimulationResult } from '../../src/simulation/simulator';

// One long seeded run of 400 invocations with a crash at every boundary: minutes on a loaded machine.
const TIMEOUT_MS = 300_000;

describe('issue 8: one long scenario reaches every fault the simulator is there to inject (STATE-PFM-LLM-001, docs/rules.md)', () => {
  let result: SimulationResult;

  beforeAll(async () => {
    result = await runSimulation({ seed: 2, invocations: 400, crashAtEveryBoundary: true });
    if (result.report !== undefined) throw new Error(result.report);
  }, TIMEOUT_MS);

  it('crashes at every boundary between lifecycle transitions, before and after the write, restarts on the same log, and loses nothing', () => {
    expect(result.violation).toBeUndefined();
    const missed = CRASH_BOUNDARIES.flatMap((type) => (['before', 'after'] as const).map((when) => `crash.${when}.${type}`)).filter(
      (name) => result.tally.get(name) === 0,
    );
    expect(missed).toEqual([]);
    expect(result.tally.get('restart.after-crash')).toBeGreaterThanOrEqual(CRASH_BOUNDARIES.length * 2);
  });

  it('meets a provider fault of every docs/rules.md class, a retry-after past the deadline and usage on a failed attempt', () => {
    expect(FAULT_CLASSES.filter((fault) => result.tally.get(`provider.fault.${fault}`) === 0)).toEqual([]);
    expect(result.tally.get('provider.retry-after-beyond-deadline')).toBeGreaterThan(0);
    expect(result.tally.get('provider.usage-on-failed-attempt')).toBeGreaterThan(0);
    expect(result.tally.get('provider.latency-past-attempt-timeout')).toBeGreaterThan(0);
  });

  it('runs slow and throwing tools and judges, cancellations, repeated commands and concurrent sweeps from two processes', () => {
    for (const name of [
      'tool.throw',
      'tool.slow-honouring-signal',
      'tool.slow-ignoring-signal',
      'judge.throw',
      'judge.slow-then-fair',
      'invocation.cancelled-by-caller',
      'duplicate.same-process',
      'duplicate.by-second-process',
      'duplicate.key-for-another-operation',
      'duplicate.grant',
      'sweep.concurrent',
      'sweep.second-process',
      'publication.mid-flight',
    ]) {
      expect({ name, count: result.tally.get(name) }).toEqual({ name, count: expect.any(Number) });
      expect(result.tally.get(name)).toBeGreaterThan(0);
    }
  });

  it('recovers on both processes, on their own schedules, and leaves nothing for the final sweep (issue 24)', () => {
    expect(result.tally.get('recovery.node.passes')).toBeGreaterThan(0);
    expect(result.tally.get('recovery.second.passes')).toBeGreaterThan(0);
    // What crashes left in flight was finished by recovery, with no sweep run for it.
    expect(result.tally.total('recovery.settled.')).toBeGreaterThan(0);
  });

  it('runs conversations past the 64 retained attempts (docs/rules.md rule 07), whose charge must still be exact', () => {
    expect(result.tally.get('observed.attempts-truncated')).toBeGreaterThan(0);
  });

  it('makes appends really race (genuine conflicts between two processes) beside the injected conflicts and lost acknowledgements', () => {
    expect(result.tally.get('observed.genuine-conflict')).toBeGreaterThan(0);
    expect(result.tally.get('observed.overlapping-append')).toBeGreaterThan(0);
    expect(result.tally.get('store.conflict')).toBeGreaterThan(0);
    expect(result.tally.get('store.lost-ack')).toBeGreaterThan(0);
  });
});
