/**
 * The price-kind table (src/runtime/price-kinds.ts) is the one place a priced kind of usage is named.
 * These tests add a throwaway kind to it, as a developer adding a new kind would, and check that it
 * reaches every consumer: the publication's validation, the price, the DTOs' validation and OpenAPI
 * schema, the statement's CSV columns and the console's usage tables. Then they check the real table
 * reaches the same places, so a consumer that spelled the kinds out by hand would fail here.
 */
import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import type { RateCardVersion } from '../../src/gateway/rate-card';
import type { PriceKind } from '../../src/runtime/price-kinds';
import { NO_TOOLS } from '../gateway/support/body-facts';

const THROWAWAY = {
  usage: 'throwawayTokens',
  rate: 'throwawayPerMTok',
  unit: 'tokens',
  unitsPerRate: 1_000_000,
  maxRate: 1_000,
  fallback: 'required',
  replaceable: true,
  input: false,
  worstCase: 'maxTokens',
  usageDescription: 'A kind that exists only in this test.',
  rateDescription: 'Credits per million throwaway tokens.',
} as const satisfies PriceKind;

/** The row as a developer would add it who forgot the worst-case allowance. */
const { worstCase: _forgotten, ...WITHOUT_ALLOWANCE } = THROWAWAY;
// @ts-expect-error a kind without a worst-case allowance does not compile into the table
const NOT_A_KIND: PriceKind = WITHOUT_ALLOWANCE;

/** A gateway request of 904 bytes, max_tokens 1,000,000, with one web-search tool of 3 searches. */
const FACTS: MessagesBodyFacts = {
  bodyBytes: 904,
  model: 'm',
  maxTokens: 1_000_000,
  stream: false,
  imageBlocks: 0,
  documentBlocks: 0,
  ...NO_TOOLS,
  webSearchMaxUses: [3],
  definedTools: 1,
};
const NO_RATES = { inputPerMTok: 0, outputPerMTok: 0, cacheWritePerMTok: 0, cacheWrite1hPerMTok: 0, cacheReadPerMTok: 0, webSearchPerThousand: 0 };
const cardAt = (prices: Record<string, number>): RateCardVersion =>
  ({ model: 'm', version: 1, prices, maxOutputTokens: 1_000_000, attemptTimeoutMs: 1, enabled: true, pricedAt: '2026-12-01T00:00:00.000Z' }) as unknown as RateCardVersion;

const RATES = { inputPerMTok: 3, outputPerMTok: 15, cacheWritePerMTok: 4, cacheReadPerMTok: 1 };
const PUBLICATION = {
  operationId: 'op.throwaway',
  routing: { provider: 'scripted', model: 'm' },
  limits: { maxTurns: 2, maxToolCalls: 1, totalTimeMs: 1_000, attemptTimeoutMs: 1_000, maxOutputTokens: 100 },
  creditHold: 10,
  enabled: true,
  publishedAt: '2026-12-01T00:00:00.000Z',
};

/** Loads `load` with the throwaway kind (or `kind`) appended to the table, in a module registry of its own. */
function withThrowawayKind<T>(load: () => T, kind: object = THROWAWAY): T {
  let loaded: T | undefined;
  jest.isolateModules(() => {
    jest.doMock('../../src/runtime/price-kinds', () => {
      const actual = jest.requireActual<typeof import('../../src/runtime/price-kinds')>('../../src/runtime/price-kinds');
      const PRICE_KINDS = [...actual.PRICE_KINDS, kind as typeof THROWAWAY];
      return {
        ...actual,
        PRICE_KINDS,
        USAGE_KINDS: PRICE_KINDS.map((kind) => kind.usage),
        RATE_FIELDS: PRICE_KINDS.map((kind) => kind.rate),
        REPLACEABLE_RATES: PRICE_KINDS.filter((kind) => kind.replaceable).map((kind) => kind.rate),
        INPUT_USAGE_KINDS: PRICE_KINDS.filter((kind) => kind.input).map((kind) => kind.usage),
      };
    });
    loaded = load();
  });
  jest.dontMock('../../src/runtime/price-kinds');
  return loaded!;
}

