import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ATTEMPTS_COLLECTION,
  ATTEMPTS_PROJECTION,
  INVOCATION_COLLECTION,
  INVOCATIONS_PROJECTION,
  ROUTING_BUDGETS_COLLECTION,
  ROUTING_BUDGETS_PROJECTION,
  readBalanceView,
  type AttemptHistoryView,
  type InvocationView,
  type RoutingBudgetsView,
} from '../../projections';
import { auditVerify } from '../../src/cli/audit-verify.command';
import { EXIT_OK } from '../../src/cli/cli-io';
import { openSqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import type { EventMetadata } from '../../src/event-store/event-store.port';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import { READ_MODEL_STORE, type SqliteReadModelStore } from '../../src/projection-runner';
import { priceAttempt, type Prices, type Usage } from '../../src/runtime';
import { MemoryIo } from '../cli/support/memory-io';
import { publication, startLedgerApp, type LedgerTestApp } from '../support/ledger-app';

const FIXTURE = join(__dirname, '../fixtures/pre-rate-version-log');

interface StoredLine {
  readonly streamName: string;
  readonly id: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
  readonly metadata: EventMetadata;
}

interface Expected {
  readonly runs: readonly { invocationId: string; state: string; charge: number; estimate: number; publicationVersion: number }[];
  readonly attempts: readonly { streamName: string; priceCredits: number }[];
  readonly balances: Record<string, unknown>;
  readonly attemptViews: Record<string, AttemptHistoryView | undefined>;
}

const lines: StoredLine[] = readFileSync(join(FIXTURE, 'events.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.length > 0)
  .map((line) => JSON.parse(line) as StoredLine);
const expected = JSON.parse(readFileSync(join(FIXTURE, 'expected.json'), 'utf8')) as Expected;

/** The fixture's events appended as they were written (ids, data, metadata with schemaVersion 1). */
async function restoreLog(logPath: string): Promise<void> {
  const store = openSqliteEventStore({ path: logPath });
  try {
    for (const line of lines) {
      await store.append(line.streamName, [{ id: line.id, type: line.type, data: line.data, metadata: line.metadata }], { expectedRevision: 'any' });
    }
  } finally {
    await store.close();
  }
}

const withNewKinds = (usage: Usage | undefined) => (usage === undefined ? undefined : { ...usage, cacheWrite1hTokens: 0, webSearchRequests: 0 });

describe('README.md "Prices" a log written before the rate version grew still loads, audits and prices exactly as before (upcaster, not a rewrite)', () => {
  let ledger: LedgerTestApp;
  let readStore: SqliteReadModelStore;

  beforeAll(async () => {
    const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-old-log-'));
    await restoreLog(join(directory, 'ledger.sqlite'));
    ledger = await startLedgerApp({ directory });
    await ledger.runner.caughtUp();
    readStore = ledger.app.get<SqliteReadModelStore>(READ_MODEL_STORE);
  });

  afterAll(() => ledger.close());

  it('holds events of schema version 1 only, as the old code wrote them', () => {
    expect(new Set(lines.map((line) => line.metadata.schemaVersion))).toEqual(new Set([1]));
    expect(lines.some((line) => line.type === 'AttemptRecorded')).toBe(true);
  });

  it('audits clean: every read model rebuilds equal, every balance and every attempt price recomputes', async () => {
    const io = new MemoryIo();
    const { exitCode } = await auditVerify({ eventStore: ledger.store, readStore, io, json: true });
    expect(io.json().filter((line) => (line as { kind: string }).kind !== 'summary')).toEqual([]);
    expect(exitCode).toBe(EXIT_OK);
  });

  it('prices every old attempt from its usage and its copied rate version exactly as it was recorded', async () => {
    const events = await ledger.store.readAll({});
    const attempts = events.filter((event) => event.type === 'AttemptRecorded');
    expect(attempts.map((event) => ({ streamName: event.streamName, priceCredits: (event.data as { priceCredits: number }).priceCredits }))).toEqual(expected.attempts);
    for (const attempt of attempts) {
      const estimated = events.find((event) => event.streamName === attempt.streamName && event.type === 'InvocationEstimated')!;
      const prices = (estimated.data as { publication: { prices: Prices } }).publication.prices;
      const { usage, priceCredits } = attempt.data as { usage?: Usage; priceCredits: number };
      expect(priceAttempt(withNewKinds(usage), prices)).toBe(priceCredits);
    }
  });

  it('shows the same balances, invocations and attempt histories, the usage now naming 1-hour writes and searches as 0', () => {
    for (const [organizationId, balance] of Object.entries(expected.balances)) {
      expect(readBalanceView(readStore, organizationId)).toEqual(balance);
    }
    for (const run of expected.runs) {
      expect(readStore.get<InvocationView>(INVOCATIONS_PROJECTION, INVOCATION_COLLECTION, run.invocationId)).toMatchObject({
        state: run.state,
        charge: run.charge,
        estimate: run.estimate,
        publicationVersion: run.publicationVersion,
      });
      const before = expected.attemptViews[run.invocationId];
      const now = readStore.get<AttemptHistoryView>(ATTEMPTS_PROJECTION, ATTEMPTS_COLLECTION, run.invocationId);
      if (before === undefined || before === null) {
        expect(now).toBeUndefined();
        continue;
      }
      expect(now).toEqual({
        ...before,
        attempts: before.attempts.map((row) => (row.usage === undefined ? row : { ...row, usage: withNewKinds(row.usage) })),
        usageTotals: withNewKinds(before.usageTotals),
      });
    }
  });

  it('shows each old version in the routing-budget history with its defaults: 1-hour writes at the 5-minute rate, searches at 0', () => {
    const history = readStore.get<RoutingBudgetsView>(ROUTING_BUDGETS_PROJECTION, ROUTING_BUDGETS_COLLECTION, 'fixture.cached')!;
    expect(history.versions.map((version) => version.prices)).toEqual([
      { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 3_750_000, cacheReadPerMTok: 300_000, webSearchPerThousand: 0 },
      { inputPerMTok: 3_100_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 3_750_000, cacheReadPerMTok: 300_000, webSearchPerThousand: 0 },
    ]);
  });

  it('mints no new version for a PUT that repeats an old version’s terms, because the defaults price it alike', async () => {
    const prices = { inputPerMTok: 7, outputPerMTok: 11, cacheWritePerMTok: 13, cacheReadPerMTok: 3 };
    const version = await ledger.commandBus.execute(new PublishOperationCommand('fixture.plain', publication({ prices, creditHold: 10 })));
    expect(version).toMatchObject({ version: 1 });
  });
});
