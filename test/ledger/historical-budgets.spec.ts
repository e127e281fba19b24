import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { scriptedToolUse, type ScriptedStep } from '../../src/runtime';
import { LedgerTestApp, publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

/** A model that never offers an acceptable answer: it keeps looking things up. */
function* neverConverges(): Generator<ScriptedStep> {
  for (let turn = 1; ; turn++) yield scriptedToolUse([{ id: `call-${turn}`, name: 'lookup', input: {} }], { usage: usage(10, 1) });
}

describe('ATS-PFM-LLM-002-12 historical budgets explain a bounded conversation (BR-CAP-PFM-LLM-002-01), at the command level', () => {
  let ledger: LedgerTestApp;

  beforeEach(async () => {
    ledger = await startLedgerApp({ features: [scriptedFeature('test.budget', neverConverges)] });
    await seed(ledger, { operationId: 'test.budget', organizationId: 'acme', publication: publication({ limits: { maxTurns: 2 } }) });
  });

  afterEach(() => ledger.close());

  it('keeps the earlier request on the budget it was admitted under, while the next request uses the new publication', async () => {
    const run = () =>
      ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.budget', organizationId: 'acme', input: {} }));
    const earlier = await run();
    expect(earlier).toMatchObject({ state: 'settled', outcome: 'turn_limit', turnsUsed: 2, publicationVersion: 1 });

    const raised = await ledger.commandBus.execute(new PublishOperationCommand('test.budget', publication({ limits: { maxTurns: 4 } })));
    expect(raised.version).toBe(2);

    const later = await run();
    expect(later).toMatchObject({ state: 'settled', outcome: 'turn_limit', turnsUsed: 4, publicationVersion: 2 });

    const [estimated] = await ledger.store.readStream(`invocation-${earlier.invocationId}`, { maxCount: 1 });
    expect(estimated?.data).toMatchObject({ publication: { version: 1, limits: { maxTurns: 2 } } });
    const earlierAgain = await ledger.store.readStream(`invocation-${earlier.invocationId}`);
    expect(earlierAgain.filter((event) => event.type === 'AttemptRecorded')).toHaveLength(2);
  });
});
