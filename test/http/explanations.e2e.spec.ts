import { scriptedFault, scriptedText, scriptedToolUse, type ScriptedStep } from '../../src/runtime';
import { scriptedFeature, usage } from '../support/scripted-feature';
import { bearer, HttpLedger, publicationBody, startHttpLedger, TOKENS } from './support/http-ledger';

const answer = (id = 'answer-1') => scriptedToolUse([{ id, name: 'submit_answer', input: { value: 42 } }], { usage: usage(10, 2) });

/** A model that never offers an answer: it keeps looking things up. */
function* neverConverges(): Generator<ScriptedStep> {
  for (let turn = 1; ; turn++) yield scriptedToolUse([{ id: `lookup-${turn}`, name: 'lookup', input: {} }], { usage: usage(10, 1) });
}

/** A request held in its first provider attempt until the test lets it go. */
const slot = { entered: () => {}, release: () => {} };
function* heldInFlight(): Generator<ScriptedStep> {
  yield async () => {
    const released = new Promise<void>((resolve) => (slot.release = resolve));
    slot.entered();
    await released;
    return answer();
  };
}

const FEATURES = [
  scriptedFeature('test.budget', neverConverges),
  scriptedFeature('test.overload', function* () {
    // The overloaded attempt reported usage, so it is billed on its own (a billed failure is never lost).
    yield scriptedFault('overloaded', { httpStatus: 529, usage: usage(50) });
    yield answer();
  }),
  scriptedFeature('test.completed', function* () {
    yield answer();
  }),
  scriptedFeature('test.tool-limit', function* () {
    yield scriptedToolUse(
      [
        { id: 'a', name: 'lookup', input: {} },
        { id: 'b', name: 'lookup', input: {} },
      ],
      { usage: usage(10, 1) },
    );
  }),
  scriptedFeature('test.credit-limit', function* () {
    yield scriptedToolUse([{ id: 'a', name: 'lookup', input: {} }], { usage: usage(400) });
    yield answer();
  }),
  scriptedFeature('test.refused-by-model', function* () {
    yield scriptedText('I cannot help with that.', { stopReason: 'refusal', usage: usage(10, 5) });
  }),
  scriptedFeature('test.incomplete', function* () {
    yield scriptedText('The answer is', { stopReason: 'max_tokens', usage: usage(10, 5) });
  }),
  scriptedFeature('test.protocol-error', function* () {
    yield scriptedToolUse(
      [
        { id: 'same', name: 'lookup', input: {} },
        { id: 'same', name: 'lookup', input: {} },
      ],
      { usage: usage(10, 1) },
    );
  }),
  scriptedFeature('test.failed', function* () {
    yield scriptedFault('malformed_request', { httpStatus: 400 });
  }),
  scriptedFeature('test.unpublished', function* () {
    yield answer();
  }),
  scriptedFeature('test.disabled', function* () {
    yield answer();
  }),
  scriptedFeature('test.held', heldInFlight),
  scriptedFeature('test.time-limit', function* () {
    // Slower than the whole conversation may take: the attempt times out and no retry fits.
    yield { ...answer(), latencyMs: 10_000 };
  }),
];

