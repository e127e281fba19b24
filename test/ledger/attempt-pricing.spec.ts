import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { RETRY_JITTER } from '../../src/domain/retry-jitter.token';
import { BASE_RETRY_WAIT_MS, MAX_JITTER_PERCENT, scriptedFault, scriptedToolUse } from '../../src/runtime';
import { LedgerTestApp, publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

describe('ATS-PFM-LLM-002-07 retries retain their own usage prices (BR-CAP-PFM-LLM-002-07), through RunOperation', () => {
  let ledger: LedgerTestApp;
  // One credit per 1,000 input tokens and per 100 output tokens: 2,000 in + 300 out = 2 + 3 credits, so prices are easy to read.
  const prices = { inputPerMTok: 1_000, outputPerMTok: 10_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
  const feature = scriptedFeature('test.retry', () => [
    scriptedFault('overloaded', { httpStatus: 529 }),
    scriptedToolUse([{ id: 'a1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(2_000, 300) }),
  ]);

  beforeEach(async () => {
    ledger = await startLedgerApp({ features: [feature] });
    await seed(ledger, { operationId: 'test.retry', organizationId: 'acme', publication: publication({ prices, creditHold: 100 }) });
  });

  afterEach(() => ledger.close());

  it('numbers the retry as a retry of the same turn, prices the failed attempt that reported nothing at zero, and charges only what was reported', async () => {
    const result = await ledger.commandBus.execute(
      new RunOperationCommand({ operationId: 'test.retry', organizationId: 'acme', input: { question: 'q' } }),
    );
    const attempts = (await ledger.store.readStream(`invocation-${result.invocationId}`))
      .filter((event) => event.type === 'AttemptRecorded')
      .map((event) => event.data as { turn: number; retry: number; classification: string; priceCredits: number; usage?: unknown });

    expect(attempts).toEqual([
      expect.objectContaining({ turn: 1, retry: 0, classification: 'overloaded', priceCredits: 0 }),
      expect.objectContaining({ turn: 1, retry: 1, classification: 'ok', priceCredits: 2 + 3 }),
    ]);
    expect(attempts[0]!.usage).toBeUndefined();
    expect(result).toMatchObject({ state: 'settled', outcome: 'completed', turnsUsed: 1, charge: 5 });
  });
});

describe('BR-CAP-PFM-LLM-002-05 the retry wait draws its jitter from the injected RETRY_JITTER, through RunOperation', () => {
  const feature = scriptedFeature('test.jitter', () => [
    scriptedFault('overloaded', { httpStatus: 529 }),
    scriptedToolUse([{ id: 'a1', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1_000, 100) }),
  ]);

  it.each([
    { draw: 0, waitBeforeMs: BASE_RETRY_WAIT_MS },
    { draw: 0.5, waitBeforeMs: BASE_RETRY_WAIT_MS + Math.floor((0.5 * BASE_RETRY_WAIT_MS * MAX_JITTER_PERCENT) / 100) },
  ])('records a first retry after $waitBeforeMs ms when the jitter draws $draw', async ({ draw, waitBeforeMs }) => {
    const ledger = await startLedgerApp({ features: [feature], override: { provide: RETRY_JITTER, useFactory: () => () => draw } });
    try {
      await seed(ledger, { operationId: 'test.jitter', organizationId: 'acme', publication: publication() });
      const result = await ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.jitter', organizationId: 'acme', input: {} }));
      const attempts = (await ledger.store.readStream(`invocation-${result.invocationId}`))
        .filter((event) => event.type === 'AttemptRecorded')
        .map((event) => (event.data as { waitBeforeMs: number }).waitBeforeMs);
      expect(attempts).toEqual([0, waitBeforeMs]);
    } finally {
      await ledger.close();
    }
  });
});
