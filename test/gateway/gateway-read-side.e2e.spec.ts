/**
 * The read side covers gateway calls (docs/gateway.md): explanations, the invocation view and list,
 * statements grouped by key (JSON and CSV), and read models that rebuild equal and audit clean from a
 * log holding gateway calls beside an operation's invocations. Calls are driven through
 * GATEWAY_ACCOUNTING as the `/anthropic` routes drive them.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ALL_PROJECTIONS } from '../../projections';
import { EXIT_OK } from '../../src/cli/cli-io';
import { runCli } from '../../src/cli/run-cli';
import { GATEWAY_ACCOUNTING, type GatewayAccounting, type GatewayAdmission, type GatewayCallOutcome, type MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import { compareReadModels, LiveProjections, openReadModelStore, readModelPathFor } from '../../src/projection-runner';
import type { UsageStatement } from '../../src/queries/get-usage.query';
import { scriptedToolUse, type Clock } from '../../src/runtime';
import { NO_USAGE } from '../../src/runtime/usage';
import { MemoryIo } from '../cli/support/memory-io';
import { bearer, publicationBody, startHttpLedger, TOKENS, type HttpLedger } from '../http/support/http-ledger';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { ShiftedClock } from '../support/shifted-clock';
import { NO_TOOLS } from './support/body-facts';

const MODEL = 'claude-sonnet-5-5';
const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300 };
/** (1,000 bytes + 4,096 framing) × 6,000 + 1,000 × 15,000 millionths → 46 credits. */
const HOLD = 46;
const FACTS: MessagesBodyFacts = { bodyBytes: 1_000, model: MODEL, maxTokens: 1_000, stream: true, imageBlocks: 0, documentBlocks: 0, ...NO_TOOLS };
/** A key name an administrator could set that a spreadsheet would run as a formula. */
const FORMULA_NAME = '=HYPERLINK("http://example.invalid","bot")';
const OPERATION = 'gwread.answer';
const SQLITE_SUFFIXES = ['', '-wal', '-shm'];
const SWEEP_AFTER_MS = 3_600_000;
/** The day the calls are made, by the service's clock: from 09:00 UTC, so the sweep two hours on is the same day. */
const DAY = '2026-11-02';
const START_MS = Date.parse(`${DAY}T09:00:00.000Z`);

type Admitted = Extract<GatewayAdmission, { admitted: true }>;
const outcome = (clock: Clock, overrides: Partial<GatewayCallOutcome>): GatewayCallOutcome => ({
  startedAtMs: clock.now(),
  durationMs: 5,
  classification: 'ok',
  httpStatus: 200,
  timedOut: false,
  callerDisconnected: false,
  ...overrides,
});

interface RecordedCalls {
  readonly ledger: HttpLedger;
  readonly calls: Record<'completed' | 'failed' | 'unmeasured' | 'refused' | 'swept', string>;
  readonly keys: Record<'ciBot' | 'formula' | 'capped', { key: string; keyId: string }>;
  /** The UTC day the calls were made and settled on, by the service's clock. */
  readonly today: string;
}

/**
 * A service whose log holds one of each gateway call: completed, failed upstream, unmeasured, refused
 * by its key's limit, and one a crash left dispatched that the sweep settled; plus an operation's
 * invocation beside them.
 */
