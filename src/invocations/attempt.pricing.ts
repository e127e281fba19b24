/** The price of one provider attempt (SPEC §7), computed exactly with integer arithmetic. */
import type { Prices } from '../runtime/conversation.types';
import type { Usage } from '../runtime/provider.port';

const TOKENS_PER_MTOK = 1_000_000n;

/**
 * `ceil((in·inputPerMTok + out·outputPerMTok + cw·cacheWritePerMTok + cr·cacheReadPerMTok) / 1e6)`
 * in integer credits; 0 for an attempt that reported no usage. BigInt only inside: products of token
 * counts and prices pass 2^53, and a rounded float would misprice. A result past
 * Number.MAX_SAFE_INTEGER comes back unsafe, for the caller to refuse.
 */
export function priceAttemptCredits(usage: Usage | undefined, prices: Prices): number {
  if (usage === undefined) return 0;
  const weighted =
    BigInt(usage.inputTokens) * BigInt(prices.inputPerMTok) +
    BigInt(usage.outputTokens) * BigInt(prices.outputPerMTok) +
    BigInt(usage.cacheWriteTokens) * BigInt(prices.cacheWritePerMTok) +
    BigInt(usage.cacheReadTokens) * BigInt(prices.cacheReadPerMTok);
  return Number((weighted + TOKENS_PER_MTOK - 1n) / TOKENS_PER_MTOK);
}
