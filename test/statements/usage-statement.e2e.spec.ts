import { CommandBus } from '@nestjs/cqrs';
import { USAGE_DAY_COLLECTION, USAGE_STATEMENTS_PROJECTION, usageDayId, type UsageDayView } from '../../projections';
import { GrantCreditsCommand } from '../../src/accounts/account-commands';
import { auditVerify } from '../../src/cli/audit-verify.command';
import { EXIT_DIFFERENCES, EXIT_OK } from '../../src/cli/cli-io';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { READ_MODEL_STORE, type SqliteReadModelStore } from '../../src/projection-runner';
import { MemoryIo } from '../cli/support/memory-io';
import { PublishOperationCommand } from '../../src/catalog/publish-operation.command';
import type { InvocationSummary } from '../../src/invocations/invocation.state';
import { RunOperationCommand } from '../../src/invocations/run-operation.command';
import { scriptedToolUse, type Usage } from '../../src/runtime';
import { USAGE_KINDS } from '../../src/runtime/provider.port';
import type { UsageStatement, UsageStatementRow } from '../../src/queries/get-usage.query';
import { startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { publication } from '../support/ledger-app';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { ShiftedClock } from '../support/shifted-clock';

const DAY_MS = 86_400_000;
const START_MS = Date.parse('2026-11-02T00:00:00.000Z');
const DAYS = ['2026-11-02', '2026-11-03', '2026-11-04'] as const;
/** 1,000 invocations in all, spread unevenly over the three days, alternating two operations. */
const PER_DAY = [400, 350, 250] as const;
const REFUSED_PER_DAY = 4;

/** Different usage for every invocation, cache writes and reads included, so every charge differs. */
function usageOf(n: number): Usage {
  return usage(1_000 + 7 * n, 50 + (n % 13), n % 5 === 0 ? 2_000 : 0, n % 3 === 0 ? 500 : 0, n % 7 === 0 ? 300 : 0);
}

function answering(operationId: string, counter: { n: number }) {
  return scriptedFeature(operationId, () => [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usageOf(counter.n++) })]);
}

/** Parses RFC 4180 lines of plain fields (the statement's fields need no quoting here). */
function csvRows(text: string): Record<string, string>[] {
  const [header, ...lines] = text.trimEnd().split('\r\n').map((line) => line.split(','));
  return lines.map((fields) => Object.fromEntries(header!.map((name, index) => [name, fields[index]!])));
}

