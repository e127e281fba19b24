import type { Prices } from '../../src/runtime';

/**
 * Claude Sonnet 4.5's list prices with one credit per millionth of a dollar: $3 / MTok input, $15
 * output, 5-minute cache writes 1.25× input ($3.75), 1-hour writes 2× input ($6), cache reads 0.1×
 * ($0.30), web search $10 per 1,000; past 200K input tokens, $6 / $22.50 / $7.50 / $12 / $0.60.
 */
export const SONNET_LIST_PRICES: Prices = {
  inputPerMTok: 3_000_000,
  outputPerMTok: 15_000_000,
  cacheWritePerMTok: 3_750_000,
  cacheWrite1hPerMTok: 6_000_000,
  cacheReadPerMTok: 300_000,
  webSearchPerThousand: 10_000_000,
  longContext: {
    thresholdInputTokens: 200_000,
    inputPerMTok: 6_000_000,
    outputPerMTok: 22_500_000,
    cacheWritePerMTok: 7_500_000,
    cacheWrite1hPerMTok: 12_000_000,
    cacheReadPerMTok: 600_000,
  },
};
