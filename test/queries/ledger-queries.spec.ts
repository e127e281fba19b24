import { QueryBus } from '@nestjs/cqrs';
import { GrantCreditsCommand } from '../../src/accounts/account-commands';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import {
  GetAttemptsQuery,
  GetBalanceQuery,
  GetExplanationQuery,
  GetInvocationQuery,
  GetPublicationsQuery,
} from '../../src/queries/ledger.queries';
import { scriptedToolUse } from '../../src/runtime';
import { seed, startLedgerApp, type LedgerTestApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

const feature = scriptedFeature('test.answer', () => [
  scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1_000, 100) }),
]);

describe('docs/embedding.md: the read side’s queries on the QueryBus, the one read path of in-process readers and HTTP', () => {
  let ledger: LedgerTestApp;
  let queries: QueryBus;

  beforeAll(async () => {
    ledger = await startLedgerApp({ features: [feature] });
    queries = ledger.app.get(QueryBus);
    await seed(ledger, { operationId: 'test.answer', organizationId: 'acme', credits: 10_000 });
  });

  afterAll(() => ledger.close());

  it('reads an invocation, its attempts and its explanation right after the run, without waiting by hand', async () => {
    const result = await ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.answer', organizationId: 'acme', input: {} }));
    const invocation = await queries.execute(new GetInvocationQuery(result.invocationId));
    expect(invocation).toMatchObject({ invocationId: result.invocationId, organizationId: 'acme', state: 'settled', outcome: 'completed', charge: result.charge });
    const attempts = await queries.execute(new GetAttemptsQuery(result.invocationId));
    expect(attempts?.attempts).toHaveLength(1);
    expect(attempts?.priceTotalCredits).toBe(result.charge);
    const explanation = await queries.execute(new GetExplanationQuery(result.invocationId));
    expect(explanation).toMatchObject({ state: 'settled', outcome: 'completed' });
    expect(explanation?.sentence).toContain('Completed');
  });

  it('reads a balance that already includes the caller’s own grant', async () => {
    const before = await queries.execute(new GetBalanceQuery('acme'));
    await ledger.commandBus.execute(new GrantCreditsCommand('acme', 7, 'top-up', 'top-up-1'));
    const after = await queries.execute(new GetBalanceQuery('acme'));
    expect(after?.granted).toBe((before?.granted ?? 0) + 7);
  });

  it('reads an operation’s publications with their windows', async () => {
    const publications = await queries.execute(new GetPublicationsQuery('test.answer'));
    expect(publications?.versions.map((version) => version.version)).toEqual([1]);
  });

  it('answers undefined for what does not exist, leaving "not found" to the caller', async () => {
    expect(await queries.execute(new GetInvocationQuery('00000000-0000-7000-8000-000000000000'))).toBeUndefined();
    expect(await queries.execute(new GetBalanceQuery('nobody'))).toBeUndefined();
    expect(await queries.execute(new GetPublicationsQuery('no.such.operation'))).toBeUndefined();
  });
});
