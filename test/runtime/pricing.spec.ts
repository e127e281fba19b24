import { priceAttempt, type Prices } from '../../src/runtime';
import { usage } from './fixtures';

const RATES: Prices = { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheReadPerMTok: 300_000 };

describe('BR-CAP-PFM-LLM-002-07 each attempt is priced on its own usage in integer credits', () => {
  it('applies the docs/rules.md rule 07 formula to all four token kinds', () => {
    // 1000·3 + 200·15 + 100·3.75 + 1000·0.3 = 6675 credits exactly.
    expect(priceAttempt(usage(1_000, 200, 100, 1_000), RATES)).toBe(6_675);
  });

  it('rounds a fraction of a credit up, because an attempt that used anything is never free', () => {
    const cheap: Prices = { inputPerMTok: 1, outputPerMTok: 0, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
    expect(priceAttempt(usage(1), cheap)).toBe(1);
    expect(priceAttempt(usage(1_000_000), cheap)).toBe(1);
    expect(priceAttempt(usage(1_000_001), cheap)).toBe(2);
  });

  it('charges nothing for an attempt that reported no usage (ATS-PFM-LLM-002-07)', () => {
    expect(priceAttempt(undefined, RATES)).toBe(0);
    expect(priceAttempt(usage(0, 0, 0, 0), RATES)).toBe(0);
  });

  it('stays exact where floating point would not, because the products exceed 2^53', () => {
    const big: Prices = { inputPerMTok: 9_007_199, outputPerMTok: 0, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
    // 1_000_000_000_001 · 9_007_199 = 9_007_199_000_009_007_199 millionths → ceil = 9_007_199_000_010 credits.
    expect(priceAttempt(usage(1_000_000_000_001), big)).toBe(9_007_199_000_010);
  });

  it('refuses negative, fractional or unsafe inputs instead of pricing garbage', () => {
    expect(() => priceAttempt(usage(-1), RATES)).toThrow(RangeError);
    expect(() => priceAttempt(usage(1.5), RATES)).toThrow(RangeError);
    expect(() => priceAttempt(usage(Number.MAX_SAFE_INTEGER + 1), RATES)).toThrow(RangeError);
    expect(() => priceAttempt(usage(1), { ...RATES, outputPerMTok: -2 })).toThrow(RangeError);
    expect(() => priceAttempt(undefined, { ...RATES, cacheReadPerMTok: 0.5 })).toThrow(RangeError);
  });

  it('refuses a price that would itself leave the safe integer range', () => {
    const huge: Prices = { inputPerMTok: Number.MAX_SAFE_INTEGER, outputPerMTok: 0, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
    expect(() => priceAttempt(usage(Number.MAX_SAFE_INTEGER), huge)).toThrow(RangeError);
  });
});
