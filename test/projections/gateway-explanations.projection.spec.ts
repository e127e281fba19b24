import { EXPLANATION_COLLECTION, explanationsProjection, grouped, type ExplanationView } from '../../projections';
import type { DomainEvent } from '../../src/domain/decider';
import type { Usage } from '../../src/runtime';
import {
  attempt,
  completed,
  dispatched,
  estimated,
  EventLog,
  failed,
  figures,
  gatewayEstimated,
  pending,
  publicationV,
  refused,
  reserved,
  settled,
  usage,
} from './support/invocation-log';
import { project } from './support/in-memory-read-model';

const HOLD = 2_118;
const CALL = 'Gateway call by key "ci-bot" to claude-sonnet-5-5';

function explain(...events: DomainEvent[]): ExplanationView {
  const view = project(explanationsProjection, new EventLog().invocation('inv-1', ...events).events).get<ExplanationView>(EXPLANATION_COLLECTION, 'inv-1');
  if (view === undefined) throw new Error('no explanation written');
  return view;
}

/** The one upstream attempt of a gateway call, as GatewayCalls.settle records it. */
const upstream = (overrides: Parameters<typeof attempt>[2] = {}) => attempt(1, 0, { model: 'claude-sonnet-5-5', httpStatus: 200, ...overrides });
const answered = (reported: Usage, priceCredits: number) => [
  upstream({ usage: reported, priceCredits }),
  completed('completed', figures({ spentCredits: priceCredits, usageTotals: reported })),
];
const admitted = (): DomainEvent[] => [gatewayEstimated(HOLD), reserved(HOLD), dispatched()];