/** Where @nestjs/swagger lists a DTO's declared properties (`:name` each), which the document is built from. */
const SWAGGER_PROPERTIES_KEY = 'swagger/apiModelPropertiesArray';

function swaggerProperties(dto: { prototype: object }): string[] {
  return ((Reflect.getMetadata(SWAGGER_PROPERTIES_KEY, dto.prototype) as string[] | undefined) ?? []).map((name) => name.slice(1));
}

function dtoProblems(dto: new () => object, body: object): string[] {
  return validateSync(plainToInstance(dto, body)).map((error) => error.property);
}

describe('a price kind added as one row of the price-kind table reaches every place that names kinds', () => {
  it('the publication validation requires its rate and names it by its path', () => {
    const { validatePublication } = withThrowawayKind(() => require('../../src/catalog/publication.validation') as typeof import('../../src/catalog/publication.validation'));
    expect(() => validatePublication({ ...PUBLICATION, prices: RATES })).toThrow(/prices\.throwawayPerMTok/);
    const valid = validatePublication({ ...PUBLICATION, prices: { ...RATES, throwawayPerMTok: 7 } });
    expect((valid.prices as unknown as Record<string, number>).throwawayPerMTok).toBe(7);
  });

  it('the price counts it at its own rate, rounded once with the rest', () => {
    const { priceAttempt } = withThrowawayKind(() => require('../../src/runtime/pricing') as typeof import('../../src/runtime/pricing'));
    const { NO_USAGE } = withThrowawayKind(() => require('../../src/runtime/usage') as typeof import('../../src/runtime/usage'));
    const prices = { ...RATES, cacheWrite1hPerMTok: 4, webSearchPerThousand: 0, throwawayPerMTok: 7 };
    // 1,000,000 throwaway tokens at 7 credits per million, plus 1 input token at 3 per million, rounded up once: 8.
    const usage = { ...NO_USAGE, inputTokens: 1, throwawayTokens: 1_000_000 };
    expect(priceAttempt(usage, prices)).toBe(8);
  });

  it('the publication DTO validates it and the OpenAPI schema describes it, in rate versions and long-context sets', () => {
    const dto = withThrowawayKind(() => require('../../src/http/dto/publication.dto') as typeof import('../../src/http/dto/publication.dto'));
    expect(swaggerProperties(dto.PricesDto)).toContain('throwawayPerMTok');
    expect(swaggerProperties(dto.LongContextRatesDto)).toContain('throwawayPerMTok');
    expect(dtoProblems(dto.PricesDto, RATES)).toEqual(['throwawayPerMTok']);
    expect(dtoProblems(dto.PricesDto, { ...RATES, throwawayPerMTok: 1_001 })).toEqual(['throwawayPerMTok']);
    expect(dtoProblems(dto.PricesDto, { ...RATES, throwawayPerMTok: 1_000 })).toEqual([]);
  });

  it('the usage read view documents it', () => {
    const views = withThrowawayKind(() => require('../../src/http/dto/read-views.dto') as typeof import('../../src/http/dto/read-views.dto'));
    expect(swaggerProperties(views.UsageDto)).toContain('throwawayTokens');
  });

  it('the statement CSV gives it a column', () => {
    const { usageStatementCsv } = withThrowawayKind(() => require('../../src/http/usage-statement.csv') as typeof import('../../src/http/usage-statement.csv'));
    const header = usageStatementCsv({ organizationId: 'o', from: '2026-12-01', to: '2026-12-01', groupBy: ['day'], rows: [] } as never).split('\r\n')[0]!;
    expect(header.split(',')).toContain('throwawayTokens');
  });

  it('the gateway’s worst-case hold bounds it by its allowance: here max_tokens at its rate', () => {
    const { worstCaseHold } = withThrowawayKind(() => require('../../src/gateway/worst-case-hold') as typeof import('../../src/gateway/worst-case-hold'));
    // 1,000,000 throwaway tokens (max_tokens) at 7 credits per million.
    expect(worstCaseHold(FACTS, cardAt({ ...NO_RATES, throwawayPerMTok: 7 })).credits).toBe(7);
  });

  it('a kind added without a worst-case allowance is never held as nothing: the table does not compile, and the hold stops naming it', () => {
    expect(NOT_A_KIND).not.toHaveProperty('worstCase');
    const { worstCaseHold } = withThrowawayKind(() => require('../../src/gateway/worst-case-hold') as typeof import('../../src/gateway/worst-case-hold'), WITHOUT_ALLOWANCE);
    expect(() => worstCaseHold(FACTS, cardAt({ ...NO_RATES, throwawayPerMTok: 7 }))).toThrow(/throwawayTokens has no worst-case allowance/);
  });

  it('the console shows it in the usage tables, read as 0 where an answer lacks it', () => {
    const { usageByKind } = withThrowawayKind(() => require('../../console/src/api/types') as typeof import('../../console/src/api/types'));
    expect(usageByKind({ inputTokens: 5 })).toContainEqual(['throwawayTokens', 0]);
    expect(usageByKind({ inputTokens: 5, throwawayTokens: 9 })).toContainEqual(['throwawayTokens', 9]);
  });
});