async function recordGatewayCalls(): Promise<RecordedCalls> {
  const clock = new ShiftedClock();
  clock.jumpTo(START_MS);
  const ledger = await startHttpLedger({
    clock,
    // Recovery off: after the jump below, a recovery pass would settle the call the sweep must find.
    env: { LEDGER_RECOVERY_INTERVAL_MS: '0' },
    keepDirectory: true,
    features: [scriptedFeature(OPERATION, () => [scriptedToolUse([{ id: 'a', name: 'submit_answer', input: { value: 42 } }], { usage: usage(100, 10) })])],
  });
  const accounting = ledger.app.get<GatewayAccounting>(GATEWAY_ACCOUNTING);
  const admit = async (key: string): Promise<Admitted> => {
    const admission = await accounting.admit({ presentedKey: key, facts: FACTS, requestId: 'r' });
    if (!admission.admitted) throw new Error(`not admitted: ${admission.message}`);
    return admission;
  };
  const system = bearer(TOKENS.system);
  await ledger.http().put(`/v1/gateway/models/${MODEL}`).set(system).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200);
  await ledger.http().put(`/v1/operations/${OPERATION}/publications`).set(system).send(publicationBody()).expect(200);
  await ledger.http().post('/v1/organizations/acme/grants').set(system).send({ credits: 1_000_000, reason: 'test', idempotencyKey: 'g-acme' }).expect(200);
  const issue = async (body: Record<string, unknown>) => (await ledger.http().post('/v1/organizations/acme/gateway-keys').set(system).send(body).expect(200)).body as { key: string; keyId: string };
  const keys = { ciBot: await issue({ name: 'ci-bot' }), formula: await issue({ name: FORMULA_NAME }), capped: await issue({ name: 'capped', spendLimit: { credits: 10, period: 'day' } }) };

  const completed = await admit(keys.ciBot.key);
  await accounting.settle(completed, outcome(clock, { usage: { ...NO_USAGE, inputTokens: 1_234, outputTokens: 56 }, responseModel: `${MODEL}-20261001` }));
  const failed = await admit(keys.formula.key);
  await accounting.settle(failed, outcome(clock, { classification: 'overloaded', httpStatus: 529 }));
  const unmeasured = await admit(keys.ciBot.key);
  await accounting.settle(unmeasured, outcome(clock, { classification: 'timeout', httpStatus: undefined, timedOut: true }));
  const refused = await accounting.admit({ presentedKey: keys.capped.key, facts: FACTS, requestId: 'r' });
  expect(refused).toMatchObject({ admitted: false, status: 402 });
  // Admitted and sent upstream, then the process "dies": nothing settles it but the sweep.
  const swept = await admit(keys.ciBot.key);
  await ledger.http().post('/v1/invocations').set(bearer(TOKENS.acmeMember)).send({ operationId: OPERATION, organizationId: 'acme', input: { question: 'q' } }).expect(200);
  clock.jumpTo(START_MS + 2 * SWEEP_AFTER_MS);
  const sweep = await ledger.http().post('/v1/settlements/sweep').set(system).send({ olderThanMs: SWEEP_AFTER_MS }).expect(200);
  expect(sweep.body.settled).toEqual([expect.objectContaining({ invocationId: swept.invocationId, transition: 14, chargeCredits: HOLD })]);
  // Stopping the service does not catch its read models up: the files compared below must hold every event.
  await ledger.app.get(LiveProjections).caughtUp();
  const calls = {
    completed: completed.invocationId,
    failed: failed.invocationId,
    unmeasured: unmeasured.invocationId,
    refused: (refused as { invocationId: string }).invocationId,
    swept: swept.invocationId,
  };
  return { ledger, calls, keys, today: DAY };
}

