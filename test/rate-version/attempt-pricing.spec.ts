import Decimal from 'decimal.js';
import fc from 'fast-check';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import type { InvocationCommand } from '../../src/invocations/invocation.commands';
import type { InvocationEvent, InvocationSettled } from '../../src/invocations/invocation.events';
import { MAX_PRICE_PER_MTOK_CREDITS } from '../../src/catalog/publication.validation';
import { completePrices, priceAttempt, ratesFor, type Prices, type Usage } from '../../src/runtime';
import { addUsage, NO_USAGE } from '../../src/runtime/usage';
import { attemptRecord, complete, dispatch, estimate, PUBLICATION, recordAttempt, report, reserve, settle } from '../invocations/invocation.fixtures';
import { SONNET_LIST_PRICES } from '../support/list-prices';

const SONNET: Prices = SONNET_LIST_PRICES;

const usage = (counts: Partial<Usage>): Usage => ({ ...NO_USAGE, ...counts });

describe('docs/rules.md rule 07 BR-CAP-PFM-LLM-002-07 an attempt is priced from every usage kind at its own rate, rounded once', () => {
  it('prices 1-hour cache writes at the 1-hour rate: 10,000 written for an hour cost 60,000 credits, not the 37,500 of the 5-minute rate', () => {
    // 1,000·3 + 500·15 + 10,000·6 = 3,000 + 7,500 + 60,000 credits.
    expect(priceAttempt(usage({ inputTokens: 1_000, outputTokens: 500, cacheWrite1hTokens: 10_000 }), SONNET)).toBe(70_500);
    expect(priceAttempt(usage({ inputTokens: 1_000, outputTokens: 500, cacheWriteTokens: 10_000 }), SONNET)).toBe(48_000);
  });

  it('prices web searches per thousand: 3 searches at $10 per 1,000 add 30,000 credits', () => {
    // 2,000·3 + 300·15 + 3·10,000,000/1,000 = 6,000 + 4,500 + 30,000.
    expect(priceAttempt(usage({ inputTokens: 2_000, outputTokens: 300, webSearchRequests: 3 }), SONNET)).toBe(40_500);
  });

  it('prices a whole attempt at the long-context rates once its input passes the threshold, cache writes and reads included', () => {
    // Input 150,000 + 30,000 + 25,000 = 205,000 > 200,000:
    // 150,000·6 + 30,000·7.5 + 25,000·0.6 + 2,000·22.5 = 900,000 + 225,000 + 15,000 + 45,000.
    const long = usage({ inputTokens: 150_000, cacheWriteTokens: 30_000, cacheReadTokens: 25_000, outputTokens: 2_000 });
    expect(ratesFor(long, SONNET).longContext).toBe(true);
    expect(priceAttempt(long, SONNET)).toBe(1_185_000);
  });

  it('keeps the ordinary rates at exactly the threshold, because only input that exceeds it is long context', () => {
    const atThreshold = usage({ inputTokens: 150_000, cacheWriteTokens: 30_000, cacheReadTokens: 20_000, outputTokens: 2_000 });
    expect(ratesFor(atThreshold, SONNET).longContext).toBe(false);
    // 150,000·3 + 30,000·3.75 + 20,000·0.3 + 2,000·15 = 450,000 + 112,500 + 6,000 + 30,000.
    expect(priceAttempt(atThreshold, SONNET)).toBe(598_500);
  });

  it('prices 1-hour writes at the 5-minute rate and searches at 0 under a rate version that names neither', () => {
    const old: Prices = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 };
    expect(completePrices(old)).toEqual({ ...old, cacheWrite1hPerMTok: 3_750, webSearchPerThousand: 0 });
    expect(priceAttempt(usage({ cacheWrite1hTokens: 1_000_000, webSearchRequests: 99 }), old)).toBe(3_750);
  });

  it('rounds once per attempt, not once per kind: six fractions that would each round up cost one credit together', () => {
    const tiny: Prices = { inputPerMTok: 1, outputPerMTok: 1, cacheWritePerMTok: 1, cacheWrite1hPerMTok: 1, cacheReadPerMTok: 1, webSearchPerThousand: 1 };
    // 5 tokens at 1 per MTok and 1 search at 1 per 1,000 searches: 5 + 1,000 millionths → 1 credit.
    expect(priceAttempt(usage({ inputTokens: 1, outputTokens: 1, cacheWriteTokens: 1, cacheWrite1hTokens: 1, cacheReadTokens: 1, webSearchRequests: 1 }), tiny)).toBe(1);
  });
});

