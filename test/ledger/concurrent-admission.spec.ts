import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountEvent } from '../../src/accounts/account.events';
import { balanceOf } from '../../src/accounts/account.state';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { scriptedToolUse, type ScriptedStep } from '../../src/runtime';
import { LedgerTestApp, publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

const HOLD = 100;
const REQUESTS = 200;
const MAX_RUNNING = 10;
/** Requests sent while every slot is taken: each is refused `no_running_slot`. */
const OVERFLOW = 5;
/**
 * Event-loop turns the model takes to answer: enough that more than MAX_RUNNING requests would be
 * running at once (requests arrive one turn apart), whatever the turns the accounting itself takes.
 */
const MODEL_TURNS = 15;

/**
 * Holds the first models at a gate: while MAX_RUNNING requests wait there, every slot is taken, so
 * the requests sent then are refused `no_running_slot` whatever the disk's speed (the test once
 * counted on the turns an fsync took to fill the slots, and missed them on a fast disk).
 */
const gate = { waiting: 0, open: (): void => undefined, opened: Promise.resolve() };

function closeGate(): void {
  gate.waiting = 0;
  gate.opened = new Promise((resolve) => (gate.open = () => resolve()));
}

/** A model that waits at the gate, then takes a few event-loop turns to answer, so requests overlap for real. */
function overlapping(): ScriptedStep[] {
  return [
    async () => {
      gate.waiting += 1;
      await gate.opened;
      for (let i = 0; i < MODEL_TURNS; i++) await new Promise((resolve) => setImmediate(resolve));
      // 60 input + 4 output tokens at 1 credit per token: each settles for 64 of its 100 held.
      return scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(60, 4) });
    },
  ];
}

describe('concurrent admissions for one organization never over-commit credits or slots (docs/lifecycle.md)', () => {
  let ledger: LedgerTestApp;

  beforeEach(async () => {
    closeGate();
    ledger = await startLedgerApp({ features: [scriptedFeature('test.concurrent', overlapping)] });
    await seed(ledger, {
      operationId: 'test.concurrent',
      organizationId: 'acme',
      credits: 50 * HOLD,
      maxRunning: MAX_RUNNING,
      publication: publication({
        creditHold: HOLD,
        prices: { inputPerMTok: 1_000_000, outputPerMTok: 1_000_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 },
      }),
    });
  });

  afterEach(() => ledger.close());

  it('keeps holds within what was available and running within maxRunning at every step, and ends every request settled or refused', async () => {
    const run = (i: number) => ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.concurrent', organizationId: 'acme', input: { question: `q${i}` } }));
    const pending: Promise<InvocationSummary>[] = [];
    // Every slot taken: MAX_RUNNING requests wait at the gate, then a few more are refused for a slot.
    for (let i = 0; i < MAX_RUNNING; i++) pending.push(run(i));
    while (gate.waiting < MAX_RUNNING) await new Promise((resolve) => setImmediate(resolve));
    for (let i = MAX_RUNNING; i < MAX_RUNNING + OVERFLOW; i++) pending.push(run(i));
    await Promise.all(pending.slice(MAX_RUNNING));
    gate.open();
    // Then requests arrive one event-loop turn apart, in waves of MAX_RUNNING; each wave waits for
    // the first of the one before to end, so early ones settle while later ones are admitted until
    // the credits run out.
    for (let i = MAX_RUNNING + OVERFLOW; i < REQUESTS; i++) {
      if (i % MAX_RUNNING === 0) await pending[i - MAX_RUNNING];
      pending.push(run(i));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const results = await Promise.all(pending);

    for (const result of results) {
      expect(['settled', 'refused']).toContain(result.state);
      if (result.state === 'refused') expect(['no_running_slot', 'insufficient_credits']).toContain(result.refusalReason);
    }
    const settled = results.filter((result) => result.state === 'settled');
    const reasons = new Set(results.map((result) => result.refusalReason).filter(Boolean));
    expect(settled.length).toBeGreaterThan(MAX_RUNNING);
    expect(reasons).toEqual(new Set(['no_running_slot', 'insufficient_credits']));

    // Replay the account stream and check the invariants after every single event.
    let state = accountDecider.initialState();
    let peakRunning = 0;
    for (const event of await ledger.store.readStream('account-acme')) {
      state = accountDecider.evolve(state, { type: event.type, data: event.data } as AccountEvent);
      const balance = balanceOf(state);
      expect(balance.held).toBeLessThanOrEqual(balance.granted + balance.adjustments - balance.charged);
      expect(balance.running).toBeLessThanOrEqual(MAX_RUNNING);
      peakRunning = Math.max(peakRunning, balance.running);
    }
    const final = balanceOf(state);
    expect(peakRunning).toBe(MAX_RUNNING);
    expect(final).toMatchObject({ held: 0, running: 0, charged: settled.length * 64 });
    expect(final.available).toBe(final.granted + final.adjustments - final.charged);
  });
});