describe('the read side covers gateway calls: explanations, invocations and statements by key (docs/gateway.md)', () => {
  let ledger: HttpLedger;
  let calls: RecordedCalls['calls'];
  let keys: RecordedCalls['keys'];
  let today: string;
  const get = (path: string, token: string = TOKENS.system) => ledger.http().get(path).set(bearer(token));

  beforeAll(async () => {
    ({ ledger, calls, keys, today } = await recordGatewayCalls());
  }, 60_000);

  afterAll(async () => {
    await ledger?.close();
    if (ledger !== undefined) rmSync(ledger.directory, { recursive: true, force: true });
  });

  it('explains each call in the gateway’s terms, its fields naming the key, the model and the rate card version', async () => {
    const sentence = async (invocationId: string) => (await get(`/v1/invocations/${invocationId}/explanation`, TOKENS.acmeMember).expect(200)).body;
    const completed = await sentence(calls.completed);
    expect(completed.sentence).toBe(`Gateway call by key "ci-bot" to ${MODEL}: 1,234 input and 56 output tokens; held ${HOLD}, charged 5.`);
    expect(completed).toMatchObject({
      operationId: 'gateway.anthropic-messages',
      publicationVersion: 1,
      gateway: { keyId: keys.ciBot.keyId, keyName: 'ci-bot', model: MODEL, rateCardVersion: 1, stream: true, classification: 'ok', httpStatus: 200, usage: { inputTokens: 1_234, outputTokens: 56 } },
      credits: { spent: 5, hold: HOLD, charge: 5 },
      settlement: { transition: 8, by: 'runtime' },
    });
    expect((await sentence(calls.failed)).sentence).toBe(
      `Gateway call by key ${JSON.stringify(FORMULA_NAME)} to ${MODEL} failed: overloaded — the provider was overloaded (HTTP 529): no usage was reported; held ${HOLD}, charged 0.`,
    );
    expect((await sentence(calls.unmeasured)).sentence).toBe(`Gateway call by key "ci-bot" to ${MODEL}: it reached its time bound before its final usage was reported, so it was charged its ${HOLD}-credit hold.`);
    expect((await sentence(calls.refused)).sentence).toBe(
      `Gateway call by key "capped" to ${MODEL} refused (402 key_spend_limit): the key may spend 10 credits in ${today} (UTC day); it spent 0 and holds 0, so 10 remain < hold ${HOLD}.`,
    );
    const swept = await sentence(calls.swept);
    // The clock jumped two hours past the instance's lease: the sweep counts the instance as stopped (issue 31, finding 2).
    expect(swept.sentence).toMatch(
      new RegExp(
        `^Gateway call by key "ci-bot" to ${MODEL}: the instance that ran it stopped: its lease expired at \\S+Z while the call was in flight, so its usage was never learned and it was charged its ${HOLD}-credit hold \\(settled by sweep\\)\\.$`,
      ),
    );
    expect(swept.settlement).toMatchObject({ transition: 14, by: 'sweep', chargeCredits: HOLD, recovery: { because: 'lease_expired' } });
  });

  it('shows a call’s key and model in its invocation view and in the list; an operation’s invocation has none', async () => {
    const view = (await get(`/v1/invocations/${calls.completed}`, TOKENS.acmeMember).expect(200)).body;
    expect(view).toMatchObject({ operationId: 'gateway.anthropic-messages', gateway: { keyId: keys.ciBot.keyId, keyName: 'ci-bot', model: MODEL }, estimate: HOLD, charge: 5 });
    const { invocations } = (await get('/v1/organizations/acme/invocations?limit=500', TOKENS.acmeMember).expect(200)).body as { invocations: { invocationId: string; operationId: string; gateway?: unknown }[] };
    expect(invocations).toHaveLength(6);
    expect(invocations.find((entry) => entry.invocationId === calls.failed)).toMatchObject({ state: 'settled', gateway: { keyId: keys.formula.keyId, keyName: FORMULA_NAME, model: MODEL } });
    expect(invocations.find((entry) => entry.invocationId === calls.refused)).toMatchObject({ state: 'refused', refusalReason: 'key_spend_limit', gateway: { keyName: 'capped' } });
    const operation = invocations.find((entry) => entry.operationId === OPERATION)!;
    expect(operation).not.toHaveProperty('gateway');
  });

  it('groups the statement by key: each key’s charges, outcomes and refusals, and an empty key for the operation', async () => {
    const statement = (await get(`/v1/organizations/acme/usage?from=${today}&to=${today}&groupBy=key`).expect(200)).body as UsageStatement;
    expect(statement.groupBy).toEqual(['key']);
    const byName = Object.fromEntries(statement.rows.map((row) => [row.keyName, row]));
    expect(Object.keys(byName).sort()).toEqual(['', FORMULA_NAME, 'capped', 'ci-bot'].sort());
    expect(byName['ci-bot']).toMatchObject({ keyId: keys.ciBot.keyId, credits: 5 + HOLD + HOLD, settled: 3, outcomes: { completed: 2, unfinished: 1 } });
    expect(byName['ci-bot']!.tokens).toMatchObject({ inputTokens: 1_234, outputTokens: 56 });
    expect(byName[FORMULA_NAME]).toMatchObject({ keyId: keys.formula.keyId, credits: 0, settled: 1, outcomes: { failed: 1 } });
    expect(byName.capped).toMatchObject({ keyId: keys.capped.keyId, credits: 0, settled: 0, refused: 1, refusals: { key_spend_limit: 1 } });
    expect(byName['']).toMatchObject({ keyId: '', settled: 1 });
    expect(statement.rows.reduce((sum, row) => sum + row.credits, 0)).toBe(statement.totals.credits);
    const byModel = (await get(`/v1/organizations/acme/usage?from=${today}&to=${today}&groupBy=model,key`).expect(200)).body as UsageStatement;
    expect(byModel.rows.filter((row) => row.model === MODEL).map((row) => row.keyName).sort()).toEqual([FORMULA_NAME, 'capped', 'ci-bot'].sort());

    // The CSV: the key's columns, the formula written as text, the JSON's value unchanged.
    const csv = await get(`/v1/organizations/acme/usage?from=${today}&to=${today}&groupBy=key`).set('Accept', 'text/csv').expect(200);
    const [header, ...lines] = csv.text.trimEnd().split('\r\n');
    expect(header!.split(',').slice(0, 3)).toEqual(['keyId', 'keyName', 'credits']);
    expect(lines.filter((line) => line.startsWith(`${keys.formula.keyId},"'=HYPERLINK(""http://example.invalid"",""bot"")",0,`))).toHaveLength(1);
    expect(lines.some((line) => line.includes(`,${FORMULA_NAME},`) || line.includes(',"=HYPERLINK'))).toBe(false);
  });
});