describe('explanations over HTTP (docs/http.md, ATS-PFM-LLM-002-12, ATS-PFM-LLM-002-13)', () => {
  let ledger: HttpLedger;
  const system = bearer(TOKENS.system);

  const publish = (operationId: string, overrides: Record<string, unknown> = {}) =>
    ledger.http().put(`/v1/operations/${operationId}/publications`).set(system).send(publicationBody(overrides)).expect(200);
  const limits = (overrides: Record<string, unknown>) => ({ ...(publicationBody().limits as object), ...overrides });
  const fund = (organizationId: string, credits: number) =>
    ledger.http().post(`/v1/organizations/${organizationId}/grants`).set(system).send({ credits, reason: 'test', idempotencyKey: `fund-${organizationId}` }).expect(200);
  const runFor = async (organizationId: string, operationId: string) =>
    (await ledger.http().post('/v1/invocations').set(system).send({ operationId, organizationId, input: { question: 'q' } }).expect(200)).body as {
      invocationId: string;
      state: string;
      outcome?: string;
      refusalReason?: string;
      charge: number;
      turnsUsed: number;
      publicationVersion?: number;
    };
  const run = (operationId: string) => runFor('acme', operationId);
  const explanation = async (invocationId: string) =>
    (await ledger.http().get(`/v1/invocations/${invocationId}/explanation`).set(bearer(TOKENS.auditor)).expect(200)).body as {
      state: string;
      outcome?: string;
      refusal?: { reason: string; figures: Record<string, number> };
      endingLimit?: { name: string; value: number; operationId: string; publicationVersion: number };
      turns: { used: number; limit?: number };
      retries: number;
      credits: { spent: number; hold: number; charge?: number };
      sentence: string;
    };

  beforeAll(async () => {
    ledger = await startHttpLedger({ features: FEATURES });
    await fund('acme', 1_000_000);
  });

  afterAll(() => ledger.close());

  describe('ATS-PFM-LLM-002-12 historical budgets explain a bounded conversation (BR-CAP-PFM-LLM-002-01)', () => {
    it('keeps the earlier request’s turn limit and version after a new publication, while the next request uses the new one', async () => {
      await publish('test.budget', { limits: limits({ maxTurns: 2 }) });
      const earlier = await run('test.budget');
      expect(earlier).toMatchObject({ state: 'settled', outcome: 'turn_limit', turnsUsed: 2, publicationVersion: 1 });

      await publish('test.budget', { limits: limits({ maxTurns: 4 }) });
      const earlierExplained = await explanation(earlier.invocationId);
      expect(earlierExplained.endingLimit).toEqual({ name: 'maxTurns', value: 2, operationId: 'test.budget', publicationVersion: 1 });
      expect(earlierExplained.sentence).toContain('used 2 of 2 turns (maxTurns of test.budget v1)');
      const earlierStatus = await ledger.http().get(`/v1/invocations/${earlier.invocationId}`).set(system).expect(200);
      expect(earlierStatus.body).toMatchObject({ publicationVersion: 1, turnsUsed: 2, endingLimit: 'maxTurns' });

      const later = await run('test.budget');
      expect(later).toMatchObject({ outcome: 'turn_limit', turnsUsed: 4, publicationVersion: 2 });
      const laterExplained = await explanation(later.invocationId);
      expect(laterExplained.endingLimit).toEqual({ name: 'maxTurns', value: 4, operationId: 'test.budget', publicationVersion: 2 });
    });
  });

  describe('ATS-PFM-LLM-002-13 attempt history explains retry outcomes (BR-CAP-PFM-LLM-002-07)', () => {
    it('numbers the retry after an overload as a retry of the same turn, with its own price, distinct from turns', async () => {
      await publish('test.overload');
      const result = await run('test.overload');
      expect(result).toMatchObject({ state: 'settled', outcome: 'completed', turnsUsed: 1 });

      const history = await ledger.http().get(`/v1/invocations/${result.invocationId}/attempts`).set(bearer(TOKENS.acmeMember)).expect(200);
      const attempts = history.body.attempts as Array<{ turn: number; retry: number; classification: string; httpStatus?: number; waitBeforeMs: number; priceCredits: number }>;
      expect(attempts.map(({ turn, retry, classification }) => ({ turn, retry, classification }))).toEqual([
        { turn: 1, retry: 0, classification: 'overloaded' },
        { turn: 1, retry: 1, classification: 'ok' },
      ]);
      expect(attempts[0]!.httpStatus).toBe(529);
      expect(attempts[1]!.waitBeforeMs).toBeGreaterThanOrEqual(500);
      // Each attempt priced from its own usage: 50 input tokens at 3,000,000 credits per million is 150.
      expect(attempts[0]!.priceCredits).toBe(150);
      expect(attempts[1]!.priceCredits).toBeGreaterThan(0);
      expect(history.body.attemptCount).toBe(2);
      expect(history.body.priceTotalCredits).toBe(attempts[0]!.priceCredits + attempts[1]!.priceCredits);
      expect(result.charge).toBe(history.body.priceTotalCredits);

      const explained = await explanation(result.invocationId);
      expect(explained).toMatchObject({ outcome: 'completed', turns: { used: 1 }, retries: 1 });
      expect(explained.sentence).toContain('after 1 of 6 turns');
      expect(explained.sentence).toContain('1 retry');
    });

    it('explains a request ended at its turn limit by naming the retained limit and the publication it came from', async () => {
      await publish('test.budget', { limits: limits({ maxTurns: 3 }) });
      const limited = await run('test.budget');
      const explained = await explanation(limited.invocationId);
      expect(explained).toMatchObject({ outcome: 'turn_limit', turns: { used: 3, limit: 3 } });
      expect(explained.endingLimit).toEqual({ name: 'maxTurns', value: 3, operationId: 'test.budget', publicationVersion: 3 });
      expect(explained.sentence).toContain('Ended by turn_limit: used 3 of 3 turns (maxTurns of test.budget v3)');
    });
  });

  describe('an explanation for each refusal reason (docs/lifecycle.md), naming the figures behind it', () => {
    it('ai_disabled', async () => {
      await publish('test.completed');
      await fund('dormant', 10_000);
      await ledger.http().put('/v1/organizations/dormant/settings').set(system).send({ aiEnabled: false }).expect(200);
      const refused = await runFor('dormant', 'test.completed');
      expect(refused).toMatchObject({ state: 'refused', refusalReason: 'ai_disabled', charge: 0 });
      const explained = await explanation(refused.invocationId);
      expect(explained.refusal).toMatchObject({ reason: 'ai_disabled', transition: 1 });
      expect(explained.sentence).toBe('Refused: ai_disabled — AI is switched off for organization dormant.');
    });

    it('unknown_operation', async () => {
      const refused = await run('test.unpublished');
      expect(refused).toMatchObject({ state: 'refused', refusalReason: 'unknown_operation' });
      expect((await explanation(refused.invocationId)).sentence).toBe('Refused: unknown_operation — test.unpublished has no published version.');
    });

    it('operation_disabled', async () => {
      await publish('test.disabled', { enabled: false });
      const refused = await run('test.disabled');
      expect(refused).toMatchObject({ state: 'refused', refusalReason: 'operation_disabled' });
      expect((await explanation(refused.invocationId)).sentence).toBe('Refused: operation_disabled — test.disabled v1 is published as disabled.');
    });

    it('insufficient_credits', async () => {
      await publish('test.completed', { creditHold: 500 });
      await fund('thrifty', 120);
      const refused = await runFor('thrifty', 'test.completed');
      expect(refused).toMatchObject({ state: 'refused', refusalReason: 'insufficient_credits' });
      const explained = await explanation(refused.invocationId);
      expect(explained.refusal).toMatchObject({ reason: 'insufficient_credits', figures: { available: 120, creditHold: 500 }, transition: 2 });
      expect(explained.sentence).toBe('Refused: insufficient_credits — available 120 < hold 500.');
    });

    it('no_running_slot', async () => {
      await publish('test.held');
      await fund('busy', 100_000);
      await ledger.http().put('/v1/organizations/busy/settings').set(system).send({ maxRunning: 1 }).expect(200);
      const inFlight = new Promise<void>((resolve) => (slot.entered = resolve));
      const first = runFor('busy', 'test.held');
      await inFlight;
      const refused = await runFor('busy', 'test.held');
      slot.release();
      expect(refused).toMatchObject({ state: 'refused', refusalReason: 'no_running_slot' });
      expect((await explanation(refused.invocationId)).sentence).toBe('Refused: no_running_slot — running 1 of 1.');
      expect(await first).toMatchObject({ state: 'settled', outcome: 'completed' });
    });
  });

  describe('an explanation for each outcome of docs/rules.md a scripted model can reach over HTTP', () => {
    it.each([
      ['completed', 'test.completed', {}, 'Completed: answer accepted after 1 of 6 turns'],
      ['tool_limit', 'test.tool-limit', { limits: limits({ maxToolCalls: 1 }) }, 'Ended by tool_limit: used 0 of 1 tool call and the next batch asked for more (maxToolCalls of test.tool-limit v1)'],
      ['credit_limit', 'test.credit-limit', { creditHold: 1_000 }, 'Ended by credit_limit: spent 1200, more than the 1000-credit hold (creditHold of test.credit-limit v1)'],
      ['refused_by_model', 'test.refused-by-model', {}, 'Ended by refused_by_model: the model declined to answer'],
      ['incomplete', 'test.incomplete', {}, 'Ended incomplete: the model\'s output was cut off'],
      ['protocol_error', 'test.protocol-error', {}, 'Ended by protocol_error'],
      ['failed', 'test.failed', {}, 'Failed: malformed_request — the provider rejected the request as malformed, which is not retried'],
      ['time_limit', 'test.time-limit', { limits: limits({ totalTimeMs: 50, attemptTimeoutMs: 50 }) }, 'Ended by time_limit: the 50 ms conversation time ran out (totalTimeMs of test.time-limit v1)'],
    ] as const)('%s', async (outcome, operationId, overrides, sentence) => {
      await publish(operationId, { ...overrides, creditHold: (overrides as { creditHold?: number }).creditHold ?? 1_000 });
      const result = await run(operationId);
      expect(result).toMatchObject({ state: 'settled', outcome });
      const explained = await explanation(result.invocationId);
      expect(explained.outcome).toBe(outcome);
      expect(explained.sentence).toContain(sentence);
      expect(explained.credits.charge).toBe(result.charge);
    });
  });
});
