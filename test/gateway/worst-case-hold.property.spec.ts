/**
 * The worst-case hold bounds every price the request could produce (docs/gateway.md, "How the hold
 * is bounded"): for any body (text, images, documents, thinking and cache markers all land in its
 * bytes and block counts), every tool the gateway admits (web search and web fetch with and without
 * their bounds, code execution and MCP servers within the card's allowances, client tools Anthropic
 * defines), any rate card (ordinary, fast and long-context rates, geography multipliers) and any usage
 * Anthropic could report within the request's bounds, in any mode, the attempt's price is at most the
 * hold.
 *
 * The usage is built here on its own, as Anthropic's server-tool loop would produce it: a first
 * sampling step reads the body (no more tokens than its bytes) and what the bytes do not hold; each
 * server-tool use adds its result and starts one more step, which reads the whole context again, the
 * answer so far included; output in all steps together is at most max_tokens.
 */
import fc from 'fast-check';
import type { MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import type { RateCardVersion, ServerToolAllowance } from '../../src/gateway/rate-card';
import {
  DEFAULT_WEB_FETCH_MAX_USES,
  DEFINED_TOOL_ALLOWANCE_TOKENS,
  DOCUMENT_ALLOWANCE_TOKENS,
  IMAGE_ALLOWANCE_TOKENS,
  inputBoundTokens,
  REQUEST_ALLOWANCE_TOKENS,
  serverToolBound,
  WEB_FETCH_CONTENT_ALLOWANCE_TOKENS,
  WEB_SEARCH_RESULT_ALLOWANCE_TOKENS,
  webFetchBound,
  webSearchBound,
  worstCaseHold,
} from '../../src/gateway/worst-case-hold';
import type { Prices } from '../../src/runtime/conversation.types';
import { priceAttempt } from '../../src/runtime/pricing';
import type { Usage } from '../../src/runtime/provider.port';
import { NO_TOOLS } from './support/body-facts';

const rate = fc.integer({ min: 0, max: 100_000 });
const rates = fc.record({ inputPerMTok: rate, outputPerMTok: rate, cacheWritePerMTok: rate, cacheWrite1hPerMTok: rate, cacheReadPerMTok: rate, webSearchPerThousand: rate });
const longContext = fc.record({ thresholdInputTokens: fc.integer({ min: 1, max: 500_000 }), inputPerMTok: rate, outputPerMTok: rate, cacheWritePerMTok: rate, cacheWrite1hPerMTok: rate, cacheReadPerMTok: rate });
const priceSet: fc.Arbitrary<Prices> = fc.tuple(rates, fc.option(longContext, { nil: undefined })).map(([r, long]) => ({ ...r, ...(long === undefined ? {} : { longContext: long }) }));
const allowance: fc.Arbitrary<ServerToolAllowance> = fc.record({
  maxUses: fc.integer({ min: 1, max: 5 }),
  // Now and then no result at all: then only the answer so far grows what each later step reads.
  resultTokensPerUse: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50_000 })),
  definitionTokens: fc.integer({ min: 0, max: 20_000 }),
});

const card: fc.Arbitrary<RateCardVersion> = fc
  .record({
    base: priceSet,
    fast: fc.option(priceSet, { nil: undefined }),
    geo: fc.option(fc.dictionary(fc.constantFrom('us', 'eu', 'global'), fc.integer({ min: 10_000, max: 30_000 })), { nil: undefined }),
    searchDefault: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
    codeExecution: fc.option(allowance, { nil: undefined }),
    mcpServers: fc.option(allowance, { nil: undefined }),
  })
  .map(({ base, fast, geo, searchDefault, codeExecution, mcpServers }) => ({
    model: 'm',
    version: 1,
    prices: { ...base, ...(fast === undefined ? {} : { fast }), ...(geo === undefined ? {} : { inferenceGeo: geo }), ...(searchDefault === undefined ? {} : { webSearchMaxUsesDefault: searchDefault }) },
    maxOutputTokens: 128_000,
    attemptTimeoutMs: 60_000,
    serverToolAllowances: { ...(codeExecution === undefined ? {} : { codeExecution }), ...(mcpServers === undefined ? {} : { mcpServers }) },
    enabled: true,
    pricedAt: '2026-12-01T00:00:00.000Z',
  }));

