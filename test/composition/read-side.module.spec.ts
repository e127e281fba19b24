import { rmSync } from 'node:fs';
import { EXPLANATION_COLLECTION, EXPLANATIONS_PROJECTION, type ExplanationView } from '../../projections';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { ProjectionRunner, type SqliteReadModelStore } from '../../src/projection-runner';
import { ProjectionWorkerHost } from '../../src/projection-runner/worker/projection-worker.host';
import { READ_MODEL_STORE } from '../../src/projection-runner';
import { scriptedToolUse } from '../../src/runtime';
import { publication, seed, startLedgerApp } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

const feature = scriptedFeature('test.answer', () => [
  scriptedToolUse([{ id: 'answer', name: 'submit_answer', input: { value: 42 } }], { usage: usage(1_000, 100) }),
]);

const CASES: ReadonlyArray<{ thread: string; env: Record<string, string>; implementation: Function }> = [
  { thread: 'worker', env: {}, implementation: ProjectionWorkerHost },
  { thread: 'main', env: { LEDGER_PROJECTIONS_THREAD: 'main' }, implementation: ProjectionRunner },
];

describe.each(CASES)('the read side with the projections on the $thread thread', ({ env, implementation }) => {
  it('explains an invocation once the read models caught up, and keeps its read models across a restart', async () => {
    let ledger = await startLedgerApp({ features: [feature], env, keepDirectory: true });
    const directory = ledger.directory;
    try {
      expect(ledger.runner).toBeInstanceOf(implementation);
      await seed(ledger, { operationId: 'test.answer', organizationId: 'acme', publication: publication() });
      const result: InvocationSummary = await ledger.commandBus.execute(
        new RunOperationCommand({ operationId: 'test.answer', organizationId: 'acme', input: {} }),
      );
      await ledger.runner.caughtUp();
      const explained = () =>
        ledger.app.get<SqliteReadModelStore>(READ_MODEL_STORE).get<ExplanationView>(EXPLANATIONS_PROJECTION, EXPLANATION_COLLECTION, result.invocationId);
      expect(explained()?.outcome).toBe('completed');
      const before = ledger.runner.status().projections.map(({ name, checkpoint }) => [name, checkpoint]);

      await ledger.close();
      ledger = await startLedgerApp({ features: [feature], env, directory, keepDirectory: true });
      expect(ledger.runner.status().state).toBe('live');
      // Nothing rebuilt: each read model only followed the one event the restarted instance wrote, its lease.
      await ledger.runner.caughtUp();
      expect(ledger.runner.status().projections.map(({ name, checkpoint }) => [name, checkpoint])).toEqual(
        before.map(([name, checkpoint]) => [name, (checkpoint as bigint) + 1n]),
      );
      expect(explained()?.outcome).toBe('completed');
    } finally {
      await ledger.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