describe('every kind of the real price-kind table reaches the same places', () => {
  const { PRICE_KINDS } = jest.requireActual<typeof import('../../src/runtime/price-kinds')>('../../src/runtime/price-kinds');
  const dto = jest.requireActual<typeof import('../../src/http/dto/publication.dto')>('../../src/http/dto/publication.dto');
  const views = jest.requireActual<typeof import('../../src/http/dto/read-views.dto')>('../../src/http/dto/read-views.dto');
  const { NO_USAGE } = jest.requireActual<typeof import('../../src/runtime/usage')>('../../src/runtime/usage');
  const { priceAttempt } = jest.requireActual<typeof import('../../src/runtime/pricing')>('../../src/runtime/pricing');
  const { worstCaseHold } = jest.requireActual<typeof import('../../src/gateway/worst-case-hold')>('../../src/gateway/worst-case-hold');

  it.each(PRICE_KINDS.map((kind) => [kind.usage, kind] as const))('%s: the worst-case hold is the price of its bound, to the credit, when it alone has a rate', (_name, kind) => {
    const card = cardAt({ ...NO_RATES, [kind.rate]: 1_000_000 });
    const hold = worstCaseHold(FACTS, card);
    const atBound = { ...NO_USAGE, [kind.usage]: Number(hold.bounds![kind.worstCase]) };
    expect(hold.credits).toBeGreaterThan(0);
    expect(priceAttempt(atBound, card.prices)).toBe(hold.credits);
  });

  it.each(PRICE_KINDS.map((kind) => [kind.usage, kind] as const))('%s: a rate in the DTO and its schema, a count in the usage view, a price of its own', (_name, kind) => {
    expect(swaggerProperties(dto.PricesDto)).toContain(kind.rate);
    if (kind.replaceable) expect(swaggerProperties(dto.LongContextRatesDto)).toContain(kind.rate);
    expect(swaggerProperties(views.UsageDto)).toContain(kind.usage);
    expect((NO_USAGE as unknown as Record<string, number>)[kind.usage]).toBe(0);
    // One quote's worth of units at a rate of 1 credit costs exactly 1 credit, whatever else is priced.
    const prices = { inputPerMTok: 0, outputPerMTok: 0, cacheWritePerMTok: 0, cacheWrite1hPerMTok: 0, cacheReadPerMTok: 0, webSearchPerThousand: 0, [kind.rate]: 1 };
    expect(priceAttempt({ ...NO_USAGE, [kind.usage]: kind.unitsPerRate }, prices as never)).toBe(1);
  });
});