/** A body's facts: its server tools are any the gateway admits, and some client tools Anthropic defines. */
const body: fc.Arbitrary<MessagesBodyFacts> = fc
  .record({
    bodyBytes: fc.integer({ min: 2, max: 32_000_000 }),
    maxTokens: fc.integer({ min: 1, max: 128_000 }),
    stream: fc.boolean(),
    imageBlocks: fc.integer({ min: 0, max: 100 }),
    documentBlocks: fc.integer({ min: 0, max: 5 }),
    webSearchMaxUses: fc.array(fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }), { maxLength: 3 }),
    webFetches: fc.array(fc.record({ maxUses: fc.integer({ min: 1, max: 12 }), maxContentTokens: fc.integer({ min: 1, max: 200_000 }) }, { requiredKeys: [] }), { maxLength: 3 }),
    codeExecutionTools: fc.integer({ min: 0, max: 2 }),
    mcpServers: fc.integer({ min: 0, max: 3 }),
    clientTools: fc.integer({ min: 0, max: 3 }),
  })
  .map(({ codeExecutionTools, clientTools, ...facts }) => ({
    ...facts,
    model: 'm',
    codeExecutionTools: Array.from({ length: codeExecutionTools }, (_, index) => ({ field: `tools[${index}]`, type: 'code_execution_20250825' })),
    definedTools: facts.webSearchMaxUses.length + facts.webFetches.length + codeExecutionTools + clientTools,
  }));

/** What one server-tool use may add to the context: its result, at most. */
interface UseLimit {
  readonly search: boolean;
  readonly maxResultTokens: number;
}

/** Every server-tool use the request could make, each with the most its result may read. */
function possibleUses(facts: MessagesBodyFacts, rateCard: RateCardVersion): UseLimit[] {
  const uses: UseLimit[] = [];
  const add = (count: number, limit: UseLimit) => uses.push(...Array.from({ length: count }, () => limit));
  add(webSearchBound(facts, rateCard.prices), { search: true, maxResultTokens: WEB_SEARCH_RESULT_ALLOWANCE_TOKENS });
  for (const fetch of facts.webFetches) add(fetch.maxUses ?? DEFAULT_WEB_FETCH_MAX_USES, { search: false, maxResultTokens: fetch.maxContentTokens ?? WEB_FETCH_CONTENT_ALLOWANCE_TOKENS });
  const { codeExecution, mcpServers } = rateCard.serverToolAllowances ?? {};
  // Without an allowance the request is refused: nothing is held, and no usage can follow.
  if (facts.codeExecutionTools.length > 0 && codeExecution !== undefined) add(codeExecution.maxUses, { search: false, maxResultTokens: codeExecution.resultTokensPerUse });
  if (facts.mcpServers > 0 && mcpServers !== undefined) add(mcpServers.maxUses, { search: false, maxResultTokens: mcpServers.resultTokensPerUse });
  return uses;
}

/** What the first step reads at most: the body's bytes, and what they do not hold. */
function firstContextLimit(facts: MessagesBodyFacts, rateCard: RateCardVersion): number {
  const { codeExecution, mcpServers } = rateCard.serverToolAllowances ?? {};
  return (
    facts.bodyBytes +
    REQUEST_ALLOWANCE_TOKENS +
    facts.imageBlocks * IMAGE_ALLOWANCE_TOKENS +
    facts.documentBlocks * DOCUMENT_ALLOWANCE_TOKENS +
    facts.definedTools * DEFINED_TOOL_ALLOWANCE_TOKENS +
    facts.codeExecutionTools.length * (codeExecution?.definitionTokens ?? 0) +
    facts.mcpServers * (mcpServers?.definitionTokens ?? 0)
  );
}

/**
 * A usage Anthropic's loop could report: some of the possible uses, in any order, each reading some
 * of its result; some of max_tokens, some of it written before the first use; the input read over
 * all steps split in any way over the four input kinds, in any served mode and geography.
 */
