/**
 * The worst-case hold of a gateway call (docs/gateway.md, "How the hold is bounded"): the most
 * Anthropic could bill for the request as sent, so a call's charge never exceeds its hold and a call
 * can never take an organization or a key below zero.
 *
 * hold = ceil(Σ over the price-kind table's worst-case bounds (input bound, max_tokens, searches) of
 *             the bound × the highest rate of the kinds it bounds × highest geography multiplier
 *             / 10,000 / 1,000,000)
 *
 * The input bound counts what the model could read: the body's UTF-8 bytes (a token never encodes
 * less than one byte of its text), plus allowances for what the bytes do not bound — each request's
 * framing, each image, each document, each Anthropic-defined tool's definition — plus what each
 * server-tool use (a search, a fetch, a code execution, an MCP tool call) can add, all read again on
 * every sampling step a use starts. A server tool the gateway cannot bound is refused, never held as
 * a plain request.
 */
import { BASIS_POINTS_PER_MULTIPLE, type GatewayPrices, type Prices } from '../runtime/conversation.types';
import { PRICE_KINDS, TOKENS_PER_PRICE_UNIT, WORST_CASE_BOUNDS, type WorstCaseBound } from '../runtime/price-kinds';
import { completePrices } from '../runtime/pricing';
import type { UsageCounts } from '../runtime/provider.port';
import type { MessagesBodyFacts } from './gateway-call.port';
import { DEFAULT_WEB_SEARCH_MAX_USES, type RateCardVersion, type ServerToolAllowance } from './rate-card';

/** Input tokens one request may be framed with beyond its bytes (role and turn markers, the tool-use system prompt). */
export const REQUEST_ALLOWANCE_TOKENS = 4_096;
/** Input tokens one image may cost whatever its bytes (an image sent by URL has almost none). */
export const IMAGE_ALLOWANCE_TOKENS = 10_000;
/**
 * Input tokens one document may cost whatever its bytes: a PDF is read as an image and the text of
 * each of its pages (at most 100 pages), and its text may be compressed past one byte per token.
 */
export const DOCUMENT_ALLOWANCE_TOKENS = 500_000;
/**
 * Input tokens one Anthropic-defined tool (any `type` but `custom`) may cost whatever its bytes: the
 * request names it in a few bytes, and upstream expands it into its definition (a few hundred tokens
 * for bash, about a thousand with its system prompt for computer use).
 */
export const DEFINED_TOOL_ALLOWANCE_TOKENS = 4_096;
/** Input tokens one web search's results may add to what the model reads next. */
export const WEB_SEARCH_RESULT_ALLOWANCE_TOKENS = 100_000;
/** Fetches a web-fetch tool without `max_uses` is held for, like `DEFAULT_WEB_SEARCH_MAX_USES`. */
export const DEFAULT_WEB_FETCH_MAX_USES = 10;
/** The largest `max_uses` a web-fetch tool may set; more is refused (400). */
export const MAX_WEB_FETCH_USES = 100;
/** Input tokens one fetch of a web-fetch tool without `max_content_tokens` is held for. */
export const WEB_FETCH_CONTENT_ALLOWANCE_TOKENS = 100_000;
/** The largest `max_content_tokens` a web-fetch tool may set, in tokens; more is refused (400). */
export const MAX_WEB_FETCH_CONTENT_TOKENS = 1_000_000;
/** The largest hold one call may need, in credits; a request needing more is refused (400). */
export const MAX_GATEWAY_HOLD_CREDITS = 1_000_000_000_000;

const MILLIONTHS_PER_CREDIT = BigInt(TOKENS_PER_PRICE_UNIT);
const BASIS_POINTS = BigInt(BASIS_POINTS_PER_MULTIPLE);

/** The count each worst-case bound of the price-kind table allows for: input tokens, output tokens, searches. */
export type HoldBounds = Readonly<Record<WorstCaseBound, bigint>>;

/** The hold in integer credits and the bounds it allows for, or why the request cannot be held (a 400). */
export type WorstCaseHold =
  | { readonly credits: number; readonly bounds: HoldBounds; readonly problem?: undefined }
  | { readonly credits?: undefined; readonly bounds?: undefined; readonly problem: string };

/** What the request's server tools may add to the call. */
export interface ServerToolBound {
  /** Uses of every server tool together: each may start one more sampling step. */
  readonly uses: number;
  readonly webSearches: number;
  /** Input tokens the tools' definitions and the uses' results may add to each step's context. */
  readonly addedTokens: bigint;
}

