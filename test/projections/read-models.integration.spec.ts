import {
  ATTEMPTS_COLLECTION,
  ATTEMPTS_PROJECTION,
  EXPLANATION_COLLECTION,
  EXPLANATIONS_PROJECTION,
  ROUTING_BUDGETS_COLLECTION,
  ROUTING_BUDGETS_PROJECTION,
  type AttemptHistoryView,
  type ExplanationView,
  type RoutingBudgetsView,
} from '../../projections';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import type { SqliteReadModelStore } from '../../src/projection-runner';
import { READ_MODEL_STORE } from '../../src/projection-runner';
import { scriptedFault, scriptedToolUse, type ScriptedStep } from '../../src/runtime';
import { LedgerTestApp, publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

/** One credit per 1,000 input tokens and per 100 output tokens, so prices are easy to read. */
const PRICES = { inputPerMTok: 1_000, outputPerMTok: 10_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };

/** A model that never offers an acceptable answer: it keeps looking things up. */
function* neverConverges(): Generator<ScriptedStep> {
  for (let turn = 1; ; turn++) yield scriptedToolUse([{ id: `call-${turn}`, name: 'lookup', input: {} }], { usage: usage(1_000, 100) });
}

describe('ATS-PFM-LLM-002-13 attempt history explains retry outcomes, on the real read models (BR-CAP-PFM-LLM-002-07, BR-CAP-PFM-LLM-012-06)', () => {
  let ledger: LedgerTestApp;
  let readModels: SqliteReadModelStore;
  const run = (operationId: string): Promise<InvocationSummary> =>
    ledger.commandBus.execute(new RunOperationCommand({ operationId, organizationId: 'acme', input: { question: 'q' } }));

  beforeAll(async () => {
    ledger = await startLedgerApp({
      features: [
        scriptedFeature('test.retry', () => [
          scriptedFault('overloaded', { httpStatus: 529 }),
          // 2,000 in + 300 out: 2 + 3 credits.
          scriptedToolUse([{ id: 'answer', name: 'submit_answer', input: { value: 42 } }], { usage: usage(2_000, 300) }),
        ]),
        scriptedFeature('test.budget', neverConverges),
      ],
    });
    readModels = ledger.app.get<SqliteReadModelStore>(READ_MODEL_STORE);
    await seed(ledger, { operationId: 'test.retry', organizationId: 'acme', publication: publication({ prices: PRICES, creditHold: 100 }) });
    await ledger.commandBus.execute(new PublishOperationCommand('test.budget', publication({ prices: PRICES, creditHold: 100, limits: { maxTurns: 2 } })));
  });

  afterAll(() => ledger.close());

  it('numbers an overload and its successful retry as retries of turn 1, priced 0 and then from their own usage', async () => {
    const result = await run('test.retry');
    await ledger.runner.caughtUp();

    const history = readModels.get<AttemptHistoryView>(ATTEMPTS_PROJECTION, ATTEMPTS_COLLECTION, result.invocationId);
    expect(history?.attempts).toEqual([
      expect.objectContaining({ turn: 1, retry: 0, classification: 'overloaded', httpStatus: 529, priceCredits: 0, waitBeforeMs: 0 }),
      expect.objectContaining({ turn: 1, retry: 1, classification: 'ok', priceCredits: 5, usage: usage(2_000, 300) }),
    ]);
    expect(history?.attempts[1]?.waitBeforeMs).toBeGreaterThan(0);
    expect(history).toMatchObject({ attemptCount: 2, attemptsTruncated: false, priceTotalCredits: 5, usageTotals: usage(2_000, 300) });

    const explanation = readModels.get<ExplanationView>(EXPLANATIONS_PROJECTION, EXPLANATION_COLLECTION, result.invocationId);
    expect(explanation).toMatchObject({ state: 'settled', outcome: 'completed', turns: { used: 1 }, retries: 1, credits: { spent: 5, hold: 100, charge: 5 } });
    expect(explanation?.sentence).toBe(
      'Completed: answer accepted after 1 of 6 turns; 0 of 10 tool calls; spent 5 of a 100-credit hold; 1 retry. ' +
        'Settled (transition 8, by runtime): charged 5 credits, the sum of its attempt prices.',
    );
  });

  it('explains a request ended at its turn limit by the retained limit, with operation and version, after a publication raises it (ATS-PFM-LLM-002-12)', async () => {
    const earlier = await run('test.budget');
    const raised = await ledger.commandBus.execute(
      new PublishOperationCommand('test.budget', publication({ prices: PRICES, creditHold: 100, limits: { maxTurns: 4 } })),
    );
    expect(raised.version).toBe(2);
    const later = await run('test.budget');
    await ledger.runner.caughtUp();

    const explain = (invocationId: string) => readModels.get<ExplanationView>(EXPLANATIONS_PROJECTION, EXPLANATION_COLLECTION, invocationId);
    expect(explain(earlier.invocationId)).toMatchObject({
      outcome: 'turn_limit',
      publicationVersion: 1,
      endingLimit: { name: 'maxTurns', value: 2, operationId: 'test.budget', publicationVersion: 1 },
      turns: { used: 2, limit: 2 },
      // Two turns of 1,000 in + 100 out: 2 credits each.
      credits: { spent: 4, hold: 100, charge: 4 },
    });
    expect(explain(earlier.invocationId)?.sentence).toBe(
      'Ended by turn_limit: used 2 of 2 turns (maxTurns of test.budget v1); 1 of 10 tool calls; spent 4 of a 100-credit hold; no retries. ' +
        'Settled (transition 8, by runtime): charged 4 credits, the sum of its attempt prices.',
    );
    expect(explain(later.invocationId)).toMatchObject({
      publicationVersion: 2,
      endingLimit: { name: 'maxTurns', value: 4, operationId: 'test.budget', publicationVersion: 2 },
      turns: { used: 4, limit: 4 },
    });

    const budgets = readModels.get<RoutingBudgetsView>(ROUTING_BUDGETS_PROJECTION, ROUTING_BUDGETS_COLLECTION, 'test.budget');
    expect(budgets?.versions.map(({ version, limits, from, until }) => ({ version, maxTurns: limits.maxTurns, from, until }))).toEqual([
      { version: 1, maxTurns: 2, from: expect.any(String), until: budgets?.versions[1]?.from },
      { version: 2, maxTurns: 4, from: expect.any(String), until: undefined },
    ]);
  });
});