/** The price by arbitrary-precision decimal arithmetic, computed apart from the BigInt formula. */
function referencePrice(u: Usage, prices: Prices): number {
  const D = Decimal.clone({ precision: 80, rounding: Decimal.ROUND_CEIL });
  const input = new D(u.inputTokens).plus(u.cacheWriteTokens).plus(u.cacheWrite1hTokens).plus(u.cacheReadTokens);
  const long = prices.longContext !== undefined && input.greaterThan(prices.longContext.thresholdInputTokens);
  const r = long ? { ...prices.longContext! } : { ...prices, cacheWrite1hPerMTok: prices.cacheWrite1hPerMTok ?? prices.cacheWritePerMTok };
  const perToken = (count: number, perMTok: number) => new D(count).times(perMTok).dividedBy(1_000_000);
  const credits = perToken(u.inputTokens, r.inputPerMTok)
    .plus(perToken(u.outputTokens, r.outputPerMTok))
    .plus(perToken(u.cacheWriteTokens, r.cacheWritePerMTok))
    .plus(perToken(u.cacheWrite1hTokens, r.cacheWrite1hPerMTok))
    .plus(perToken(u.cacheReadTokens, r.cacheReadPerMTok))
    .plus(new D(u.webSearchRequests).times(prices.webSearchPerThousand ?? 0).dividedBy(1_000));
  return credits.toDecimalPlaces(0, Decimal.ROUND_CEIL).toNumber();
}

const count = (max: number) => fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_000 }), fc.integer({ min: 0, max }));
const rate = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: MAX_PRICE_PER_MTOK_CREDITS }));
const usageArb = fc.record({
  inputTokens: count(2_000_000),
  outputTokens: count(200_000),
  cacheWriteTokens: count(2_000_000),
  cacheWrite1hTokens: count(2_000_000),
  cacheReadTokens: count(2_000_000),
  webSearchRequests: count(10_000),
});
const pricesArb: fc.Arbitrary<Prices> = fc.record(
  {
    inputPerMTok: rate,
    outputPerMTok: rate,
    cacheWritePerMTok: rate,
    cacheWrite1hPerMTok: rate,
    cacheReadPerMTok: rate,
    webSearchPerThousand: rate,
    longContext: fc.record({
      thresholdInputTokens: fc.integer({ min: 1, max: 4_000_000 }),
      inputPerMTok: rate,
      outputPerMTok: rate,
      cacheWritePerMTok: rate,
      cacheWrite1hPerMTok: rate,
      cacheReadPerMTok: rate,
    }),
  },
  { requiredKeys: ['inputPerMTok', 'outputPerMTok', 'cacheWritePerMTok', 'cacheReadPerMTok'] },
);

describe('docs/rules.md rule 07 the exact formula, checked against arbitrary-precision arithmetic (property)', () => {
  it('prices every usage at every rate version exactly as decimal arithmetic with 80 digits does', () => {
    fc.assert(
      fc.property(usageArb, pricesArb, (u, prices) => {
        expect(priceAttempt(u, prices)).toBe(referencePrice(u, prices));
      }),
      { numRuns: 2_000 },
    );
  });

  it('settles a completed invocation at exactly the sum of its attempt prices (STATE-PFM-LLM-001 transition 8)', () => {
    fc.assert(
      fc.property(fc.array(fc.option(usageArb, { nil: undefined }), { minLength: 1, maxLength: 3 }), pricesArb, (usages, prices) => {
        const publication = { ...PUBLICATION, prices };
        const prices_ = usages.map((u) => priceAttempt(u, prices));
        const spent = prices_.reduce((sum, credits) => sum + credits, 0);
        const totals = usages.reduce<Usage>((sum, u) => (u === undefined ? sum : addUsage(sum, u)), NO_USAGE);
        const reported = usages.some((u) => u !== undefined);
        fc.pre(reported);
        const commands: InvocationCommand[] = [
          estimate(publication),
          reserve(),
          dispatch(),
          ...usages.map((u, retry) => recordAttempt(attemptRecord(1, retry, { usage: u, priceCredits: prices_[retry]! }))),
          complete({ ...report({ spentCredits: spent, attemptCount: usages.length, usageTotals: totals, usageReported: true }) }),
          settle('runtime'),
        ];
        let state = invocationDecider.initialState();
        const events: InvocationEvent[] = [];
        for (const command of commands) {
          for (const event of invocationDecider.decide(command, state)) {
            events.push(event);
            state = invocationDecider.evolve(state, event);
          }
        }
        const settled = events.find((event): event is InvocationSettled => event.type === 'InvocationSettled');
        expect(settled?.data).toMatchObject({ transition: 8, chargeCredits: spent });
      }),
      { numRuns: 300 },
    );
  });
});

