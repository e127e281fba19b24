/**
 * The gateway's accounting side (docs/gateway.md) through the real service: the rate card and keys
 * over the API, then admission and settlement of calls through GATEWAY_ACCOUNTING as the `/anthropic`
 * routes call them. Money: a call's charge never exceeds its hold, and concurrent calls never take
 * the organization's credits or a key's limit below zero.
 */
import { GATEWAY_ACCOUNTING, type GatewayAccounting, type GatewayAdmission, type MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { EVENT_STORE, type EventStore } from '../../src/event-store/event-store.port';
import { NO_USAGE } from '../../src/runtime/usage';
import { bearer, HttpLedger, startHttpLedger, TOKENS } from '../http/support/http-ledger';
import { NO_TOOLS } from './support/body-facts';

const MODEL = 'claude-sonnet-5-5';
const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300 };
const facts = (overrides: Partial<MessagesBodyFacts> = {}): MessagesBodyFacts => ({
  bodyBytes: 1_000,
  model: MODEL,
  maxTokens: 1_000,
  stream: false,
  imageBlocks: 0,
  documentBlocks: 0,
  ...NO_TOOLS,
  ...overrides,
});
const OK = (usage = { ...NO_USAGE, inputTokens: 1_234, outputTokens: 56 }) => ({
  startedAtMs: 0,
  durationMs: 5,
  classification: 'ok' as const,
  httpStatus: 200,
  usage,
  timedOut: false,
  callerDisconnected: false,
});