describe('docs/http.md usage statements: what an organization is invoiced from', () => {
  const clock = new ShiftedClock();
  const counter = { n: 0 };
  let ledger: HttpLedger;
  const runs: { day: string; summary: InvocationSummary }[] = [];

  beforeAll(async () => {
    clock.jumpTo(START_MS);
    // Recovery off: to a recovery pass, each jump of the clock below is a pause of an hour or a day, longer
    // than the instance's lease, so it rightly settles a run in flight under that lease. In one CI run the
    // pass the service starts with read the clock after the first jump. Recovery has tests of its own.
    ledger = await startHttpLedger({ env: { LEDGER_RECOVERY_INTERVAL_MS: '0' }, clock, features: [answering('stmt.summarise', counter), answering('stmt.classify', counter), answering('stmt.off', counter)] });
    const commands = ledger.app.get(CommandBus);
    const prices = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000 };
    await commands.execute(new PublishOperationCommand('stmt.summarise', publication({ routing: { provider: 'scripted', model: 'model-a' }, prices, creditHold: 100_000 })));
    await commands.execute(new PublishOperationCommand('stmt.classify', publication({ routing: { provider: 'scripted', model: 'model-b' }, prices, creditHold: 100_000 })));
    await commands.execute(new PublishOperationCommand('stmt.off', publication({ enabled: false })));
    await commands.execute(new GrantCreditsCommand('acme', 1_000_000_000, 'prepaid', 'grant-acme'));
    for (const [index, day] of DAYS.entries()) {
      clock.jumpTo(START_MS + index * DAY_MS + 3_600_000);
      for (let i = 0; i < PER_DAY[index]!; i += 1) {
        const operationId = i % 2 === 0 ? 'stmt.summarise' : 'stmt.classify';
        const summary: InvocationSummary = await commands.execute(new RunOperationCommand({ operationId, organizationId: 'acme', input: { question: 'q' } }));
        runs.push({ day, summary });
      }
      for (let i = 0; i < REFUSED_PER_DAY; i += 1) {
        runs.push({ day, summary: await commands.execute(new RunOperationCommand({ operationId: 'stmt.off', organizationId: 'acme', input: { question: 'q' } })) });
      }
    }
  }, 120_000);

  afterAll(() => ledger.close());

  const statement = async (query: string, accept = 'application/json') =>
    ledger.http().get(`/v1/organizations/acme/usage?${query}`).set('Authorization', `Bearer ${TOKENS.acmeAdmin}`).set('Accept', accept);

  it('ran 1,000 invocations over three days, each settled with its own charge', () => {
    const settled = runs.filter((run) => run.summary.state === 'settled');
    expect(settled).toHaveLength(1_000);
    expect(new Set(settled.map((run) => run.summary.charge)).size).toBeGreaterThan(900);
    expect(runs.filter((run) => run.summary.refusalReason === 'operation_disabled')).toHaveLength(3 * REFUSED_PER_DAY);
  });

  it('equals, credit for credit, the sum of the invocations’ charges on each day and over the period', async () => {
    const response = await statement(`from=${DAYS[0]}&to=${DAYS[2]}&groupBy=day`);
    expect(response.status).toBe(200);
    const body = response.body as UsageStatement;
    const chargeOn = (day: string) => runs.filter((run) => run.day === day).reduce((sum, run) => sum + run.summary.charge, 0);
    expect(body.rows.map((row) => [row.day, row.credits])).toEqual(DAYS.map((day) => [day, chargeOn(day)]));
    expect(body.totals.credits).toBe(runs.reduce((sum, run) => sum + run.summary.charge, 0));
    expect(body.rows.map((row) => row.settled)).toEqual([...PER_DAY]);
    expect(body.rows.map((row) => row.refusals)).toEqual(DAYS.map(() => ({ operation_disabled: REFUSED_PER_DAY })));
    expect(body.totals.outcomes).toEqual({ completed: 1_000 });

    // The same figure the account charged.
    const balance = await ledger.http().get('/v1/organizations/acme/balance').set('Authorization', `Bearer ${TOKENS.acmeAdmin}`);
    expect(balance.body.charged).toBe(body.totals.credits);
  });

  it('sums every token kind apart, so the statement says what each kind cost', async () => {
    const body = (await statement(`from=${DAYS[0]}&to=${DAYS[2]}`)).body as UsageStatement;
    const expected = Object.fromEntries(USAGE_KINDS.map((kind) => [kind, 0])) as Record<string, number>;
    for (let n = 0; n < counter.n; n += 1) for (const kind of USAGE_KINDS) expected[kind]! += usageOf(n)[kind];
    expect(body.rows).toHaveLength(1);
    expect(body.totals.tokens).toEqual(expected);
    expect(body.rows[0]).toEqual({ ...body.totals });
  });

  it('groups by operation, model and day, and each row’s credits add up to the total', async () => {
    const body = (await statement(`from=${DAYS[0]}&to=${DAYS[2]}&groupBy=operation,model&groupBy=day`)).body as UsageStatement;
    expect(body.groupBy).toEqual(['operation', 'model', 'day']);
    // Three days × two operations with one model each; the disabled operation's refusals make lines of their own.
    expect(body.rows.map((row) => [row.day, row.operationId, row.model])).toEqual(
      DAYS.flatMap((day) => [
        [day, 'stmt.classify', 'model-b'],
        [day, 'stmt.off', 'scripted-model'],
        [day, 'stmt.summarise', 'model-a'],
      ]),
    );
    expect(body.rows.reduce((sum, row) => sum + row.credits, 0)).toBe(body.totals.credits);
  });

  it('covers whole UTC days only: a one-day period holds that day’s charges and no other', async () => {
    const body = (await statement(`from=${DAYS[1]}&to=${DAYS[1]}`)).body as UsageStatement;
    expect(body.totals.credits).toBe(runs.filter((run) => run.day === DAYS[1]).reduce((sum, run) => sum + run.summary.charge, 0));
  });

  it('answers text/csv with the same rows, in the same order, with the same figures', async () => {
    const query = `from=${DAYS[0]}&to=${DAYS[2]}&groupBy=day,operation`;
    const json = (await statement(query)).body as UsageStatement;
    const csv = await statement(query, 'text/csv');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const rows = csvRows(csv.text);
    expect(rows).toHaveLength(json.rows.length);
    rows.forEach((row, index) => {
      const expected: UsageStatementRow = json.rows[index]!;
      expect(row).toMatchObject({ day: expected.day, operationId: expected.operationId, credits: String(expected.credits), settled: String(expected.settled), refused: String(expected.refused) });
      expect(row.outcome_completed).toBe(String(expected.outcomes.completed ?? 0));
      expect(row.refused_operation_disabled).toBe(String(expected.refusals.operation_disabled ?? 0));
      for (const kind of USAGE_KINDS) expect(row[kind]).toBe(String(expected.tokens[kind]));
    });
    expect(Object.keys(rows[0]!)).not.toContain('model');
  });

  it.each([
    ['no period', '', 'from'],
    ['a day that is not one', 'from=2026-02-30&to=2026-03-01', 'from'],
    ['an end before the start', 'from=2026-11-04&to=2026-11-02', 'to'],
    ['a period over 366 days', 'from=2025-01-01&to=2026-11-04', 'to'],
    ['an unknown grouping', 'from=2026-11-02&to=2026-11-02&groupBy=workspace', 'groupBy[0]'],
    ['an unknown parameter', 'from=2026-11-02&to=2026-11-02&format=xml', 'format'],
  ])('refuses %s with a 400 naming the field', async (_what, query, field) => {
    const response = await statement(query);
    expect(response.status).toBe(400);
    expect(Object.keys(response.body.fields)).toContain(field);
  });

  it('is for that organization’s admin, the operator and auditors: a member is refused, another organization reads as unknown', async () => {
    const path = `/v1/organizations/acme/usage?from=${DAYS[0]}&to=${DAYS[0]}`;
    expect((await ledger.http().get(path).set('Authorization', `Bearer ${TOKENS.auditor}`)).status).toBe(200);
    expect((await ledger.http().get(path).set('Authorization', `Bearer ${TOKENS.system}`)).status).toBe(200);
    expect((await ledger.http().get(path).set('Authorization', `Bearer ${TOKENS.acmeMember}`)).status).toBe(403);
    expect((await ledger.http().get(path).set('Authorization', `Bearer ${TOKENS.globexAdmin}`)).status).toBe(404);
  });

  it('audits clean: the three read models rebuild equal and each day’s statement credits equal the charges its invocation streams settled', async () => {
    const io = new MemoryIo();
    const eventStore = ledger.app.get<EventStore>(EVENT_STORE);
    const readStore = ledger.app.get<SqliteReadModelStore>(READ_MODEL_STORE);
    expect((await auditVerify({ eventStore, readStore, io, json: true })).exitCode).toBe(EXIT_OK);

    // A statement line that no longer matches the log: caught by the rebuild and by the cross-check.
    const id = usageDayId('acme', DAYS[1], 'stmt.summarise', 'model-a');
    const line = readStore.get<UsageDayView>(USAGE_STATEMENTS_PROJECTION, USAGE_DAY_COLLECTION, id)!;
    readStore.write((session) => session.documents(USAGE_STATEMENTS_PROJECTION).put(USAGE_DAY_COLLECTION, id, { ...line, credits: line.credits - 1 }, { indexKey: 'acme' }));
    const tampered = new MemoryIo();
    expect((await auditVerify({ eventStore, readStore, io: tampered, json: true })).exitCode).toBe(EXIT_DIFFERENCES);
    const chargesOfDay = runs.filter((run) => run.day === DAYS[1]).reduce((sum, run) => sum + run.summary.charge, 0);
    expect(tampered.json()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'projection_document', projection: USAGE_STATEMENTS_PROJECTION, collection: USAGE_DAY_COLLECTION }),
        { kind: 'statement_credits', organizationId: 'acme', day: DAYS[1], statementCredits: chargesOfDay - 1, invocationCharges: chargesOfDay },
      ]),
    );
    readStore.write((session) => session.documents(USAGE_STATEMENTS_PROJECTION).put(USAGE_DAY_COLLECTION, id, line, { indexKey: 'acme' }));
  });
});
