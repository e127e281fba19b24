import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { DEMO_OPERATION_ID } from '../../src/features/demo-arithmetic/demo-arithmetic.feature';
import { LedgerTestApp, publication, seed, startLedgerApp } from '../support/ledger-app';

describe('RunOperation over the demo feature on a file-backed SQLite store', () => {
  let ledger: LedgerTestApp;

  beforeEach(async () => {
    ledger = await startLedgerApp();
    await seed(ledger, { operationId: DEMO_OPERATION_ID, organizationId: 'acme', publication: publication({ creditHold: 500 }) });
  });

  afterEach(() => ledger.close());

  it('runs the conversation to an accepted answer and settles at the sum of its attempt prices', async () => {
    const result = await ledger.commandBus.execute(
      new RunOperationCommand({ operationId: DEMO_OPERATION_ID, organizationId: 'acme', input: { question: 'What is 6*7?' } }),
    );
    expect(result).toMatchObject({ state: 'settled', outcome: 'completed', estimate: 500, turnsUsed: 2, toolCallsUsed: 1 });
    const events = await ledger.store.readStream(`invocation-${result.invocationId}`);
    expect(events.map((event) => event.type)).toEqual([
      'InvocationEstimated',
      'InvocationReserved',
      'InvocationDispatched',
      'AttemptRecorded',
      'AttemptRecorded',
      'InvocationCompleted',
      'InvocationSettled',
    ]);
    const prices = events.filter((e) => e.type === 'AttemptRecorded').map((e) => (e.data as { priceCredits: number }).priceCredits);
    expect(result.charge).toBe(prices.reduce((a, b) => a + b, 0));
    expect(result.charge).toBeGreaterThan(0);
  });

  it('issue 35: writes the estimate, then the hold with the reservation and the dispatch in one commit, the attempts, then the result, its settlement and the hold’s in one commit, each on disk', async () => {
    const appends: string[] = [];
    const durability = (options?: { readonly acknowledge?: string }) => (options?.acknowledge === 'committed' ? 'at COMMIT' : 'on disk');
    const append = ledger.store.append.bind(ledger.store);
    jest.spyOn(ledger.store, 'append').mockImplementation((stream, events, options) => {
      appends.push(`${events.map((event) => event.type).join('+')} ${durability(options)}`);
      return append(stream, events, options);
    });
    const appendTogether = ledger.store.appendTogether!.bind(ledger.store);
    jest.spyOn(ledger.store, 'appendTogether').mockImplementation((parts, options) => {
      appends.push(`${parts.map((part) => part.events.map((event) => event.type).join('+')).join(' | ')} ${durability(options)}`);
      return appendTogether(parts, options);
    });
    const result = await ledger.commandBus.execute(
      new RunOperationCommand({ operationId: DEMO_OPERATION_ID, organizationId: 'acme', input: { question: 'What is 6*7?' } }),
    );

    expect(result).toMatchObject({ state: 'settled', outcome: 'completed' });
    expect(appends).toEqual([
      'InvocationEstimated on disk',
      'HoldPlaced | InvocationReserved+InvocationDispatched on disk',
      'AttemptRecorded on disk',
      'AttemptRecorded on disk',
      'InvocationCompleted+InvocationSettled | HoldSettled on disk',
    ]);
  });
});
