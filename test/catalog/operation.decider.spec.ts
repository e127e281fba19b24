import { PublishOperation } from '../../src/catalog/operation.commands';
import { operationDecider, publicationInForce } from '../../src/catalog/operation.decider';
import { OperationPublished } from '../../src/catalog/operation.events';
import { DEFAULT_MAX_ATTEMPTS_PER_TURN } from '../../src/catalog/publication.validation';
import { ValidationError } from '../../src/domain/domain.errors';
import { deciderSpec } from '../support/decider-spec';

const spec = deciderSpec(operationDecider);

const publish = (overrides: Partial<PublishOperation['data']> = {}): PublishOperation => ({
  type: 'PublishOperation',
  data: {
    operationId: 'generate-query',
    routing: { provider: 'scripted', model: 'scripted-1' },
    limits: { maxTurns: 4, maxToolCalls: 8, totalTimeMs: 60_000, attemptTimeoutMs: 20_000, maxOutputTokens: 1_024 },
    prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 3_750, cacheReadPerMTok: 300, webSearchPerThousand: 0 },
    creditHold: 500,
    enabled: true,
    publishedAt: '2025-01-01T00:00:00.000Z',
    ...overrides,
  },
});

const published = (version: number, overrides: Partial<OperationPublished['data']> = {}): OperationPublished => ({
  type: 'OperationPublished',
  data: {
    operationId: 'generate-query',
    version,
    routing: { provider: 'scripted', model: 'scripted-1' },
    limits: {
      maxTurns: 4,
      maxToolCalls: 8,
      totalTimeMs: 60_000,
      attemptTimeoutMs: 20_000,
      maxOutputTokens: 1_024,
      maxAttemptsPerTurn: DEFAULT_MAX_ATTEMPTS_PER_TURN,
    },
    prices: { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 3_750, cacheReadPerMTok: 300, webSearchPerThousand: 0 },
    creditHold: 500,
    enabled: true,
    publishedAt: '2025-01-01T00:00:00.000Z',
    ...overrides,
  },
});

describe('README.md "Prices" operation catalog: numbered, immutable publications', () => {
  it('publishes version 1 of a new operation, filling in the default of three attempts per turn', () => {
    const state = spec.given([]).when(publish()).then([published(1)]);
    expect(publicationInForce(state)?.version).toBe(1);
    expect(publicationInForce(state)?.limits.maxAttemptsPerTurn).toBe(3);
  });

  it('numbers each new publication one past the version in force', () => {
    spec
      .given([published(1), published(2, { creditHold: 600 })])
      .when(publish({ creditHold: 700, publishedAt: '2025-02-01T00:00:00.000Z' }))
      .then([published(3, { creditHold: 700, publishedAt: '2025-02-01T00:00:00.000Z' })]);
  });

  it('keeps an earlier version as it was when a later one changes the limits (ATS-PFM-LLM-002-12)', () => {
    const before = spec.given([published(1)]).state();
    const after = spec
      .given([published(1)])
      .when(publish({ limits: { maxTurns: 8, maxToolCalls: 8, totalTimeMs: 60_000, attemptTimeoutMs: 20_000, maxOutputTokens: 1_024 } }))
      .then([published(2, { limits: { ...published(1).data.limits, maxTurns: 8 } })]);
    expect(publicationInForce(before)).toMatchObject({ version: 1, limits: { maxTurns: 4 } });
    expect(publicationInForce(after)).toMatchObject({ version: 2, limits: { maxTurns: 8 } });
  });

  it('writes no new version for a repeated PUT whose terms equal the version in force', () => {
    spec.given([published(1)]).when(publish({ publishedAt: '2025-03-01T00:00:00.000Z' })).thenNothing();
  });

  it('publishes a new version when only the switch changes, so disabling is on the record', () => {
    spec.given([published(1)]).when(publish({ enabled: false })).then([published(2, { enabled: false })]);
  });

  it('knows no publication in force before the first one', () => {
    expect(publicationInForce(spec.given([]).state())).toBeUndefined();
  });

  it('refuses a command for another operation than the stream holds', () => {
    spec.given([published(1)]).when(publish({ operationId: 'other-op' })).thenThrows(ValidationError, { field: 'operationId' });
  });

  it('refuses an invalid publication and writes nothing, naming the field (docs/http.md)', () => {
    spec
      .given([published(1)])
      .when(publish({ creditHold: -1 }))
      .thenThrows(ValidationError, { code: 'validation_failed', field: 'creditHold' });
  });
});
