import {
  MAX_LONG_CONTEXT_THRESHOLD_TOKENS,
  MAX_PRICE_PER_MTOK_CREDITS,
  MAX_WEB_SEARCH_PER_THOUSAND_CREDITS,
  validatePublication,
} from '../../src/catalog/publication.validation';
import { ValidationError } from '../../src/domain/domain.errors';

const LONG = {
  thresholdInputTokens: 200_000,
  inputPerMTok: 6_000,
  outputPerMTok: 22_500,
  cacheWritePerMTok: 7_500,
  cacheWrite1hPerMTok: 12_000,
  cacheReadPerMTok: 600,
};

const body = (prices: Record<string, unknown>) => ({
  operationId: 'research.answer',
  routing: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
  limits: { maxTurns: 4, maxToolCalls: 8, totalTimeMs: 60_000, attemptTimeoutMs: 20_000, maxOutputTokens: 1_024 },
  prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300, ...prices },
  creditHold: 500,
  enabled: true,
  publishedAt: '2025-01-01T00:00:00.000Z',
});

function fieldsRefused(prices: Record<string, unknown>): string[] {
  try {
    validatePublication(body(prices));
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).issues.map((issue) => issue.field).sort();
  }
  throw new Error('expected a ValidationError');
}

describe('README.md "Prices" the rate version: 1-hour cache writes, web searches and long-context rates', () => {
  it('stores a complete rate version, filling 1-hour writes with the 5-minute rate and web searches with 0 when left out', () => {
    expect(validatePublication(body({})).prices).toEqual({
      inputPerMTok: 3_000,
      outputPerMTok: 15_000,
      cacheWritePerMTok: 3_750,
      cacheWrite1hPerMTok: 3_750,
      cacheReadPerMTok: 300,
      webSearchPerThousand: 0,
    });
  });

  it('keeps the 1-hour write rate, the web-search rate and the long-context rates the publisher gave', () => {
    const prices = validatePublication(body({ cacheWrite1hPerMTok: 6_000, webSearchPerThousand: 10_000, longContext: LONG })).prices;
    expect(prices).toEqual({
      inputPerMTok: 3_000,
      outputPerMTok: 15_000,
      cacheWritePerMTok: 3_750,
      cacheWrite1hPerMTok: 6_000,
      cacheReadPerMTok: 300,
      webSearchPerThousand: 10_000,
      longContext: LONG,
    });
  });

  it.each([
    ['a negative 1-hour write rate', { cacheWrite1hPerMTok: -1 }, ['prices.cacheWrite1hPerMTok']],
    ['a fractional web-search rate', { webSearchPerThousand: 2.5 }, ['prices.webSearchPerThousand']],
    ['a web-search rate past its bound', { webSearchPerThousand: MAX_WEB_SEARCH_PER_THOUSAND_CREDITS + 1 }, ['prices.webSearchPerThousand']],
    ['long-context rates that are not an object', { longContext: 7 }, ['prices.longContext']],
    ['a long-context threshold of 0 tokens', { longContext: { ...LONG, thresholdInputTokens: 0 } }, ['prices.longContext.thresholdInputTokens']],
    ['a long-context threshold past its bound', { longContext: { ...LONG, thresholdInputTokens: MAX_LONG_CONTEXT_THRESHOLD_TOKENS + 1 } }, ['prices.longContext.thresholdInputTokens']],
    ['a long-context rate past its bound', { longContext: { ...LONG, outputPerMTok: MAX_PRICE_PER_MTOK_CREDITS + 1 } }, ['prices.longContext.outputPerMTok']],
  ])('refuses %s, naming the field', (_what, prices, fields) => {
    expect(fieldsRefused(prices)).toEqual(fields);
  });

  it('names every missing long-context rate at once, because they replace all the ordinary rates together', () => {
    expect(fieldsRefused({ longContext: { thresholdInputTokens: 200_000 } })).toEqual([
      'prices.longContext.cacheReadPerMTok',
      'prices.longContext.cacheWrite1hPerMTok',
      'prices.longContext.cacheWritePerMTok',
      'prices.longContext.inputPerMTok',
      'prices.longContext.outputPerMTok',
    ]);
  });

  it('names each bad field of the new rates beside the old ones in one refusal', () => {
    expect(fieldsRefused({ inputPerMTok: -1, cacheWrite1hPerMTok: 'x', webSearchPerThousand: -5, longContext: { ...LONG, cacheReadPerMTok: null } })).toEqual([
      'prices.cacheWrite1hPerMTok',
      'prices.inputPerMTok',
      'prices.longContext.cacheReadPerMTok',
      'prices.webSearchPerThousand',
    ]);
  });
});
