/**
 * The worst-case hold of a gateway call (docs/gateway.md, "How the hold is bounded"): the most
 * Anthropic could bill for the request as sent, so a call's charge never exceeds its hold and a call
 * can never take an organization or a key below zero.
 *
 * hold = ceil((inputBound × highest input-side rate + max_tokens × highest output rate
 *              + searches × web-search rate × 1,000) × highest geography multiplier / 10,000 / 1,000,000)
 *
 * The input bound counts what the model could read: the body's UTF-8 bytes (a token never encodes
 * less than one byte of its text), plus allowances for what the bytes do not bound — each request's
 * framing, each image and each document — plus what each server-side web search can add, all read
 * again on every sampling step a search makes.
 */
import { BASIS_POINTS_PER_MULTIPLE, type GatewayPrices, type Prices } from '../runtime/conversation.types';
import { PRICE_KINDS, TOKENS_PER_PRICE_UNIT } from '../runtime/price-kinds';
import { completePrices } from '../runtime/pricing';
import type { MessagesBodyFacts } from './gateway-call.port';
import { DEFAULT_WEB_SEARCH_MAX_USES, type RateCardVersion } from './rate-card';

/** Input tokens one request may be framed with beyond its bytes (role and turn markers, the tool-use system prompt). */
export const REQUEST_ALLOWANCE_TOKENS = 4_096;
/** Input tokens one image may cost whatever its bytes (an image sent by URL has almost none). */
export const IMAGE_ALLOWANCE_TOKENS = 10_000;
/**
 * Input tokens one document may cost whatever its bytes: a PDF is read as an image and the text of
 * each of its pages (at most 100 pages), and its text may be compressed past one byte per token.
 */
export const DOCUMENT_ALLOWANCE_TOKENS = 500_000;
/** Input tokens one web search's results may add to what the model reads next. */
export const WEB_SEARCH_RESULT_ALLOWANCE_TOKENS = 100_000;
/** The largest hold one call may need, in credits; a request needing more is refused (400). */
export const MAX_GATEWAY_HOLD_CREDITS = 1_000_000_000_000;

const MILLIONTHS_PER_CREDIT = BigInt(TOKENS_PER_PRICE_UNIT);
const BASIS_POINTS = BigInt(BASIS_POINTS_PER_MULTIPLE);

export interface WorstCaseHold {
  /** Integer credits to hold. */
  readonly credits: number;
  /** The input tokens the hold allows for. */
  readonly inputBoundTokens: number;
  /** Server-side web searches the hold allows for. */
  readonly webSearches: number;
}

/** Searches the request's web-search tools may make: each tool's `max_uses`, else the card's default. */
export function webSearchBound(facts: MessagesBodyFacts, prices: GatewayPrices): number {
  const fallback = prices.webSearchMaxUsesDefault ?? DEFAULT_WEB_SEARCH_MAX_USES;
  return facts.webSearchMaxUses.reduce<number>((sum, uses) => sum + (uses ?? fallback), 0);
}

/** The input tokens the request could make the model read, in every sampling step together. */
export function inputBoundTokens(facts: MessagesBodyFacts, searches: number): bigint {
  const perStep =
    BigInt(facts.bodyBytes) +
    BigInt(REQUEST_ALLOWANCE_TOKENS) +
    BigInt(facts.imageBlocks) * BigInt(IMAGE_ALLOWANCE_TOKENS) +
    BigInt(facts.documentBlocks) * BigInt(DOCUMENT_ALLOWANCE_TOKENS) +
    BigInt(searches) * BigInt(WEB_SEARCH_RESULT_ALLOWANCE_TOKENS);
  // Each search is followed by one more sampling step that reads the whole context again.
  return perStep * BigInt(1 + searches);
}

/** Every complete rate set a call could be priced at: ordinary and fast, each with its long-context rates. */
function rateSets(prices: GatewayPrices): Record<string, number>[] {
  const sets: Prices[] = [prices, ...(prices.fast === undefined ? [] : [prices.fast])];
  return sets.flatMap((set) => {
    const complete = completePrices(set) as unknown as Record<string, number>;
    return set.longContext === undefined ? [complete] : [complete, { ...complete, ...(set.longContext as unknown as Record<string, number>) }];
  });
}

/** The highest rate of the kinds `pick` selects, over every rate set. */
function highestRate(prices: GatewayPrices, pick: (kind: (typeof PRICE_KINDS)[number]) => boolean): bigint {
  let highest = 0;
  for (const set of rateSets(prices)) for (const kind of PRICE_KINDS) if (pick(kind)) highest = Math.max(highest, set[kind.rate] ?? 0);
  return BigInt(highest);
}

function highestGeo(prices: GatewayPrices): bigint {
  return BigInt(Math.max(BASIS_POINTS_PER_MULTIPLE, ...Object.values(prices.inferenceGeo ?? {})));
}

/**
 * The hold for a request at a rate card version. Every input-side kind (uncached input, both cache
 * writes, cache reads) is bounded by the input bound together, so the highest of their rates bounds
 * any split of it; output by `max_tokens`; searches by the tools' bounds; the mode by the highest
 * rate set and the highest geography.
 */
export function worstCaseHold(facts: MessagesBodyFacts, card: RateCardVersion): WorstCaseHold {
  const searches = webSearchBound(facts, card.prices);
  const input = inputBoundTokens(facts, searches);
  const searchKinds = PRICE_KINDS.filter((kind) => kind.unit === 'searches');
  let millionths =
    input * highestRate(card.prices, (kind) => kind.input) + BigInt(facts.maxTokens) * highestRate(card.prices, (kind) => kind.usage === 'outputTokens');
  for (const kind of searchKinds) {
    millionths += BigInt(searches) * highestRate(card.prices, (row) => row.usage === kind.usage) * (MILLIONTHS_PER_CREDIT / BigInt(kind.unitsPerRate));
  }
  const divisor = MILLIONTHS_PER_CREDIT * BASIS_POINTS;
  const credits = (millionths * highestGeo(card.prices) + divisor - 1n) / divisor;
  const bounded = credits > BigInt(MAX_GATEWAY_HOLD_CREDITS) ? Number.POSITIVE_INFINITY : Number(credits);
  return { credits: bounded, inputBoundTokens: input > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(input), webSearches: searches };
}
