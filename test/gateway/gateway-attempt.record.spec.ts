/**
 * What a gateway call's attempt is recorded as (docs/gateway.md "Settlement"): usage the upstream
 * reported malformed, or whose price leaves the exact-integer range, is unknown usage naming its
 * field; texts the attempt record would refuse are left out; nothing upstream sends makes it throw.
 */
import type { Publication } from '../../src/catalog/operation.events';
import { gatewayAttemptFacts } from '../../src/gateway/gateway-attempt.record';
import type { GatewayCallOutcome } from '../../src/gateway/gateway-call.port';
import { readAttempt } from '../../src/invocations/invocation.validation';
import { mapUsage, MAX_REPORTED_USAGE_COUNT, readUsageReport } from '../../src/providers/anthropic/anthropic-response.mapper';
import { NO_USAGE } from '../../src/runtime/usage';

const PUBLICATION: Publication = {
  version: 1,
  routing: { provider: 'anthropic', model: 'claude-held' },
  limits: { maxTurns: 1, maxToolCalls: 0, totalTimeMs: 60_000, attemptTimeoutMs: 60_000, maxOutputTokens: 64_000, maxAttemptsPerTurn: 1 },
  prices: { inputPerMTok: 3_000_000, outputPerMTok: 15_000_000, cacheWritePerMTok: 3_750_000, cacheWrite1hPerMTok: 6_000_000, cacheReadPerMTok: 300_000, webSearchPerThousand: 10_000_000 },
  creditHold: 4_189,
  enabled: true,
  publishedAt: '2026-12-01T00:00:00.000Z',
};
const outcome = (overrides: Partial<GatewayCallOutcome>): GatewayCallOutcome => ({
  startedAtMs: 0,
  durationMs: 5,
  classification: 'ok',
  httpStatus: 200,
  timedOut: false,
  callerDisconnected: false,
  ...overrides,
});

describe('the usage upstream reported, read so that a malformed field is named, never priced (docs/gateway.md "Settlement")', () => {
  it.each([
    ['a count of 1e20', { input_tokens: 10, output_tokens: 1e20 }, 'output_tokens'],
    ['a negative count', { input_tokens: -1, output_tokens: 5 }, 'input_tokens'],
    ['a fractional count', { input_tokens: 10, output_tokens: 9.5 }, 'output_tokens'],
    ['a count as text', { input_tokens: 10, output_tokens: '9000' }, 'output_tokens'],
    ['a count past 2^53', { input_tokens: 10, cache_read_input_tokens: 2 ** 53 + 2 }, 'cache_read_input_tokens'],
    ['a count past MAX_REPORTED_USAGE_COUNT', { input_tokens: 10, output_tokens: MAX_REPORTED_USAGE_COUNT + 1 }, 'output_tokens'],
    ['2^53−1 cache-read tokens, past MAX_REPORTED_USAGE_COUNT', { input_tokens: 10, cache_read_input_tokens: Number.MAX_SAFE_INTEGER }, 'cache_read_input_tokens'],
    ['web searches past MAX_REPORTED_USAGE_COUNT', { input_tokens: 10, server_tool_use: { web_search_requests: MAX_REPORTED_USAGE_COUNT + 1 } }, 'server_tool_use.web_search_requests'],
    ['a breakdown that is not an object', { input_tokens: 10, cache_creation: 7 }, 'cache_creation'],
    ['a nested count that is malformed', { input_tokens: 10, cache_creation: { ephemeral_1h_input_tokens: -5 } }, 'cache_creation.ephemeral_1h_input_tokens'],
    ['web searches as an array', { input_tokens: 10, server_tool_use: { web_search_requests: [1] } }, 'server_tool_use.web_search_requests'],
    ['a mode that is not text', { input_tokens: 10, speed: 1 }, 'speed'],
    ['usage that is not an object', 'lots', 'usage'],
    ['usage that is an array', [], 'usage'],
  ])('names %s and keeps no usage', (_case, usage, field) => {
    expect(readUsageReport(usage)).toEqual({ malformedField: field });
  });

  it('reads null counters and objects as none, and an absent usage as no report', () => {
    expect(readUsageReport({ input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: null, cache_creation: null, server_tool_use: null, service_tier: null })).toEqual({
      usage: { ...NO_USAGE, inputTokens: 10, outputTokens: 5 },
    });
    expect(readUsageReport(undefined)).toEqual({});
    expect(readUsageReport(null)).toEqual({});
  });

  it('reads a count of exactly MAX_REPORTED_USAGE_COUNT as usage; an operation provider’s lenient mapUsage keeps a count above it as reported', () => {
    expect(readUsageReport({ input_tokens: 10, cache_read_input_tokens: MAX_REPORTED_USAGE_COUNT })).toEqual({
      usage: { ...NO_USAGE, inputTokens: 10, cacheReadTokens: MAX_REPORTED_USAGE_COUNT },
    });
    expect(mapUsage({ input_tokens: 10, cache_read_input_tokens: Number.MAX_SAFE_INTEGER })).toEqual({ ...NO_USAGE, inputTokens: 10, cacheReadTokens: Number.MAX_SAFE_INTEGER });
  });
});

describe('a gateway attempt is recorded from whatever upstream answered, and never throws (docs/gateway.md "Settlement")', () => {
  it('records malformed usage as unknown: no usage, priced 0, the field named', () => {
    expect(gatewayAttemptFacts(outcome({ malformedUsage: 'output_tokens' }), PUBLICATION)).toEqual({ model: 'claude-held', httpStatus: 200, malformedUsage: 'output_tokens', priceCredits: 0 });
  });

  it('names the field whose count drove the price past the exact-integer range (web_search_requests of 9e15)', () => {
    const usage = { ...NO_USAGE, inputTokens: 10, webSearchRequests: 9e15 };
    expect(gatewayAttemptFacts(outcome({ usage }), PUBLICATION)).toMatchObject({ malformedUsage: 'server_tool_use.web_search_requests', priceCredits: 0 });
    expect(gatewayAttemptFacts(outcome({ usage }), PUBLICATION)).not.toHaveProperty('usage');
  });

  it('finds a malformed count in usage handed to it directly, and a mode name too long to record', () => {
    expect(gatewayAttemptFacts(outcome({ usage: { ...NO_USAGE, outputTokens: -3 } }), PUBLICATION)).toMatchObject({ malformedUsage: 'output_tokens' });
    expect(gatewayAttemptFacts(outcome({ usage: { ...NO_USAGE, inferenceGeo: 'x'.repeat(65) } }), PUBLICATION)).toMatchObject({ malformedUsage: 'inference_geo' });
  });

  it('keeps the held model, and leaves out a request id or status the record would refuse, so the attempt is always recordable', () => {
    const facts = gatewayAttemptFacts(outcome({ responseModel: 'm'.repeat(201), providerRequestId: ' ', httpStatus: 799, usage: { ...NO_USAGE, inputTokens: 1 } }), PUBLICATION);
    expect(facts).toEqual({ model: 'claude-held', usage: { ...NO_USAGE, inputTokens: 1 }, priceCredits: 3 });
    const record = { turn: 1, retry: 0, startedAtMs: 0, durationMs: 5, waitBeforeMs: 0, classification: 'ok' as const, timedOut: false, ...facts };
    expect(() => readAttempt(record, PUBLICATION.limits)).not.toThrow();
  });
});
