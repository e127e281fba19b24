import { validatePublication } from '../../src/catalog/publication.validation';
import { DEMO_ANTHROPIC_MODEL, demoPublication } from '../../src/demo/demo-catalog';
import { priceAttempt } from '../../src/runtime/pricing';

const usage = { inputTokens: 1_000_000, outputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, webSearchRequests: 0 };

describe('the demo catalog', () => {
  it('routes to the current Sonnet with its own list prices when an Anthropic key is set, at 1 credit = $0.0001', () => {
    const publication = demoPublication('anthropic');
    expect(publication.routing).toEqual({ provider: 'anthropic', model: DEMO_ANTHROPIC_MODEL });
    expect(DEMO_ANTHROPIC_MODEL).toBe('claude-sonnet-5-5');
    // $2 per million input tokens, $4 per million 1-hour cache writes.
    expect(priceAttempt(usage, publication.prices)).toBe(20_000);
    expect(priceAttempt({ ...usage, inputTokens: 0, cacheWrite1hTokens: 1_000_000 }, publication.prices)).toBe(40_000);
  });

  it('keeps the walk-through prices for the offline scripted model', () => {
    const publication = demoPublication('scripted');
    expect(publication.routing.provider).toBe('scripted');
    expect(priceAttempt(usage, publication.prices)).toBe(30_000);
  });

  it.each(['anthropic', 'scripted'] as const)('publishes a valid %s publication', (routing) => {
    expect(() => validatePublication({ ...demoPublication(routing), operationId: 'demo.arithmetic', publishedAt: '2026-12-01T00:00:00.000Z' })).not.toThrow();
  });
});
