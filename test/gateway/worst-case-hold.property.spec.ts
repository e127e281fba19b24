/**
 * The worst-case hold bounds every price the request could produce (docs/gateway.md, "How the hold
 * is bounded"): for any body (text, images, documents, web-search tools with and without max_uses,
 * thinking and cache markers all land in its bytes and block counts), any rate card (ordinary, fast
 * and long-context rates, geography multipliers) and any usage within the request's bounds, in any
 * mode Anthropic could report, the attempt's price is at most the hold.
 */
import fc from 'fast-check';
import type { MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import type { RateCardVersion } from '../../src/gateway/rate-card';
import { inputBoundTokens, webSearchBound, worstCaseHold } from '../../src/gateway/worst-case-hold';
import type { Prices } from '../../src/runtime/conversation.types';
import { priceAttempt } from '../../src/runtime/pricing';
import type { Usage } from '../../src/runtime/provider.port';

const rate = fc.integer({ min: 0, max: 100_000 });
const rates = fc.record({ inputPerMTok: rate, outputPerMTok: rate, cacheWritePerMTok: rate, cacheWrite1hPerMTok: rate, cacheReadPerMTok: rate, webSearchPerThousand: rate });
const longContext = fc.record({ thresholdInputTokens: fc.integer({ min: 1, max: 500_000 }), inputPerMTok: rate, outputPerMTok: rate, cacheWritePerMTok: rate, cacheWrite1hPerMTok: rate, cacheReadPerMTok: rate });
const priceSet: fc.Arbitrary<Prices> = fc.tuple(rates, fc.option(longContext, { nil: undefined })).map(([r, long]) => ({ ...r, ...(long === undefined ? {} : { longContext: long }) }));

const card: fc.Arbitrary<RateCardVersion> = fc
  .record({
    base: priceSet,
    fast: fc.option(priceSet, { nil: undefined }),
    geo: fc.option(fc.dictionary(fc.constantFrom('us', 'eu', 'global'), fc.integer({ min: 10_000, max: 30_000 })), { nil: undefined }),
    searchDefault: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
  })
  .map(({ base, fast, geo, searchDefault }) => ({
    model: 'm',
    version: 1,
    prices: { ...base, ...(fast === undefined ? {} : { fast }), ...(geo === undefined ? {} : { inferenceGeo: geo }), ...(searchDefault === undefined ? {} : { webSearchMaxUsesDefault: searchDefault }) },
    maxOutputTokens: 128_000,
    attemptTimeoutMs: 60_000,
    enabled: true,
    pricedAt: '2026-12-01T00:00:00.000Z',
  }));

const body: fc.Arbitrary<MessagesBodyFacts> = fc.record({
  bodyBytes: fc.integer({ min: 2, max: 32_000_000 }),
  model: fc.constant('m'),
  maxTokens: fc.integer({ min: 1, max: 128_000 }),
  stream: fc.boolean(),
  imageBlocks: fc.integer({ min: 0, max: 100 }),
  documentBlocks: fc.integer({ min: 0, max: 5 }),
  webSearchMaxUses: fc.array(fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }), { maxLength: 3 }),
});

/** A usage the request could produce: input kinds sharing the input bound, output within max_tokens, searches within the tools' bounds. */
function usageWithin(facts: MessagesBodyFacts, rateCard: RateCardVersion): fc.Arbitrary<Usage> {
  const inputBound = Number(inputBoundTokens(facts, webSearchBound(facts, rateCard.prices)));
  const share = fc.integer({ min: 0, max: 1_000 });
  return fc
    .record({
      fill: fc.integer({ min: 0, max: 1_000 }),
      parts: fc.tuple(share, share, share, share),
      output: fc.integer({ min: 0, max: facts.maxTokens }),
      searches: fc.integer({ min: 0, max: webSearchBound(facts, rateCard.prices) }),
      speed: fc.constantFrom(undefined, 'standard', 'fast'),
      geo: fc.constantFrom(undefined, 'us', 'eu', 'global', 'elsewhere'),
    })
    .map(({ fill, parts, output, searches, speed, geo }) => {
      const total = Math.floor((inputBound * fill) / 1_000);
      const weights = parts.reduce((a, b) => a + b, 0) || 1;
      const [a, b, c] = parts.map((part) => Math.floor((total * part) / weights));
      return {
        inputTokens: a!,
        cacheWriteTokens: b!,
        cacheWrite1hTokens: c!,
        cacheReadTokens: total - a! - b! - c!,
        outputTokens: output,
        webSearchRequests: searches,
        ...(speed === undefined ? {} : { speed }),
        ...(geo === undefined ? {} : { inferenceGeo: geo }),
      };
    });
}

describe('the worst-case hold: no usage a gateway request could produce prices above its hold', () => {
  it('holds at least the price of any usage within the request’s bounds, in any served mode and geography', () => {
    fc.assert(
      fc.property(
        fc.tuple(body, card).chain(([facts, rateCard]) => fc.tuple(fc.constant(facts), fc.constant(rateCard), usageWithin(facts, rateCard))),
        ([facts, rateCard, usage]) => {
          const hold = worstCaseHold(facts, rateCard);
          if (!Number.isFinite(hold.credits)) return; // refused before anything is held
          expect(priceAttempt(usage, rateCard.prices)).toBeLessThanOrEqual(hold.credits);
        },
      ),
      { numRuns: 2_000, seed: 20261201 },
    );
  });

  it('is exact at the bound: all input at the highest input-side rate and all of max_tokens cost the hold to the credit', () => {
    const rateCard: RateCardVersion = {
      model: 'm',
      version: 1,
      prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300, webSearchPerThousand: 10_000_000 },
      maxOutputTokens: 64_000,
      attemptTimeoutMs: 1,
      enabled: true,
      pricedAt: '2026-12-01T00:00:00.000Z',
    };
    const facts: MessagesBodyFacts = { bodyBytes: 904, model: 'm', maxTokens: 1_000, stream: false, imageBlocks: 0, documentBlocks: 0, webSearchMaxUses: [] };
    const hold = worstCaseHold(facts, rateCard);
    expect(hold.inputBoundTokens).toBe(5_000);
    const worst = { inputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 5_000, cacheReadTokens: 0, outputTokens: 1_000, webSearchRequests: 0 };
    expect(priceAttempt(worst, rateCard.prices)).toBe(hold.credits);
    expect(hold.credits).toBe(45);
  });

  it('counts each web search: its price, its results and one more reading of the context', () => {
    const facts: MessagesBodyFacts = { bodyBytes: 904, model: 'm', maxTokens: 1, stream: false, imageBlocks: 0, documentBlocks: 0, webSearchMaxUses: [2, undefined] };
    const prices = { inputPerMTok: 1, outputPerMTok: 0, cacheWritePerMTok: 0, cacheWrite1hPerMTok: 0, cacheReadPerMTok: 0, webSearchPerThousand: 0, webSearchMaxUsesDefault: 3 };
    expect(webSearchBound(facts, prices)).toBe(5);
    // (904 + 4,096 + 5 × 100,000) × (1 + 5) input tokens.
    expect(inputBoundTokens(facts, 5)).toBe(3_030_000n);
  });
});
