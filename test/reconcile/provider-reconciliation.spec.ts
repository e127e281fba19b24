import { bucketOf, compareUsage, normaliseBucket } from '../../src/reconcile/provider-reconciliation';
import { NO_USAGE } from '../../src/runtime/usage';

describe('reconciliation buckets and differences', () => {
  it('places an instant in its UTC hour or day, and reads a report’s bucket start in the same form', () => {
    const ms = Date.parse('2026-12-01T09:59:59.999Z');
    expect(bucketOf(ms, '1h')).toBe('2026-12-01T09:00:00Z');
    expect(bucketOf(ms, '1d')).toBe('2026-12-01T00:00:00Z');
    expect(normaliseBucket('2026-12-01T00:00:00.000Z')).toBe('2026-12-01T00:00:00Z');
    expect(normaliseBucket('2026-12-01T01:00:00+01:00')).toBe('2026-12-01T00:00:00Z');
  });

  it('reports a model or bucket one side lacks as a difference from zero, kind by kind, and sums rows of the same key first', () => {
    const bucket = '2026-12-01T00:00:00Z';
    const ledger = [
      { bucket, model: 'm', usage: { ...NO_USAGE, inputTokens: 5 } },
      { bucket, model: 'm', usage: { ...NO_USAGE, inputTokens: 5 } },
    ];
    const provider = [
      { bucket, model: 'm', usage: { ...NO_USAGE, inputTokens: 10 } },
      { bucket, model: 'other', usage: { ...NO_USAGE, outputTokens: 3 } },
    ];
    expect(compareUsage(ledger, provider)).toEqual([{ bucket, model: 'other', kind: 'outputTokens', ledger: 0, provider: 3, difference: -3 }]);
    expect(compareUsage(ledger, provider, 3)).toEqual([]);
  });
});