/** Searches the request's web-search tools may make: each tool's `max_uses`, else the card's default. */
export function webSearchBound(facts: MessagesBodyFacts, prices: GatewayPrices): number {
  const fallback = prices.webSearchMaxUsesDefault ?? DEFAULT_WEB_SEARCH_MAX_USES;
  return facts.webSearchMaxUses.reduce<number>((sum, uses) => sum + (uses ?? fallback), 0);
}

/** Fetches the request's web-fetch tools may make, and what they may read: each tool's `max_uses` × `max_content_tokens`, else the defaults. */
export function webFetchBound(facts: MessagesBodyFacts): { readonly uses: number; readonly contentTokens: bigint } {
  let uses = 0;
  let contentTokens = 0n;
  for (const tool of facts.webFetches) {
    const toolUses = tool.maxUses ?? DEFAULT_WEB_FETCH_MAX_USES;
    uses += toolUses;
    contentTokens += BigInt(toolUses) * BigInt(tool.maxContentTokens ?? WEB_FETCH_CONTENT_ALLOWANCE_TOKENS);
  }
  return { uses, contentTokens };
}

/** Why the card cannot hold the request's server tools: code execution or MCP servers it gives no allowance. */
function unallowedTool(facts: MessagesBodyFacts, card: RateCardVersion): string | undefined {
  const code = facts.codeExecutionTools[0];
  if (code !== undefined && card.serverToolAllowances?.codeExecution === undefined) {
    return `${code.field}.type: ${code.type} runs code upstream, which the hold cannot bound: the rate card gives ${card.model} no serverToolAllowances.codeExecution`;
  }
  if (facts.mcpServers > 0 && card.serverToolAllowances?.mcpServers === undefined) {
    return `mcp_servers: MCP servers' tools run upstream, which the hold cannot bound: the rate card gives ${card.model} no serverToolAllowances.mcpServers`;
  }
  return undefined;
}

/** Input tokens an allowance admits: each use's result, and the definitions of each tool (or server) it covers. */
function allowedTokens(allowance: ServerToolAllowance | undefined, covered: number): bigint {
  if (allowance === undefined || covered === 0) return 0n;
  return BigInt(allowance.maxUses) * BigInt(allowance.resultTokensPerUse) + BigInt(covered) * BigInt(allowance.definitionTokens);
}

/** What the request's server tools may add: searches, fetches, and code execution and MCP tool calls within the card's allowances. */
export function serverToolBound(facts: MessagesBodyFacts, card: RateCardVersion): ServerToolBound {
  const searches = webSearchBound(facts, card.prices);
  const fetches = webFetchBound(facts);
  const code = facts.codeExecutionTools.length > 0 ? card.serverToolAllowances?.codeExecution : undefined;
  const mcp = facts.mcpServers > 0 ? card.serverToolAllowances?.mcpServers : undefined;
  return {
    uses: searches + fetches.uses + (code?.maxUses ?? 0) + (mcp?.maxUses ?? 0),
    webSearches: searches,
    addedTokens:
      BigInt(facts.definedTools) * BigInt(DEFINED_TOOL_ALLOWANCE_TOKENS) +
      BigInt(searches) * BigInt(WEB_SEARCH_RESULT_ALLOWANCE_TOKENS) +
      fetches.contentTokens +
      allowedTokens(code, facts.codeExecutionTools.length) +
      allowedTokens(mcp, facts.mcpServers),
  };
}

/** The input tokens the request could make the model read, in every sampling step together. */
export function inputBoundTokens(facts: MessagesBodyFacts, tools: ServerToolBound): bigint {
  const perStep =
    BigInt(facts.bodyBytes) +
    BigInt(REQUEST_ALLOWANCE_TOKENS) +
    BigInt(facts.imageBlocks) * BigInt(IMAGE_ALLOWANCE_TOKENS) +
    BigInt(facts.documentBlocks) * BigInt(DOCUMENT_ALLOWANCE_TOKENS) +
    tools.addedTokens +
    // A later step reads the answer so far too: at most max_tokens of it.
    (tools.uses > 0 ? BigInt(facts.maxTokens) : 0n);
  // Each server-tool use may be followed by one more sampling step that reads the whole context again.
  return perStep * BigInt(1 + tools.uses);
}