describe('gateway calls are admitted at their worst-case hold and settled at Anthropic’s usage (docs/gateway.md)', () => {
  let ledger: HttpLedger;
  let accounting: GatewayAccounting;

  const balance = async (organizationId: string) =>
    (await ledger.http().get(`/v1/organizations/${organizationId}/balance`).set(bearer(TOKENS.system)).expect(200)).body as { available: number; held: number; charged: number; running: number };
  const grant = (organizationId: string, credits: number, idempotencyKey: string) =>
    ledger.http().post(`/v1/organizations/${organizationId}/grants`).set(bearer(TOKENS.system)).send({ credits, reason: 'test', idempotencyKey }).expect(200);
  const issue = async (organizationId: string, body: Record<string, unknown>) =>
    (await ledger.http().post(`/v1/organizations/${organizationId}/gateway-keys`).set(bearer(TOKENS.system)).send(body).expect(200)).body as { key: string; keyId: string };
  /** Admits a call and, right after its key check (its first append is the estimate), changes the key with `change`. */
  const admitChangingKeyBeforeHold = async (key: string, change: () => PromiseLike<unknown>): Promise<GatewayAdmission> => {
    const repository = ledger.app.get(AggregateRepository);
    // The hold's commit (with the estimate, the reservation and the dispatch) is the call's first append.
    const handleAlongside = repository.handleAlongside.bind(repository);
    const spy = jest.spyOn(repository, 'handleAlongside').mockImplementationOnce(async (...args: Parameters<AggregateRepository['handleAlongside']>) => {
      await change();
      return handleAlongside(...args);
    });
    try {
      return await accounting.admit({ presentedKey: key, facts: facts(), requestId: 'r' });
    } finally {
      spy.mockRestore();
    }
  };

  beforeAll(async () => {
    ledger = await startHttpLedger({ env: { LEDGER_MAX_RUNNING: '1000' } });
    accounting = ledger.app.get<GatewayAccounting>(GATEWAY_ACCOUNTING);
    await ledger.http().put(`/v1/gateway/models/${MODEL}`).set(bearer(TOKENS.system)).send({ prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true }).expect(200, { model: MODEL, version: 1 });
  });
  afterAll(() => ledger.close());

  it('prices a model on a versioned rate card that operators and auditors can read', async () => {
    const { body } = await ledger.http().get(`/v1/gateway/models/${MODEL}`).set(bearer(TOKENS.auditor)).expect(200);
    expect(body.versions).toHaveLength(1);
    expect(body.versions[0]).toMatchObject({ version: 1, maxOutputTokens: 64_000, enabled: true, prices: { ...PRICES, webSearchPerThousand: 0 } });
    // A geography cheaper than 1× would let a call cost more than its hold; a misspelt optional rate would silently take its fallback.
    const refused = (prices: Record<string, unknown>) =>
      ledger.http().put(`/v1/gateway/models/${MODEL}`).set(bearer(TOKENS.system)).send({ prices, maxOutputTokens: 1, attemptTimeoutMs: 1, enabled: true }).expect(400);
    expect((await refused({ ...PRICES, inferenceGeo: { us: 9_000 } })).body.fields).toHaveProperty(['prices.inferenceGeo.us']);
    expect((await refused({ ...PRICES, cacheWrite1hPerMtok: 6_000 })).body.fields).toHaveProperty(['prices.cacheWrite1hPerMtok']);
    expect((await refused({ ...PRICES, fast: { ...PRICES, turbo: 1 } })).body.fields).toHaveProperty(['prices.fast.turbo']);
  });

  it('holds the worst case, charges the price of the usage reported, and releases the rest', async () => {
    await grant('acme', 1_000_000, 'g-acme');
    const { key, keyId } = await issue('acme', { name: 'ci-bot' });
    expect(key).toMatch(/^llk_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43,}$/);
    const admission = await accounting.admit({ presentedKey: key, facts: facts(), requestId: 'r-1' });
    expect(admission).toMatchObject({ admitted: true, keyId, organizationId: 'acme' });
    const admitted = admission as Extract<GatewayAdmission, { admitted: true }>;
    // Input at the highest input-side rate (1-hour cache writes): (1,000 bytes + 4,096 framing) × 6,000
    // + 1,000 × 15,000 millionths = 45.576 credits → 46.
    expect(admitted.holdCredits).toBe(46);
    expect((await balance('acme')).held).toBe(46);
    await accounting.settle(admitted, OK());
    // 1,234 × 3,000 + 56 × 15,000 = 4,542,000 millionths → 5 credits.
    expect(await balance('acme')).toMatchObject({ held: 0, running: 0, charged: 5, available: 999_995 });
    const { body } = await ledger.http().get(`/v1/invocations/${admitted.invocationId}`).set(bearer(TOKENS.system)).expect(200);
    expect(body).toMatchObject({ state: 'settled', outcome: 'completed', estimate: 46, charge: 5 });
  });

  it('asks for the hold\'s commit, which the dispatch waits on, to be durable at once, and the settlement\'s, which only the caller\'s last bytes wait on, off the event loop (docs/gateway.md)', async () => {
    await grant('hurry', 1_000, 'g-hurry');
    const { key } = await issue('hurry', { name: 'at-once' });
    const repository = ledger.app.get(AggregateRepository);
    const spy = jest.spyOn(repository, 'handleAlongside');
    try {
      const admission = await accounting.admit({ presentedKey: key, facts: facts(), requestId: 'r-at-once' });
      await accounting.settle(admission as Extract<GatewayAdmission, { admitted: true }>, OK());
      const contexts = spy.mock.calls.map((call) => call[4]);
      expect(contexts).toEqual([
        expect.objectContaining({ durableAtOnce: true }),
        expect.objectContaining({ durableOffLoop: true }),
      ]);
      expect(contexts[0]).not.toHaveProperty('durableOffLoop');
      expect(contexts[1]).not.toHaveProperty('durableAtOnce');
    } finally {
      spy.mockRestore();
    }
  });

  it('refuses an unknown or revoked key (401), an unknown model (404), a model the key may not use (403) and max_tokens over a cap (400), holding nothing', async () => {
    await grant('refusals', 1_000, 'g-refusals');
    const { key, keyId } = await issue('refusals', { name: 'narrow', models: ['other-model'], maxOutputTokens: 100 });
    const wide = await issue('refusals', { name: 'wide', maxOutputTokens: 100 });
    const admit = (presentedKey: string, f: Partial<MessagesBodyFacts> = {}) => accounting.admit({ presentedKey, facts: facts(f), requestId: 'r' });
    expect(await admit('sk-ant-not-ours')).toMatchObject({ admitted: false, status: 401, errorType: 'authentication_error' });
    expect(await admit(`${key}x`)).toMatchObject({ admitted: false, status: 401 });
    expect(await admit(wide.key, { model: 'nope' })).toMatchObject({ admitted: false, status: 404, errorType: 'not_found_error' });
    expect(await admit(key)).toMatchObject({ admitted: false, status: 403, errorType: 'permission_error' });
    expect(await admit(wide.key, { maxTokens: 101 })).toMatchObject({ admitted: false, status: 400, errorType: 'invalid_request_error', message: expect.stringContaining('maxOutputTokens') });
    await ledger.http().delete(`/v1/organizations/refusals/gateway-keys/${wide.keyId}`).set(bearer(TOKENS.system)).expect(200);
    expect(await admit(wide.key, { maxTokens: 1 })).toMatchObject({ admitted: false, status: 401 });
    expect(await balance('refusals')).toMatchObject({ held: 0, charged: 0, running: 0 });
    void keyId;
  });

  it('quotes the key’s name as JSON in its refusals, as the explanation does: a name with quotes or a line break stays inside its quotes', async () => {
    await grant('quoting', 1_000, 'g-quoting');
    const name = 'ops "prod"\nignore this';
    const quoted = JSON.stringify(name);
    const narrow = await issue('quoting', { name, models: ['other-model'] });
    const capped = await issue('quoting', { name, maxOutputTokens: 10, spendLimit: { credits: 5, period: 'total' } });
    const admit = (presentedKey: string, f: Partial<MessagesBodyFacts> = {}) => accounting.admit({ presentedKey, facts: facts(f), requestId: 'r' });
    expect(await admit(narrow.key)).toMatchObject({ status: 403, message: `key ${quoted} may not call ${MODEL}` });
    expect(await admit(capped.key, { maxTokens: 11 })).toMatchObject({ status: 400, message: `max_tokens: 11 is over 10, key ${quoted}'s maxOutputTokens` });
    const limited = await admit(capped.key, { maxTokens: 10 });
    expect(limited).toMatchObject({ status: 402, message: expect.stringMatching(/^key "ops \\"prod\\"\\nignore this" spend limit: 5 credits in total; /) });
    expect((limited as { message: string }).message).not.toContain('\n');
  });

  it('refuses at once a call whose key is revoked between the key check and the hold: 401, recorded as key_revoked (transition 1), nothing held (STATE-PFM-LLM-001 transition 1)', async () => {
    await grant('revoked', 1_000, 'g-revoked');
    const { key, keyId } = await issue('revoked', { name: 'late' });
    const refused = await admitChangingKeyBeforeHold(key, () => ledger.http().delete(`/v1/organizations/revoked/gateway-keys/${keyId}`).set(bearer(TOKENS.system)).expect(200));
    expect(refused).toMatchObject({ admitted: false, status: 401, errorType: 'authentication_error', invocationId: expect.any(String) });
    const { invocationId } = refused as { invocationId: string };
    const { body } = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system)).expect(200);
    expect(body).toMatchObject({ state: 'refused', refusalReason: 'key_revoked', charge: 0 });
    const events = await ledger.app.get<EventStore>(EVENT_STORE).readStream(`invocation-${invocationId}`);
    expect(events.map((event) => event.type)).toEqual(['InvocationEstimated', 'InvocationRefused']);
    expect(events[1]!.data).toMatchObject({ reason: 'key_revoked', figures: { keyId }, transition: 1 });
    const explanation = await ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.system)).expect(200);
    expect(explanation.body.sentence).toBe(`Gateway call by key "late" to ${MODEL} refused (401 key_revoked): the key was revoked before the hold was placed, so nothing was held or sent upstream.`);
    expect(await balance('revoked')).toMatchObject({ held: 0, running: 0, charged: 0, available: 1_000 });
  });

  it.each([
    ['its models no longer include the call’s', { models: ['claude-other'] }, 403, 'permission_error', 'key_model_not_allowed', { model: MODEL }, `the key's models were changed before the hold was placed and no longer include ${MODEL}`],
    ['its max_tokens cap falls below the call’s', { maxOutputTokens: 999 }, 400, 'invalid_request_error', 'key_max_tokens', { maxTokens: 1_000, maxOutputTokens: 999 }, "the key's max_tokens cap was lowered to 999 before the hold was placed, below the call's 1,000"],
  ])(
    'refuses at once a call whose key changes between the key check and the hold so that %s: recorded, explained, nothing held (STATE-PFM-LLM-001 transition 1)',
    async (_what, change, status, errorType, reason, figures, clause) => {
      const organizationId = `narrowed-${reason}`;
      await grant(organizationId, 1_000, `g-${reason}`);
      const { key, keyId } = await issue(organizationId, { name: 'narrowed' });
      const refused = await admitChangingKeyBeforeHold(key, () =>
        ledger.http().patch(`/v1/organizations/${organizationId}/gateway-keys/${keyId}`).set(bearer(TOKENS.system)).send({ name: 'narrowed', ...change }).expect(200),
      );
      expect(refused).toMatchObject({ admitted: false, status, errorType, invocationId: expect.any(String) });
      const { invocationId } = refused as { invocationId: string };
      const events = await ledger.app.get<EventStore>(EVENT_STORE).readStream(`invocation-${invocationId}`);
      expect(events.map((event) => event.type)).toEqual(['InvocationEstimated', 'InvocationRefused']);
      expect(events[1]!.data).toMatchObject({ reason, figures: { keyId, ...figures }, transition: 1 });
      const explanation = await ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.system)).expect(200);
      expect(explanation.body.sentence).toBe(`Gateway call by key "narrowed" to ${MODEL} refused (${status} ${reason}): ${clause}, so nothing was held or sent upstream.`);
      expect(await balance(organizationId)).toMatchObject({ held: 0, running: 0, charged: 0, available: 1_000 });
    },
  );

  it('refuses a call the organization cannot hold with 402 billing_error, recorded and explained', async () => {
    await grant('poor', 10, 'g-poor');
    const { key } = await issue('poor', { name: 'bot' });
    const refused = await accounting.admit({ presentedKey: key, facts: facts(), requestId: 'r' });
    expect(refused).toMatchObject({ admitted: false, status: 402, errorType: 'billing_error', message: 'insufficient credits: available 10 < hold 46' });
    const { invocationId } = refused as { invocationId: string };
    const { body } = await ledger.http().get(`/v1/invocations/${invocationId}`).set(bearer(TOKENS.system)).expect(200);
    expect(body).toMatchObject({ state: 'refused' });
  });

  it('never lets 200 concurrent calls on one organization take its credits or a key’s day limit below zero; charged = Σ prices, every hold released', async () => {
    // Credits for 5 worst cases of 46, and a key limit of 4 worst cases a day.
    await grant('crowd', 230, 'g-crowd');
    const { key } = await issue('crowd', { name: 'crowd-bot', spendLimit: { credits: 184, period: 'day' } });
    const calls = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const admission = await accounting.admit({ presentedKey: key, facts: facts(), requestId: 'r' });
        if (!admission.admitted) return { admitted: false as const, status: admission.status, price: 0 };
        const seen = await balance('crowd');
        expect(seen.available).toBeGreaterThanOrEqual(0);
        await accounting.settle(admission, OK());
        return { admitted: true as const, status: 200, price: 5 };
      }),
    );
    const admitted = calls.filter((call) => call.admitted);
    expect(admitted.length).toBeGreaterThan(0);
    expect(calls.every((call) => call.admitted || call.status === 402 || call.status === 429)).toBe(true);
    const after = await balance('crowd');
    expect(after).toMatchObject({ held: 0, running: 0, charged: admitted.reduce((sum, call) => sum + call.price, 0) });
    expect(after.available).toBeGreaterThanOrEqual(0);
    const { body } = await ledger.http().get('/v1/organizations/crowd/gateway-keys').set(bearer(TOKENS.system)).expect(200);
    expect(body.keys[0].spentCredits).toBe(after.charged);
    expect(body.keys[0].spentCredits + body.keys[0].heldCredits).toBeLessThanOrEqual(184);
  });
});
