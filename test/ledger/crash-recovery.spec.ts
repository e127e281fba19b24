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
 * Each row: the event after whose acknowledged append the process dies, the model it ran, and what
 * the sweep must then do (docs/lifecycle.md): the transition it settles with and the charge, or only release the
 * hold of an invocation that was already settled.
 *
 * Reserved and dispatched are appended together, and so are a result (completed or failed, pending)
 * and its settlement: a kill after either lands after both. So a run leaves no reserved and no
 * unsettled result behind; the sweep's transitions 8, 9, 10 and 13 are proven on such leftovers in
 * sweep-leftovers.spec.ts.
 */
const BOUNDARIES: { after: string; model: 'measured' | 'unmeasured' | 'failing'; transition?: number; charge: 'zero' | 'estimate' | 'spent' }[] = [
  { after: 'InvocationEstimated', model: 'measured', transition: 12, charge: 'zero' },
  { after: 'HoldPlaced', model: 'measured', transition: 12, charge: 'zero' },
  { after: 'InvocationReserved', model: 'measured', transition: 14, charge: 'estimate' },
  { after: 'InvocationDispatched', model: 'measured', transition: 14, charge: 'estimate' },
  { after: 'AttemptRecorded', model: 'measured', transition: 14, charge: 'estimate' },
  { after: 'InvocationCompleted', model: 'measured', charge: 'spent' },
  { after: 'InvocationCompleted', model: 'unmeasured', charge: 'estimate' },
  { after: 'InvocationPending', model: 'unmeasured', charge: 'estimate' },
  { after: 'InvocationFailed', model: 'failing', charge: 'spent' },
  { after: 'InvocationSettled', model: 'measured', charge: 'spent' },
];

describe('crash recovery: a process killed between any two transitions leaves nothing the sweep cannot settle (docs/lifecycle.md transitions 8–14, docs/http.md)', () => {
  const directories: string[] = [];
  afterAll(() => directories.forEach((directory) => rmSync(directory, { recursive: true, force: true })));

  it.each(BOUNDARIES)('killed after $after ($model): the sweep settles it exactly once and frees its hold and slot', async ({ after, model, transition, charge }) => {
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
        expect(report.settled).toEqual([]);
        expect(report.releasedHolds).toEqual([expect.objectContaining({ chargeCredits: expectedCharge })]);
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