/** Every complete rate set a call could be priced at: ordinary and fast, each with its long-context rates. */
function rateSets(prices: GatewayPrices): Record<string, number>[] {
  const sets: Prices[] = [prices, ...(prices.fast === undefined ? [] : [prices.fast])];
  return sets.flatMap((set) => {
    const complete = completePrices(set) as unknown as Record<string, number>;
    return set.longContext === undefined ? [complete] : [complete, { ...complete, ...(set.longContext as unknown as Record<string, number>) }];
  });
}

/**
 * For each worst-case bound, the highest rate of the kinds it bounds, in millionths of a credit per
 * unit, over every rate set: kinds sharing a bound share its count, so their highest rate bounds any
 * split of it. A kind without an allowance the hold knows cannot compile (`PriceKind.worstCase`);
 * should one reach here all the same, the call stops rather than be held without it.
 */
function highestRates(prices: GatewayPrices): Map<WorstCaseBound, bigint> {
  const highest = new Map<WorstCaseBound, bigint>();
  const sets = rateSets(prices);
  for (const kind of PRICE_KINDS) {
    if (!WORST_CASE_BOUNDS.includes(kind.worstCase)) throw new Error(`price kind ${kind.usage} has no worst-case allowance the hold knows`);
    const perUnit = MILLIONTHS_PER_CREDIT / BigInt(kind.unitsPerRate);
    for (const set of sets) {
      const rate = BigInt(set[kind.rate] ?? 0) * perUnit;
      if (rate > (highest.get(kind.worstCase) ?? 0n)) highest.set(kind.worstCase, rate);
    }
  }
  return highest;
}

function highestGeo(prices: GatewayPrices): bigint {
  return BigInt(Math.max(BASIS_POINTS_PER_MULTIPLE, ...Object.values(prices.inferenceGeo ?? {})));
}

/** How the request is sent: on its own, or as one request of a Message Batch (priced at the card's `batchBasisPoints`). */
export type HoldMode = 'call' | 'batch';

/**
 * The hold for a request at a rate card version: each worst-case bound of the price-kind table at the
 * highest rate of the kinds it bounds, the mode by the highest rate set and the highest geography (and,
 * for a batch's request, the batch multiplier), rounded up once; or why it cannot be held.
 */
export function worstCaseHold(facts: MessagesBodyFacts, card: RateCardVersion, mode: HoldMode = 'call'): WorstCaseHold {
  const unallowed = unallowedTool(facts, card);
  if (unallowed !== undefined) return { problem: unallowed };
  const tools = serverToolBound(facts, card);
  const bounds: HoldBounds = { inputBound: inputBoundTokens(facts, tools), maxTokens: BigInt(facts.maxTokens), webSearches: BigInt(tools.webSearches) };
  let millionths = 0n;
  for (const [bound, rate] of highestRates(card.prices)) millionths += bounds[bound] * rate;
  const batch = BigInt(mode === 'batch' ? (card.prices.batchBasisPoints ?? BASIS_POINTS_PER_MULTIPLE) : BASIS_POINTS_PER_MULTIPLE);
  const divisor = MILLIONTHS_PER_CREDIT * BASIS_POINTS * BASIS_POINTS;
  const credits = (millionths * highestGeo(card.prices) * batch + divisor - 1n) / divisor;
  if (credits > BigInt(MAX_GATEWAY_HOLD_CREDITS)) return { problem: `the request could cost more than one call may hold (${MAX_GATEWAY_HOLD_CREDITS} credits)` };
  return { credits: Number(credits), bounds };
}

/**
 * The call's worst case in tokens, for a key's `tokensPerMinute` (docs/gateway.md "Rate limits"): the
 * input bound plus `max_tokens`, the two token bounds the credits are held for. Past the exact range
 * it reads as Number.MAX_SAFE_INTEGER, which no limit admits.
 */
export function worstCaseTokens(bounds: HoldBounds): number {
  const tokens = bounds.inputBound + bounds.maxTokens;
  return tokens > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(tokens);
}

/** The tokens a usage report counts against the same bounds: every kind the input bound or `max_tokens` caps. */
export function reportedTokens(usage: UsageCounts): number {
  let tokens = 0;
  for (const kind of PRICE_KINDS) if (kind.worstCase !== 'webSearches') tokens += (usage as unknown as Record<string, number>)[kind.usage] ?? 0;
  return Math.min(tokens, Number.MAX_SAFE_INTEGER);
}