describe('gateway calls in the log: the read models rebuild equal and audit clean (`projections rebuild`, `audit verify`)', () => {
  let recorded: RecordedCalls;

  beforeAll(async () => {
    recorded = await recordGatewayCalls();
    // The CLI works on a stopped service's files.
    await recorded.ledger.close();
  }, 60_000);

  afterAll(() => rmSync(recorded.ledger.directory, { recursive: true, force: true }));

  it('rebuilds the read models equal to the live ones and audits clean on a log with gateway calls (`projections rebuild`, `audit verify`)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'llm-ledger-gwread-'));
    try {
      for (const name of ['ledger.sqlite', readModelPathFor('ledger.sqlite')]) {
        for (const suffix of SQLITE_SUFFIXES) {
          if (existsSync(join(recorded.ledger.directory, name + suffix))) copyFileSync(join(recorded.ledger.directory, name + suffix), join(directory, name + suffix));
        }
      }
      const store = `sqlite:${join(recorded.ledger.directory, 'ledger.sqlite')}`;
      const audit = new MemoryIo();
      expect(await runCli(['audit', 'verify', '--store', store], { io: audit, env: {} })).toBe(EXIT_OK);
      expect(audit.stdoutText).toMatch(/^audit verify: OK — 8 projections rebuilt and compared; 1 organization, 6 invocations, \d+ events audited\.\n$/);
      const rebuild = new MemoryIo();
      expect(await runCli(['projections', 'rebuild', '--store', store], { io: rebuild, env: {} })).toBe(EXIT_OK);
      const rebuilt = openReadModelStore({ path: join(recorded.ledger.directory, readModelPathFor('ledger.sqlite')) });
      const live = openReadModelStore({ path: join(directory, readModelPathFor('ledger.sqlite')) });
      try {
        const comparison = compareReadModels({ actual: live, expected: rebuilt, projections: ALL_PROJECTIONS.map((projection) => projection.name) });
        expect(comparison.projections.filter((projection) => !projection.equal)).toEqual([]);
        expect(comparison.equal).toBe(true);
      } finally {
        rebuilt.close();
        live.close();
      }
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
