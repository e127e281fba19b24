import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountEvent } from '../../src/accounts/account.events';
import { balanceOf } from '../../src/accounts/account.state';
import { SweepStaleInvocationsCommand, type SweepReport } from '../../src/invocations/sweep-stale-invocations.command';
import { SystemClock, type Clock } from '../../src/runtime';
import { startLedgerApp } from '../support/ledger-app';

// Each case starts a child process that compiles the sources and runs up to the crash, then restarts
// on its log: on a shared, loaded machine that takes longer than jest's default.
jest.setTimeout(120_000);
import { crashFeature } from './fixtures/crash-feature';

const HOOK = join(__dirname, '..', '..', 'tools', 'ts-require-hook.js');
const CHILD = join(__dirname, 'fixtures', 'crash-at-boundary.fixture.ts');
const HOLD = 1_000;
/** Well past any request's staleness threshold and conversation deadline. */
const A_DAY_MS = 86_400_000;
class TomorrowClock extends SystemClock {
  override now(): number {
    return super.now() + A_DAY_MS;
  }
}
const tomorrow: Clock = new TomorrowClock();

/** Runs the child until it kills itself after the boundary; resolves with what it printed. */
function crashChild(directory: string, crashAfter: string, model: string): Promise<{ signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-r', HOOK, CHILD, directory, crashAfter, model], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (_code, signal) => resolve({ signal, output }));
  });
}

/**
 * Each row: the event after whose acknowledged commit the process dies, the model it ran, and what
 * the sweep must then do (docs/lifecycle.md): the transition it settles with and the charge, or
 * nothing when the commit settled the invocation and its hold together.
 *
 * A run writes four kinds of commit: the estimate; the hold with the reservation and the dispatch
 * (docs/gateway.md "One commit for each side of the call"); each attempt; the result (completed or
 * failed, pending) with its settlement and the hold's. A kill after any event of a commit lands after
 * all of it, so each row names one commit, and a run leaves no reserved, no unsettled result and no
 * hold open behind a settlement. The sweep's transitions 8, 9, 10 and 13 are proven on such
 * leftovers in sweep-leftovers.spec.ts, and its release of a hold left open behind a settlement (appends
 * in a row, on EventStoreDB) in recovery.spec.ts.
 */
const BOUNDARIES: { after: string; model: 'measured' | 'unmeasured' | 'failing'; transition?: number; charge: 'zero' | 'estimate' | 'spent' }[] = [
  { after: 'InvocationEstimated', model: 'measured', transition: 12, charge: 'zero' },
  { after: 'HoldPlaced', model: 'measured', transition: 14, charge: 'estimate' },
  { after: 'AttemptRecorded', model: 'measured', transition: 14, charge: 'estimate' },
  { after: 'InvocationCompleted', model: 'measured', charge: 'spent' },
  { after: 'InvocationPending', model: 'unmeasured', charge: 'estimate' },
  { after: 'InvocationFailed', model: 'failing', charge: 'spent' },
];

describe('crash recovery: a process killed between any two transitions leaves nothing the sweep cannot settle (docs/lifecycle.md transitions 8–14, docs/http.md)', () => {
  const directories: string[] = [];
  afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

  it.each(BOUNDARIES)('killed after $after ($model): it is settled exactly once, its hold and slot freed, by the sweep when the commit left them', async ({ after, model, transition, charge }) => {
    const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-crash-'));
    directories.push(directory);
    const { signal, output } = await crashChild(directory, after, model);
    expect(output).toContain(`crashing after ${after}`);
    expect(signal).toBe('SIGKILL');

    // Recovery off: this proves the manual sweep (recovery.spec.ts and the SIGKILL loop prove recovery).
    const ledger = await startLedgerApp({ directory, keepDirectory: true, clock: tomorrow, features: [crashFeature(model)], env: { LEDGER_RECOVERY_INTERVAL_MS: '0' } });
    try {
      const report: SweepReport = await ledger.commandBus.execute(new SweepStaleInvocationsCommand(60_000));
      const events = await ledger.store.readAll();
      const invocationStreams = new Set(events.filter((e) => e.streamName.startsWith('invocation-')).map((e) => e.streamName));
      expect(invocationStreams.size).toBe(1);
      const [stream] = invocationStreams;
      const invocationEvents = events.filter((e) => e.streamName === stream);
      const settledEvents = invocationEvents.filter((e) => e.type === 'InvocationSettled');
      expect(settledEvents).toHaveLength(1);
      const settlement = settledEvents[0]!.data as { transition: number; chargeCredits: number };
      const spent = invocationEvents
        .filter((e) => e.type === 'AttemptRecorded')
        .reduce((sum, e) => sum + (e.data as { priceCredits: number }).priceCredits, 0);
      const expectedCharge = charge === 'zero' ? 0 : charge === 'estimate' ? HOLD : spent;
      expect(settlement.chargeCredits).toBe(expectedCharge);
      if (transition === undefined) {
        // Settled with its hold in the commit it died after: nothing is left for the sweep.
        expect(report).toMatchObject({ settled: [], releasedHolds: [] });
      } else {
        expect(report.settled).toEqual([expect.objectContaining({ transition, chargeCredits: expectedCharge })]);
        expect(settlement.transition).toBe(transition);
      }

      let account = accountDecider.initialState();
      for (const event of events.filter((e) => e.streamName === 'account-acme')) {
        account = accountDecider.evolve(account, { type: event.type, data: event.data } as AccountEvent);
      }
      const balance = balanceOf(account);
      expect(balance).toMatchObject({ held: 0, running: 0, charged: expectedCharge });
      expect(balance.available).toBe(balance.granted + balance.adjustments - balance.charged);

      const again: SweepReport = await ledger.commandBus.execute(new SweepStaleInvocationsCommand(60_000));
      expect(again).toMatchObject({ settled: [], releasedHolds: [] });
    } finally {
      await ledger.close();
    }
  });
});