describe('a gateway call’s explanation reads like an operation’s, in the gateway’s terms (docs/gateway.md)', () => {
  it('names the key, the model, Anthropic’s usage, the hold and the charge, and its fields name the key, model and rate card version', () => {
    const view = explain(...admitted(), ...answered(usage(1_234, 56), 9), settled(8, 9, 'runtime', HOLD));
    expect(view.sentence).toBe(`${CALL}: 1,234 input and 56 output tokens; held 2,118, charged 9.`);
    expect(view).toMatchObject({
      operationId: 'gateway.anthropic-messages',
      publicationVersion: 2,
      state: 'settled',
      outcome: 'completed',
      credits: { spent: 9, hold: HOLD, charge: 9 },
      settlement: { transition: 8, by: 'runtime', chargeCredits: 9 },
    });
    expect(view.gateway).toEqual({
      keyId: 'key-1',
      keyName: 'ci-bot',
      model: 'claude-sonnet-5-5',
      rateCardVersion: 2,
      stream: false,
      classification: 'ok',
      httpStatus: 200,
      timedOut: false,
      usage: usage(1_234, 56),
    });
  });

  it('counts cache reads and writes and web searches where Anthropic reported any', () => {
    const reported: Usage = { ...usage(10, 2_000), cacheWriteTokens: 3_000, cacheWrite1hTokens: 40, cacheReadTokens: 120_000, webSearchRequests: 2 };
    expect(explain(...admitted(), ...answered(reported, 60), settled(8, 60, 'runtime', HOLD)).sentence).toBe(
      `${CALL}: 10 input, 3,000 cache-write, 40 1-hour cache-write, 120,000 cache-read and 2,000 output tokens, 2 web searches; held 2,118, charged 60.`,
    );
  });

  it('explains an upstream error answer: failed with its fault and status, charged what it reported (transition 10)', () => {
    const noUsage = figures({ usageReported: false });
    expect(explain(...admitted(), upstream({ classification: 'overloaded', httpStatus: 529 }), failed('overloaded', noUsage), settled(10, 0, 'runtime', HOLD)).sentence).toBe(
      `${CALL} failed: overloaded — the provider was overloaded (HTTP 529): no usage was reported; held 2,118, charged 0.`,
    );
    // An `error` event mid-stream: the answer began with 200 and reported usage before it broke.
    const midStream = explain(...admitted(), upstream({ classification: 'overloaded', usage: usage(1_234, 20), priceCredits: 5 }), failed('overloaded', figures({ spentCredits: 5 })), settled(10, 5, 'runtime', HOLD));
    expect(midStream.sentence).toBe(`${CALL} failed: overloaded — the provider was overloaded: 1,234 input and 20 output tokens; held 2,118, charged 5.`);
  });

  it('explains a call that never reported usage: pending at its hold, then charged its hold (transitions 7 and 9)', () => {
    const unmeasured = [upstream({ httpStatus: undefined }), completed('completed', figures({ usageReported: false }))];
    expect(explain(...admitted(), ...unmeasured, pending()).sentence).toBe(`${CALL}: no usage was reported, so it will be charged its 2,118-credit hold.`);
    const view = explain(...admitted(), ...unmeasured, pending(), settled(9, HOLD, 'runtime', HOLD));
    expect(view.sentence).toBe(`${CALL}: no usage was reported, so it was charged its 2,118-credit hold.`);
    expect(view.credits).toEqual({ spent: 0, hold: HOLD, charge: HOLD });
    const timedOut = [upstream({ classification: 'timeout', timedOut: true, httpStatus: undefined }), completed('completed', figures({ usageReported: false }))];
    expect(explain(...admitted(), ...timedOut, pending(), settled(9, HOLD, 'runtime', HOLD)).sentence).toBe(
      `${CALL}: it reached its time bound before its final usage was reported, so it was charged its 2,118-credit hold.`,
    );
    const cut = [upstream({ classification: 'connection', httpStatus: undefined }), completed('completed', figures({ usageReported: false }))];
    expect(explain(...admitted(), ...cut, pending(), settled(9, HOLD, 'runtime', HOLD)).sentence).toBe(
      `${CALL}: no usage was reported (connection — the connection to the provider failed), so it was charged its 2,118-credit hold.`,
    );
  });

  it('finding 5: explains malformed usage as such, pending then charged its hold, naming the field and never its value (transitions 7 and 9)', () => {
    const malformed = [upstream({ usage: undefined, malformedUsage: 'output_tokens', priceCredits: 0 }), completed('completed', figures({ spentCredits: 0, usageReported: false }))];
    expect(explain(...admitted(), ...malformed, pending()).sentence).toBe(`${CALL}: the upstream reported malformed usage (output_tokens), so it will be charged its 2,118-credit hold.`);
    const view = explain(...admitted(), ...malformed, pending(), settled(9, HOLD, 'runtime', HOLD));
    expect(view.sentence).toBe(`${CALL}: the upstream reported malformed usage (output_tokens), so it was charged its 2,118-credit hold.`);
    expect(view.gateway).toMatchObject({ malformedUsage: 'output_tokens' });
    expect(view.gateway).not.toHaveProperty('usage');
  });

  it('finding 4: explains a call priced above its hold: charged its hold, the difference named as its overrun in the sentence and the fields', () => {
    const reported = { ...usage(150_000), outputTokens: 10 };
    const overrun = settled(8, HOLD, 'runtime', HOLD);
    const view = explain(...admitted(), ...answered(reported, 450_150), { ...overrun, data: { ...overrun.data, overrunCredits: 450_150 - HOLD } });
    expect(view.sentence).toBe(`${CALL}: 150,000 input and 10 output tokens, priced at 450,150; held 2,118, charged 2,118; the 448,032 credits over the hold are recorded as an overrun.`);
    expect(view.credits).toEqual({ spent: 450_150, hold: HOLD, charge: HOLD, overrun: 448_032 });
    expect(view.settlement).toEqual({ transition: 8, by: 'runtime', chargeCredits: HOLD, overrunCredits: 448_032 });
  });

  it('explains the sweep settling a call dispatched before a crash at its hold (transition 14), and the other closes', () => {
    expect(explain(...admitted(), settled(14, HOLD, 'sweep', HOLD)).sentence).toBe(
      `${CALL}: the service stopped while the call was in flight, so its usage was never learned and it was charged its 2,118-credit hold (settled by sweep).`,
    );
    expect(explain(gatewayEstimated(HOLD), settled(12, 0, 'sweep', 0)).sentence).toBe(
      `${CALL}: abandoned before admission; nothing was sent upstream and 0 credits were charged (settled by sweep).`,
    );
    expect(explain(gatewayEstimated(HOLD), reserved(HOLD), settled(13, 0, 'sweep', HOLD)).sentence).toBe(
      `${CALL}: abandoned while held; nothing was sent upstream and the hold was released (settled by sweep).`,
    );
  });

  it.each<[string, DomainEvent, string]>([
    ['insufficient_credits', refused({ reason: 'insufficient_credits', figures: { available: 10, creditHold: HOLD } }, 2), 'refused (402 insufficient_credits): available 10 < hold 2,118.'],
    [
      'key_spend_limit',
      refused(
        { reason: 'key_spend_limit', figures: { keyId: 'key-1', limitCredits: 5_000, period: 'day', periodStart: '2025-03-01', spentCredits: 2_500, heldCredits: 1_000, creditHold: HOLD } },
        2,
      ),
      'refused (402 key_spend_limit): the key may spend 5,000 credits in 2025-03-01 (UTC day); it spent 2,500 and holds 1,000, so 1,500 remain < hold 2,118.',
    ],
    ['no_running_slot', refused({ reason: 'no_running_slot', figures: { running: 10, maxRunning: 10 } }, 2), 'refused (429 no_running_slot): running 10 of 10.'],
    [
      'key_rate_limit',
      refused({ reason: 'key_rate_limit', figures: { keyId: 'key-1', limit: 'tokensPerMinute', allowed: 10_000, counted: 9_000, asked: 5_096, minute: '2025-03-01T10:00', retryAfterSeconds: 50 } }, 2),
      "refused (429 key_rate_limit): key key-1 may have 10,000 tokens per minute; its calls in 2025-03-01T10:00 UTC count 9,000, and this call's worst case of 5,096 would pass it, so nothing was held or sent upstream.",
    ],
    [
      'key_expired',
      refused({ reason: 'key_expired', figures: { keyId: 'key-1', expiredAt: '2025-03-01T10:00:00.000Z', rotated: true } }, 1),
      'refused (401 key_expired): the secret presented for key key-1 was rotated away, and its grace ended at 2025-03-01T10:00:00.000Z, so nothing was held or sent upstream.',
    ],
    ['ai_disabled', refused({ reason: 'ai_disabled', figures: { aiEnabled: false } }, 1), 'refused (403 ai_disabled): AI is switched off for organization acme.'],
  ])('explains a refusal for %s with the status the caller got and the figures behind it', (reason, refusal, tail) => {
    const view = explain(gatewayEstimated(HOLD), refusal);
    expect(view.sentence).toBe(`${CALL} ${tail}`);
    expect(view).toMatchObject({ state: 'refused', refusal: { reason }, gateway: { keyName: 'ci-bot', model: 'claude-sonnet-5-5', rateCardVersion: 2 } });
  });

  it('quotes the key’s name as JSON, so a name holding quotes or a line break cannot run into the sentence', () => {
    expect(explain(gatewayEstimated(HOLD, { keyName: 'say "hi"\nbot' })).sentence).toBe('Gateway call by key "say \\"hi\\"\\nbot" to claude-sonnet-5-5: awaiting admission for a 2,118-credit hold.');
  });

  it('says where a call stands before it ends', () => {
    expect(explain(gatewayEstimated(HOLD)).sentence).toBe(`${CALL}: awaiting admission for a 2,118-credit hold.`);
    expect(explain(gatewayEstimated(HOLD), reserved(HOLD)).sentence).toBe(`${CALL}: 2,118 credits held; not yet sent upstream.`);
    expect(explain(gatewayEstimated(HOLD, { stream: true }), reserved(HOLD), dispatched()).sentence).toBe(`${CALL}: in flight, streamed, holding 2,118 credits.`);
    expect(explain(...admitted(), ...answered(usage(1_234, 56), 9)).sentence).toBe(`${CALL}: 1,234 input and 56 output tokens; held 2,118; awaiting settlement.`);
  });

  it('leaves an operation’s explanation as it was: no gateway field, the operation’s sentence', () => {
    const view = explain(estimated(publicationV(1)), reserved(), dispatched(), attempt(1, 0, { priceCredits: 7 }), completed('completed', figures({ spentCredits: 7 })), settled(8, 7));
    expect(view).not.toHaveProperty('gateway');
    expect(view.sentence).toBe(
      'Completed: answer accepted after 1 of 4 turns; 0 of 10 tool calls; spent 7 of a 500-credit hold; no retries. Settled (transition 8, by runtime): charged 7 credits, the sum of its attempt prices.',
    );
  });

  it('groups digits by thousands the same way on every machine', () => {
    expect([0, 999, 1_000, 2_118, 1_234_567, 9_007_199_254_740_991].map(grouped)).toEqual(['0', '999', '1,000', '2,118', '1,234,567', '9,007,199,254,740,991']);
  });
});