describe('a gateway rate card prices the mode Anthropic says it served: fast rates and a geography multiplier', () => {
  const FAST: Prices = { inputPerMTok: 18, outputPerMTok: 90, cacheWritePerMTok: 22, cacheWrite1hPerMTok: 36, cacheReadPerMTok: 2, webSearchPerThousand: 0 };
  const CARD = { ...SONNET, fast: FAST, inferenceGeo: { us: 11_000 } };

  it('prices an attempt served fast at the fast rates, and one served at standard speed at the ordinary ones', () => {
    const served = usage({ inputTokens: 1_000_000, outputTokens: 100_000 });
    // 1,000,000·18 + 100,000·90 = 18,000,000 + 9,000,000 millionths.
    expect(priceAttempt({ ...served, speed: 'fast' }, CARD)).toBe(27);
    expect(priceAttempt({ ...served, speed: 'standard' }, CARD)).toBe(priceAttempt(served, SONNET));
    expect(ratesFor({ ...served, speed: 'fast' }, CARD).fast).toBe(true);
  });

  it('prices fast at the ordinary rates when the card has no fast rates, rather than refusing a price', () => {
    expect(priceAttempt({ ...usage({ inputTokens: 1_000_000 }), speed: 'fast' }, SONNET)).toBe(priceAttempt(usage({ inputTokens: 1_000_000 }), SONNET));
  });

  it('multiplies the whole price by the geography before rounding once: half a credit at 1.1× is 1 credit, not 2', () => {
    // 500,000 input tokens at 1 credit per million = 0.5 credits; × 1.1 = 0.55 → 1.
    const half = { ...usage({ inputTokens: 500_000 }), inferenceGeo: 'us' };
    // No long-context rates, so ten million input tokens stay at the ordinary rate.
    const { longContext: _none, ...flat } = CARD;
    const card = { ...flat, inputPerMTok: 1 };
    expect(priceAttempt(half, card)).toBe(1);
    // 10,000,000 input at 1 credit per million = 10 credits; × 1.1 = 11.
    expect(priceAttempt({ ...usage({ inputTokens: 10_000_000 }), inferenceGeo: 'us' }, card)).toBe(11);
    // A geography the card does not name is priced at 1×.
    expect(priceAttempt({ ...usage({ inputTokens: 10_000_000 }), inferenceGeo: 'eu' }, card)).toBe(10);
  });
});

describe('Message Batches: a rate card’s batchBasisPoints prices an attempt served as a batch, on the whole price before the one rounding', () => {
  const { longContext: _none, ...FLAT } = SONNET;
  const CARD = { ...FLAT, inputPerMTok: 1, batchBasisPoints: 5_000, inferenceGeo: { us: 11_000 } };

  it('halves the whole price of an attempt served as a batch: 10,000,000 input tokens at 1 credit per million cost 5 credits, not 10', () => {
    const served = usage({ inputTokens: 10_000_000 });
    expect(priceAttempt({ ...served, serviceTier: 'batch' }, CARD)).toBe(5);
    expect(ratesFor({ ...served, serviceTier: 'batch' }, CARD).batchBasisPoints).toBe(5_000);
    // The same usage served on its own (or by a tier Anthropic names otherwise) pays the whole price.
    expect(priceAttempt({ ...served, serviceTier: 'standard' }, CARD)).toBe(10);
    expect(priceAttempt(served, CARD)).toBe(10);
  });

  it('rounds once, after both multipliers: 1,500,000 input at half price and 1.1× is 0.825 credits, charged 1 (halving and rounding first, 0.75 → 1, then 1.1 → 2, would charge 2)', () => {
    expect(priceAttempt({ ...usage({ inputTokens: 1_500_000 }), inferenceGeo: 'us', serviceTier: 'batch' }, CARD)).toBe(1);
    // 1,000,000 input: 0.55 credits → 1.
    expect(priceAttempt({ ...usage({ inputTokens: 1_000_000 }), inferenceGeo: 'us', serviceTier: 'batch' }, CARD)).toBe(1);
  });

  it('prices a batch at the whole price when the card names no batchBasisPoints, rather than guess a discount', () => {
    const { batchBasisPoints: _b, ...plain } = CARD;
    expect(priceAttempt({ ...usage({ inputTokens: 10_000_000 }), serviceTier: 'batch' }, plain)).toBe(10);
  });
});
