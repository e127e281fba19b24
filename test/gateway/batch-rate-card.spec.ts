/**
 * Message Batches on the rate card (docs/gateway.md "The rate card"): `prices.batchBasisPoints` is an
 * integer within its named bounds, compared as part of the prices, and refused naming its field.
 */
import { ValidationError } from '../../src/domain/domain.errors';
import { MAX_BATCH_BASIS_POINTS, MIN_BATCH_BASIS_POINTS, rateCardDecider, type PriceGatewayModel } from '../../src/gateway/rate-card';
import { samePrices } from '../../src/runtime/pricing';
import { SONNET_LIST_PRICES } from '../support/list-prices';

const price = (prices: Record<string, unknown>): PriceGatewayModel => ({
  type: 'PriceGatewayModel',
  data: { model: 'claude-x', prices, maxOutputTokens: 1_000, attemptTimeoutMs: 1_000, enabled: true, pricedAt: '2026-12-03T00:00:00.000Z' },
});
const decide = (prices: Record<string, unknown>) => rateCardDecider.decide(price(prices), rateCardDecider.initialState());
const fieldsOf = (prices: Record<string, unknown>): Record<string, string> => {
  try {
    decide(prices);
  } catch (error) {
    if (error instanceof ValidationError) return Object.fromEntries(error.issues.map((f) => [f.field, f.message]));
    throw error;
  }
  throw new Error('not refused');
};

describe('Message Batches: the rate card’s batchBasisPoints', () => {
  it('keeps Anthropic’s half price (5,000 basis points) on the version it writes', () => {
    const [event] = decide({ ...SONNET_LIST_PRICES, batchBasisPoints: 5_000 });
    expect(event!.data.prices.batchBasisPoints).toBe(5_000);
  });

  it(`refuses a multiplier that is not an integer within ${MIN_BATCH_BASIS_POINTS}..${MAX_BATCH_BASIS_POINTS} basis points, naming prices.batchBasisPoints`, () => {
    for (const bad of [0, MAX_BATCH_BASIS_POINTS + 1, 2_500.5, '5000']) expect(fieldsOf({ ...SONNET_LIST_PRICES, batchBasisPoints: bad })).toHaveProperty(['prices.batchBasisPoints']);
    // A batch never dearer than the same call: the batch's hold at batch rates relies on it.
    expect(MAX_BATCH_BASIS_POINTS).toBe(10_000);
  });

  it('tells two versions apart by their batch multiplier alone', () => {
    expect(samePrices({ ...SONNET_LIST_PRICES, batchBasisPoints: 5_000 }, { ...SONNET_LIST_PRICES, batchBasisPoints: 5_000 })).toBe(true);
    expect(samePrices({ ...SONNET_LIST_PRICES, batchBasisPoints: 5_000 }, SONNET_LIST_PRICES)).toBe(false);
  });
});
