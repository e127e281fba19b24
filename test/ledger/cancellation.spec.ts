import { EXPLANATIONS_PROJECTION, EXPLANATION_COLLECTION, type ExplanationView } from '../../projections';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { READ_MODEL_STORE } from '../../src/projection-runner';
import type { SqliteReadModelStore } from '../../src/projection-runner';
import { scriptedToolUse, type ScriptedStep } from '../../src/runtime';
import { LedgerTestApp, publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

let controller = new AbortController();

/** A model whose first attempt is still in flight when the caller cancels. */
function cancelledMidAttempt(): ScriptedStep[] {
  return [
    (_request, call) =>
      new Promise((_resolve, reject) => {
        call.signal.addEventListener('abort', () => reject(call.signal.reason), { once: true });
        controller.abort();
      }),
  ];
}

describe('a cancelled request (docs/rules.md step 1, outcome cancelled) is settled and explained', () => {
  let ledger: LedgerTestApp;

  beforeEach(async () => {
    controller = new AbortController();
    ledger = await startLedgerApp({
      features: [
        scriptedFeature('test.cancel', cancelledMidAttempt),
        scriptedFeature('test.cancel-first', () => [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1) })]),
      ],
    });
    await seed(ledger, { operationId: 'test.cancel', organizationId: 'acme', publication: publication({ creditHold: 300 }) });
    await seed(ledger, { operationId: 'test.cancel-first', organizationId: 'acme', credits: 0, publication: publication({ creditHold: 300 }) });
  });

  afterEach(() => ledger.close());

  const explanationOf = async (invocationId: string) => {
    await ledger.runner.caughtUp();
    return ledger.app.get<SqliteReadModelStore>(READ_MODEL_STORE).get<ExplanationView>(EXPLANATIONS_PROJECTION, EXPLANATION_COLLECTION, invocationId);
  };

  it('charges the estimate when cancelled during an attempt, because what that attempt cost was never learned (transitions 7, 9)', async () => {
    const result = await ledger.commandBus.execute(
      new RunOperationCommand({ operationId: 'test.cancel', organizationId: 'acme', input: {}, signal: controller.signal }),
    );
    expect(result).toMatchObject({ state: 'settled', outcome: 'cancelled', charge: 300 });
    const explained = await explanationOf(result.invocationId);
    expect(explained).toMatchObject({ outcome: 'cancelled', settlement: { transition: 9 } });
    expect(explained?.sentence).toMatch(/^Cancelled: the caller cancelled the request/);
  });

  it('charges nothing when cancelled before the first request was sent (transition 8 at 0)', async () => {
    controller.abort();
    const result = await ledger.commandBus.execute(
      new RunOperationCommand({ operationId: 'test.cancel-first', organizationId: 'acme', input: {}, signal: controller.signal }),
    );
    expect(result).toMatchObject({ state: 'settled', outcome: 'cancelled', charge: 0, turnsUsed: 0 });
    expect(await explanationOf(result.invocationId)).toMatchObject({ outcome: 'cancelled', settlement: { transition: 8, chargeCredits: 0 } });
  });
});
