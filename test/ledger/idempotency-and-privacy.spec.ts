import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { IdempotencyKeyReusedError } from '../../src/invocations/invocation-errors';
import { DEMO_OPERATION_ID } from '../../src/features/demo-arithmetic/demo-arithmetic.feature';
import { LedgerTestApp, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature } from '../support/scripted-feature';

describe('RunOperation idempotency keys and conversation privacy', () => {
  let ledger: LedgerTestApp;

  beforeEach(async () => {
    ledger = await startLedgerApp({ features: [scriptedFeature('test.other', () => [])] });
    await seed(ledger, { operationId: DEMO_OPERATION_ID, organizationId: 'acme' });
  });

  afterEach(() => ledger.close());

  const demo = (question: string, idempotencyKey?: string, operationId = DEMO_OPERATION_ID) =>
    ledger.commandBus.execute(
      new RunOperationCommand({ operationId, organizationId: 'acme', input: { question }, ...(idempotencyKey ? { idempotencyKey } : {}) }),
    );

  it('returns the first result for a repeated key and writes nothing new, whether the first is finished or still running', async () => {
    const [first, concurrent] = await Promise.all([demo('What is 2+2?', 'key-1'), demo('What is 2+2?', 'key-1')]);
    const head = await ledger.store.headPosition();
    const later = await demo('What is 2+2?', 'key-1');
    expect(concurrent).toEqual(first);
    expect(later).toEqual(first);
    expect(await ledger.store.headPosition()).toBe(head);
    expect(await ledger.store.readStream(`invocation-${first.invocationId}`)).toHaveLength(7);
  });

  it('refuses a key reused for another operation, rather than answering with a result of something else', async () => {
    await demo('What is 2+2?', 'key-2');
    await expect(demo('What is 2+2?', 'key-2', 'test.other')).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
  });

  it('stores no prompt, message, tool argument, tool result or answer in any event of a full run', async () => {
    const question = 'Kindly compute (1234.5 + 8765.25) * 3 for the quarterly report';
    const result = await demo(question);
    // The answer is handed back (README.md "The answer") and, like the conversation, never written to the log.
    expect(result).toMatchObject({ state: 'settled', outcome: 'completed', answer: { value: 29999.25 } });
    const log = JSON.stringify((await ledger.store.readAll()).map((event) => [event.data, event.metadata]));
    const answer = JSON.stringify(result.answer);
    for (const secret of [question, 'quarterly report', '1234.5', '8765.25', '29999.25', answer, 'calculate', 'You answer arithmetic']) {
      expect(log).not.toContain(secret);
    }
  });
});
