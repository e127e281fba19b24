import { GrantCreditsCommand } from '../../src/accounts/account-commands';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import type { SqliteReadModelStore } from '../../src/projection-runner';
import { READ_MODEL_STORE } from '../../src/projection-runner';
import { scriptedToolUse } from '../../src/runtime';
import { publication, seed, startLedgerApp, type LedgerTestApp, type LedgerTestAppOptions } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';

export interface AuditedLedger {
  readonly ledger: LedgerTestApp;
  readonly readStore: SqliteReadModelStore;
  /** Two settled invocations of `acme`, then a refusal of `thrifty` (insufficient_credits). */
  readonly runs: readonly InvocationSummary[];
}

/**
 * The real application after a few invocations: `acme` runs `test.answer` twice (5 credits each), and
 * `thrifty`, granted 50 credits against a 100-credit hold, is refused. The read models are caught up.
 */
export async function ledgerWithHistory(options: Pick<LedgerTestAppOptions, 'keepDirectory' | 'env'> = {}): Promise<AuditedLedger> {
  const ledger = await startLedgerApp({
    ...options,
    features: [
      scriptedFeature('test.answer', () => [
        scriptedToolUse([{ id: 'answer', name: 'submit_answer', input: { value: 42 } }], { usage: usage(2_000, 300) }),
      ]),
    ],
  });
  const prices = { inputPerMTok: 1_000, outputPerMTok: 10_000, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
  await seed(ledger, { operationId: 'test.answer', organizationId: 'acme', credits: 1_000, publication: publication({ prices, creditHold: 100 }) });
  await ledger.commandBus.execute(new GrantCreditsCommand('thrifty', 50, 'a small grant', 'grant-thrifty'));
  const run = (organizationId: string): Promise<InvocationSummary> =>
    ledger.commandBus.execute(new RunOperationCommand({ operationId: 'test.answer', organizationId, input: { question: 'q' } }));
  const runs = [await run('acme'), await run('acme'), await run('thrifty')];
  await ledger.runner.caughtUp();
  return { ledger, readStore: ledger.app.get<SqliteReadModelStore>(READ_MODEL_STORE), runs };
}