function usageWithin(facts: MessagesBodyFacts, rateCard: RateCardVersion): fc.Arbitrary<Usage> {
  const possible = possibleUses(facts, rateCard);
  const uses = possible.map((use, index) => ({ ...use, index }));
  // A share in thousandths, half the time the whole: the bound is reached only when most shares are.
  const share = fc.oneof(fc.constant(1_000), fc.integer({ min: 0, max: 1_000 }));
  const part = (whole: number, thousandths: number) => Math.floor((whole * thousandths) / 1_000);
  return fc
    .record({
      first: share,
      made: fc.oneof(fc.shuffledSubarray(uses, { minLength: uses.length }), fc.shuffledSubarray(uses)),
      reads: fc.array(share, { minLength: possible.length, maxLength: possible.length }),
      output: fc.oneof(fc.constant(facts.maxTokens), fc.integer({ min: 0, max: facts.maxTokens })),
      early: share,
      // Half the time all of the input in one kind, which may be the dearest.
      split: fc.oneof<fc.Arbitrary<readonly number[]>[]>(fc.constantFrom([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]), fc.tuple(share, share, share, share)),
      speed: fc.constantFrom(undefined, 'standard', 'fast'),
      geo: fc.constantFrom(undefined, 'us', 'eu', 'global', 'elsewhere'),
    })
    .map(({ first, made, reads, output, early, split, speed, geo }) => {
      // Step 0 reads the body; each use adds its result and starts a step that reads everything again.
      let context = part(firstContextLimit(facts, rateCard), first);
      let input = context;
      context += made.length > 0 ? part(output, early) : 0;
      for (const use of made) {
        context += part(use.maxResultTokens, reads[use.index]!);
        input += context;
      }
      const weights = split.reduce((a, b) => a + b, 0) || 1;
      const [a, b, c] = split.map((weight) => Math.floor((input * weight) / weights));
      return {
        inputTokens: a!,
        cacheWriteTokens: b!,
        cacheWrite1hTokens: c!,
        cacheReadTokens: input - a! - b! - c!,
        outputTokens: output,
        webSearchRequests: made.filter((use) => use.search).length,
        ...(speed === undefined ? {} : { speed }),
        ...(geo === undefined ? {} : { inferenceGeo: geo }),
      };
    });
}

/** Facts for the worked examples: a 904-byte body and nothing else. */
const PLAIN: MessagesBodyFacts = {
  bodyBytes: 904,
  model: 'm',
  maxTokens: 1_000,
  stream: false,
  imageBlocks: 0,
  documentBlocks: 0,
  ...NO_TOOLS,
};
const CARD: RateCardVersion = {
  model: 'm',
  version: 1,
  prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300, webSearchPerThousand: 10_000_000 },
  maxOutputTokens: 64_000,
  attemptTimeoutMs: 1,
  enabled: true,
  pricedAt: '2026-12-01T00:00:00.000Z',
};

