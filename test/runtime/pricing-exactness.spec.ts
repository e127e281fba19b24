import { priceAttempt } from '../../src/runtime/pricing';
import type { Prices } from '../../src/runtime/conversation.types';

const prices: Prices = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 };
const usage = (inputTokens: number, outputTokens = 0, cacheWriteTokens = 0, cacheReadTokens = 0) => ({
  inputTokens,
  outputTokens,
  cacheWriteTokens,
  cacheWrite1hTokens: 0,
  cacheReadTokens,
  webSearchRequests: 0,
});

describe('docs/rules.md rule 07 an attempt’s price: ceil of the weighted token sum over a million, in integer credits', () => {
  it('prices an attempt that reported no usage at 0', () => {
    expect(priceAttempt(undefined, prices)).toBe(0);
  });

  it('rounds any fraction of a credit up', () => {
    expect(priceAttempt(usage(1), prices)).toBe(1);
    expect(priceAttempt(usage(1_234, 567), prices)).toBe(13);
  });

  it('charges an exact multiple exactly', () => {
    expect(priceAttempt(usage(1_000_000), prices)).toBe(3_000);
  });

  it('weighs all four token kinds at their own rates', () => {
    // 1,000·3,000 + 1,000·15,000 + 1,000·3,750 + 1,000·300 = 22,050,000 → 22.05 → 23
    expect(priceAttempt(usage(1_000, 1_000, 1_000, 1_000), prices)).toBe(23);
  });

  it('stays exact where floating point would round a fraction away', () => {
    // (1e10 + 1)(1e9 + 1) / 1e6 = 10,000,000,011,000.000001: the float product drops the last unit.
    const big: Prices = { inputPerMTok: 1_000_000_001, outputPerMTok: 0, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
    expect(Math.ceil(((1e10 + 1) * 1_000_000_001) / 1e6)).toBe(10_000_000_011_000);
    expect(priceAttempt(usage(1e10 + 1), big)).toBe(10_000_000_011_001);
  });
});
