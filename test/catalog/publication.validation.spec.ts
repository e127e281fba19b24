import {
  MAX_ATTEMPT_TIMEOUT_MS,
  MAX_ATTEMPTS_PER_TURN_LIMIT,
  MAX_CREDIT_HOLD_CREDITS,
  MAX_MODEL_NAME_CHARS,
  MAX_OUTPUT_TOKENS_LIMIT,
  MAX_PRICE_PER_MTOK_CREDITS,
  MAX_TOOL_CALLS_LIMIT,
  MAX_TOTAL_TIME_MS,
  MAX_TURNS_LIMIT,
  validatePublication,
} from '../../src/catalog/publication.validation';
import { ValidationError } from '../../src/domain/domain.errors';

const valid = () => ({
  operationId: 'demo.arithmetic',
  routing: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
  limits: { maxTurns: 4, maxToolCalls: 8, totalTimeMs: 60_000, attemptTimeoutMs: 20_000, maxOutputTokens: 1_024, maxAttemptsPerTurn: 2 },
  prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheReadPerMTok: 300 },
  creditHold: 500,
  enabled: true,
  publishedAt: '2025-01-01T00:00:00.000Z',
});

type Body = ReturnType<typeof valid>;

function refusal(mutate: (body: Record<string, any>) => void): ValidationError {
  const body: Record<string, any> = structuredClone(valid());
  mutate(body);
  try {
    validatePublication(body);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

describe('docs/http.md a bad publication is refused with the field named', () => {
  const cases: [string, string, (body: Record<string, any>) => void][] = [
    ['a missing turn limit', 'limits.maxTurns', (b) => delete b.limits.maxTurns],
    ['a negative turn limit', 'limits.maxTurns', (b) => (b.limits.maxTurns = -1)],
    ['a zero turn limit', 'limits.maxTurns', (b) => (b.limits.maxTurns = 0)],
    ['a fractional turn limit', 'limits.maxTurns', (b) => (b.limits.maxTurns = 2.5)],
    ['a turn limit given as text', 'limits.maxTurns', (b) => (b.limits.maxTurns = '4')],
    ['a turn limit past MAX_TURNS_LIMIT', 'limits.maxTurns', (b) => (b.limits.maxTurns = MAX_TURNS_LIMIT + 1)],
    ['a negative tool budget', 'limits.maxToolCalls', (b) => (b.limits.maxToolCalls = -1)],
    ['a tool budget past MAX_TOOL_CALLS_LIMIT', 'limits.maxToolCalls', (b) => (b.limits.maxToolCalls = MAX_TOOL_CALLS_LIMIT + 1)],
    ['a missing time budget', 'limits.totalTimeMs', (b) => delete b.limits.totalTimeMs],
    ['a time budget past MAX_TOTAL_TIME_MS', 'limits.totalTimeMs', (b) => (b.limits.totalTimeMs = MAX_TOTAL_TIME_MS + 1)],
    ['a zero attempt timeout', 'limits.attemptTimeoutMs', (b) => (b.limits.attemptTimeoutMs = 0)],
    ['an attempt timeout past MAX_ATTEMPT_TIMEOUT_MS', 'limits.attemptTimeoutMs', (b) => (b.limits.attemptTimeoutMs = MAX_ATTEMPT_TIMEOUT_MS + 1)],
    ['a NaN output-token limit', 'limits.maxOutputTokens', (b) => (b.limits.maxOutputTokens = Number.NaN)],
    ['an output-token limit past MAX_OUTPUT_TOKENS_LIMIT', 'limits.maxOutputTokens', (b) => (b.limits.maxOutputTokens = MAX_OUTPUT_TOKENS_LIMIT + 1)],
    ['zero attempts per turn', 'limits.maxAttemptsPerTurn', (b) => (b.limits.maxAttemptsPerTurn = 0)],
    ['attempts per turn past MAX_ATTEMPTS_PER_TURN_LIMIT', 'limits.maxAttemptsPerTurn', (b) => (b.limits.maxAttemptsPerTurn = MAX_ATTEMPTS_PER_TURN_LIMIT + 1)],
    ['missing limits', 'limits', (b) => delete b.limits],
    ['a missing input price', 'prices.inputPerMTok', (b) => delete b.prices.inputPerMTok],
    ['a negative output price', 'prices.outputPerMTok', (b) => (b.prices.outputPerMTok = -5)],
    ['a fractional cache-write price', 'prices.cacheWritePerMTok', (b) => (b.prices.cacheWritePerMTok = 0.5)],
    ['a cache-read price past MAX_PRICE_PER_MTOK_CREDITS', 'prices.cacheReadPerMTok', (b) => (b.prices.cacheReadPerMTok = MAX_PRICE_PER_MTOK_CREDITS + 1)],
    ['missing prices', 'prices', (b) => delete b.prices],
    ['a fractional credit hold', 'creditHold', (b) => (b.creditHold = 1.5)],
    ['a negative credit hold', 'creditHold', (b) => (b.creditHold = -1)],
    ['a credit hold past exact integers', 'creditHold', (b) => (b.creditHold = 2 ** 53)],
    ['a credit hold past MAX_CREDIT_HOLD_CREDITS', 'creditHold', (b) => (b.creditHold = MAX_CREDIT_HOLD_CREDITS + 1)],
    ['a missing credit hold', 'creditHold', (b) => delete b.creditHold],
    ['an unknown provider', 'routing.provider', (b) => (b.routing.provider = 'openai')],
    ['an empty model', 'routing.model', (b) => (b.routing.model = '')],
    ['a blank model', 'routing.model', (b) => (b.routing.model = '   ')],
    ['a model name past MAX_MODEL_NAME_CHARS', 'routing.model', (b) => (b.routing.model = 'm'.repeat(MAX_MODEL_NAME_CHARS + 1))],
    ['missing routing', 'routing', (b) => delete b.routing],
    ['a switch given as text', 'enabled', (b) => (b.enabled = 'yes')],
    ['a missing switch', 'enabled', (b) => delete b.enabled],
    ['a publication time that is not ISO-8601', 'publishedAt', (b) => (b.publishedAt = 'yesterday')],
    ['an operation id with a space', 'operationId', (b) => (b.operationId = 'generate query')],
  ];

  it.each(cases)('refuses %s, naming %s', (_name, field, mutate) => {
    const error = refusal(mutate);
    expect(error.code).toBe('validation_failed');
    expect(error.field).toBe(field);
    expect(error.issues).toEqual([expect.objectContaining({ field })]);
  });

  it('names every bad field at once, so a publisher fixes them in one go', () => {
    const error = refusal((b) => {
      b.limits.maxTurns = -1;
      b.prices.inputPerMTok = -1;
      b.routing.provider = 'nope';
    });
    expect(error.issues.map((issue) => issue.field).sort()).toEqual(['limits.maxTurns', 'prices.inputPerMTok', 'routing.provider']);
  });

  it('reports a missing object once, not once per field inside it', () => {
    expect(refusal((b) => delete b.routing).issues).toEqual([{ field: 'routing', message: 'is required' }]);
  });

  it('refuses a body that is not an object', () => {
    expect(() => validatePublication([])).toThrow(ValidationError);
  });

  it('accepts a zero tool budget: an operation may answer without tools', () => {
    const body: Body = valid();
    expect(validatePublication({ ...body, limits: { ...body.limits, maxToolCalls: 0 } }).limits.maxToolCalls).toBe(0);
  });

  it('accepts zero prices and a zero hold for a free route', () => {
    const body = valid();
    const prices = { inputPerMTok: 0, outputPerMTok: 0, cacheWritePerMTok: 0, cacheReadPerMTok: 0 };
    expect(validatePublication({ ...body, prices, creditHold: 0 })).toMatchObject({ prices, creditHold: 0 });
  });

  it('fills in three attempts per turn when the publisher names none (docs/rules.md)', () => {
    const body = valid();
    const { maxAttemptsPerTurn: _omitted, ...limits } = body.limits;
    expect(validatePublication({ ...body, limits }).limits.maxAttemptsPerTurn).toBe(3);
  });

  it('keeps only the fields a publication has, so nothing else reaches the event', () => {
    const result = validatePublication({ ...valid(), version: 99, prompt: 'secret', limits: { ...valid().limits, extra: 1 } });
    expect(result).not.toHaveProperty('version');
    expect(result).not.toHaveProperty('prompt');
    expect(result.limits).not.toHaveProperty('extra');
  });
});
