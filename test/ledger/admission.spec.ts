import { AdjustCreditsCommand, ChangeOrganizationSettingsCommand } from '../../src/accounts/account-commands';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { UnknownOperationError, UnknownOrganizationError } from '../../src/invocations/invocation-errors';
import { InvalidFeatureInputError } from '../../src/features/operation-feature';
import { scriptedToolUse } from '../../src/runtime';
import { LedgerTestApp, publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

const answersAtOnce = () => [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(100, 10) })];

describe('admission refusals are terminal and recorded with their figures (docs/lifecycle.md, STATE-PFM-LLM-001 transitions 1 and 2)', () => {
  let ledger: LedgerTestApp;
  const run = (organizationId = 'acme', operationId = 'test.admit', input: unknown = { question: 'q' }) =>
    ledger.commandBus.execute(new RunOperationCommand({ operationId, organizationId, input }));

  beforeEach(async () => {
    ledger = await startLedgerApp({ features: [scriptedFeature('test.admit', answersAtOnce), scriptedFeature('test.unpublished', answersAtOnce)] });
    await seed(ledger, { operationId: 'test.admit', organizationId: 'acme', credits: 1_000, publication: publication({ creditHold: 500 }) });
  });

  afterEach(() => ledger.close());

  async function refusalOf(invocationId: string) {
    const events = await ledger.store.readStream(`invocation-${invocationId}`);
    expect(events.map((event) => event.type)).toEqual(['InvocationEstimated', 'InvocationRefused']);
    return events[1]!.data as { reason: string; transition: number; figures: unknown };
  }

  it('refuses ai_disabled when the organization switched AI off (transition 1)', async () => {
    await ledger.commandBus.execute(new ChangeOrganizationSettingsCommand('acme', { aiEnabled: false }));
    const result = await run();
    expect(result).toMatchObject({ state: 'refused', refusalReason: 'ai_disabled', charge: 0 });
    expect(await refusalOf(result.invocationId)).toMatchObject({ reason: 'ai_disabled', transition: 1 });
  });

  it('refuses operation_disabled when the publication in force switched the operation off (transition 1)', async () => {
    await ledger.commandBus.execute(new PublishOperationCommand('test.admit', publication({ creditHold: 500, enabled: false })));
    const result = await run();
    expect(result).toMatchObject({ state: 'refused', refusalReason: 'operation_disabled' });
    expect(await refusalOf(result.invocationId)).toMatchObject({ transition: 1, figures: { version: 2, enabled: false } });
  });

  it('refuses unknown_operation when a registered feature has never been published (transition 1)', async () => {
    const result = await run('acme', 'test.unpublished');
    expect(result).toMatchObject({ state: 'refused', refusalReason: 'unknown_operation', estimate: 0 });
  });

  it('refuses insufficient_credits with the figures "available < hold" (transition 2)', async () => {
    await ledger.commandBus.execute(new AdjustCreditsCommand('acme', -880, 'correction', 'adj-1'));
    const result = await run();
    expect(result).toMatchObject({ state: 'refused', refusalReason: 'insufficient_credits' });
    expect(await refusalOf(result.invocationId)).toMatchObject({ transition: 2, figures: { available: 120, creditHold: 500 } });
  });

  it('admits a request whose hold is exactly what is available, because only strictly less is refused', async () => {
    await ledger.commandBus.execute(new AdjustCreditsCommand('acme', -500, 'correction', 'adj-2'));
    expect(await run()).toMatchObject({ state: 'settled', outcome: 'completed' });
  });

  it('decides a refusal only from the account stream as read, never from a cache another writer made stale', async () => {
    await ledger.commandBus.execute(new AdjustCreditsCommand('acme', -900, 'correction', 'adj-3'));
    expect(await run()).toMatchObject({ state: 'refused', refusalReason: 'insufficient_credits' });
    // Another process (here: a second repository on the same log) grants; this one's cache still says 100.
    await new AggregateRepository(ledger.store).handle(accountStreamName('acme'), accountDecider, {
      type: 'GrantCredits',
      data: { credits: 1_000, reason: 'top-up', idempotencyKey: 'grant-elsewhere', grantedAt: new Date().toISOString() },
    });
    expect(await run()).toMatchObject({ state: 'settled', outcome: 'completed' });
  });

  it('refuses no_running_slot with the figures "running of maxRunning" (transition 2)', async () => {
    await ledger.commandBus.execute(new ChangeOrganizationSettingsCommand('acme', { maxRunning: 1 }));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = scriptedFeature('test.slow', () => [
      async () => {
        await gate;
        return scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1, 1) });
      },
    ]);
    await ledger.close();
    ledger = await startLedgerApp({ features: [slow] });
    await seed(ledger, { operationId: 'test.slow', organizationId: 'acme', credits: 10_000, maxRunning: 1 });
    const first = run('acme', 'test.slow');
    await waitForEvent(ledger, 'InvocationDispatched');
    const second = await run('acme', 'test.slow');
    expect(second).toMatchObject({ state: 'refused', refusalReason: 'no_running_slot' });
    expect(await refusalOf(second.invocationId)).toMatchObject({ transition: 2, figures: { running: 1, maxRunning: 1 } });
    release();
    expect(await first).toMatchObject({ state: 'settled' });
  });

  it('writes nothing for an operation no feature registered, an unknown organization, or input the feature rejects', async () => {
    const before = await ledger.store.headPosition();
    await expect(run('acme', 'no.such.operation')).rejects.toBeInstanceOf(UnknownOperationError);
    await expect(run('nobody')).rejects.toBeInstanceOf(UnknownOrganizationError);
    const demo = ledger.commandBus.execute(
      new RunOperationCommand({ operationId: 'demo.arithmetic', organizationId: 'acme', input: { question: 'no numbers here' } }),
    );
    await expect(demo).rejects.toBeInstanceOf(InvalidFeatureInputError);
    expect(await ledger.store.headPosition()).toBe(before);
  });
});

async function waitForEvent(ledger: LedgerTestApp, type: string): Promise<void> {
  // Polls the log between event-loop turns (no timers): the dispatch is a few appends away.
  for (let turn = 0; turn < 10_000; turn++) {
    const events = await ledger.store.readAll();
    if (events.some((event) => event.type === type)) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`no ${type} event appeared`);
}