describe('the worst-case hold: no usage a gateway request could produce prices above its hold', () => {
  it('holds at least the price of any usage within the request’s bounds, with every tool the gateway admits, in any served mode and geography', () => {
    fc.assert(
      fc.property(
        fc.tuple(body, card).chain(([facts, rateCard]) => fc.tuple(fc.constant(facts), fc.constant(rateCard), usageWithin(facts, rateCard))),
        ([facts, rateCard, usage]) => {
          const hold = worstCaseHold(facts, rateCard);
          if (hold.problem !== undefined) {
            // Refused (400) before anything is held: only a tool the card gives no allowance, or a hold past the bound.
            expect(hold.problem).toMatch(/serverToolAllowances|could cost more than one call may hold/);
            return;
          }
          expect(priceAttempt(usage, rateCard.prices)).toBeLessThanOrEqual(hold.credits);
        },
      ),
      { numRuns: 2_000, seed: 20261201 },
    );
  });

  it('Message Batches: holds a batch’s request at batch rates, and no usage the request could produce, served as a batch, prices above it', () => {
    fc.assert(
      fc.property(
        fc.tuple(body, card, fc.integer({ min: 1, max: 10_000 })).chain(([facts, rateCard, batch]) => {
          const batched = { ...rateCard, prices: { ...rateCard.prices, batchBasisPoints: batch } };
          return fc.tuple(fc.constant(facts), fc.constant(batched), usageWithin(facts, batched));
        }),
        ([facts, rateCard, usage]) => {
          const hold = worstCaseHold(facts, rateCard, 'batch');
          if (hold.problem !== undefined) return;
          expect(priceAttempt({ ...usage, serviceTier: 'batch' }, rateCard.prices)).toBeLessThanOrEqual(hold.credits);
          expect(hold.credits).toBeLessThanOrEqual(worstCaseHold(facts, rateCard).credits!);
        },
      ),
      { numRuns: 1_000, seed: 20261203 },
    );
    // At half price, rounded once: 45 credits at full price, 22.5 → 23 at half.
    const half = { ...CARD, prices: { ...CARD.prices, batchBasisPoints: 5_000 } };
    expect(worstCaseHold(PLAIN, half, 'batch').credits).toBe(23);
    expect(worstCaseHold(PLAIN, half).credits).toBe(45);
  });

  it('is exact at the bound: all input at the highest input-side rate and all of max_tokens cost the hold to the credit', () => {
    const hold = worstCaseHold(PLAIN, CARD);
    expect(hold.bounds).toEqual({ inputBound: 5_000n, maxTokens: 1_000n, webSearches: 0n });
    const worst = { inputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 5_000, cacheReadTokens: 0, outputTokens: 1_000, webSearchRequests: 0 };
    expect(priceAttempt(worst, CARD.prices)).toBe(hold.credits);
    expect(hold.credits).toBe(45);
  });

  it('counts each web search: its price, its results, the answer so far, and one more reading of the context', () => {
    const facts = { ...PLAIN, maxTokens: 1, webSearchMaxUses: [2, undefined], definedTools: 2 };
    const prices = { ...CARD.prices, webSearchMaxUsesDefault: 3 };
    expect(webSearchBound(facts, prices)).toBe(5);
    // (904 + 4,096 + 2 × 4,096 definitions + 5 × 100,000 results + 1 output token) × (1 + 5) steps.
    expect(inputBoundTokens(facts, serverToolBound(facts, { ...CARD, prices }))).toBe(3_079_158n);
  });

  it('counts each web fetch: max_uses × max_content_tokens, else the defaults, each fetch starting one more reading', () => {
    const facts = { ...PLAIN, maxTokens: 10, webFetches: [{ maxUses: 2, maxContentTokens: 3_000 }, {}], definedTools: 2 };
    expect(webFetchBound(facts)).toEqual({ uses: 2 + DEFAULT_WEB_FETCH_MAX_USES, contentTokens: BigInt(2 * 3_000 + DEFAULT_WEB_FETCH_MAX_USES * WEB_FETCH_CONTENT_ALLOWANCE_TOKENS) });
    // (904 + 4,096 + 8,192 definitions + 1,006,000 fetched + 10 output) × (1 + 12) steps.
    expect(inputBoundTokens(facts, serverToolBound(facts, CARD))).toBe(13_249_626n);
  });

  it('refuses code execution and MCP servers the card gives no allowance, naming the field, and holds them within one it gives', () => {
    const code = { ...PLAIN, codeExecutionTools: [{ field: 'tools[3]', type: 'code_execution_20250825' }], definedTools: 1 };
    expect(worstCaseHold(code, CARD).problem).toBe('tools[3].type: code_execution_20250825 runs code upstream, which the hold cannot bound: the rate card gives m no serverToolAllowances.codeExecution');
    expect(worstCaseHold({ ...PLAIN, mcpServers: 2 }, CARD).problem).toMatch(/^mcp_servers: .* no serverToolAllowances\.mcpServers$/);
    const allowed = { ...CARD, serverToolAllowances: { codeExecution: { maxUses: 3, resultTokensPerUse: 10_000, definitionTokens: 500 } } };
    // (904 + 4,096 + 4,096 definition + 500 its own + 3 × 10,000 results + 1,000 output) × (1 + 3) steps.
    expect(worstCaseHold(code, allowed).bounds?.inputBound).toBe(162_384n);
  });
});
