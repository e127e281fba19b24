import type { RecordedEvent } from '../../src/event-store/event-store.port';
import { InvocationProgressReader } from '../../src/http/invocation-progress';

const recorded = (revision: number, type: string, data: Record<string, unknown>): RecordedEvent => ({
  id: `00000000-0000-4000-8000-00000000000${revision}`,
  type,
  data,
  metadata: { schemaVersion: 1 },
  streamName: 'invocation-i1',
  revision: BigInt(revision),
  position: BigInt(100 + revision),
  recordedAt: '2026-12-01T00:00:09.000Z',
});

const estimated = recorded(0, 'InvocationEstimated', {
  invocationId: 'i1',
  operationId: 'op',
  organizationId: 'acme',
  publication: { version: 3, creditHold: 700, routing: { provider: 'scripted', model: 'm' }, limits: {}, prices: {}, enabled: true, publishedAt: '2026-11-30T00:00:00.000Z' },
  idempotencyKey: 'order#1',
  requestFingerprint: 'f'.repeat(64),
  estimatedAt: '2026-12-01T00:00:00.000Z',
});

describe('docs/http.md event-stream messages: the public progress of an invocation, never the stored event', () => {
  it('keeps the idempotency key, the fingerprint and the publication out, and says the estimate and version', () => {
    const message = new InvocationProgressReader('i1').read(estimated);
    expect(message).toEqual({
      type: 'InvocationEstimated',
      revision: 0,
      time: '2026-12-01T00:00:00.000Z',
      invocationId: 'i1',
      state: 'estimated',
      operationId: 'op',
      organizationId: 'acme',
      publicationVersion: 3,
      estimate: 700,
    });
  });

  it('names a gateway call’s key and model, never more of its facts than a follower needs (docs/gateway.md)', () => {
    const gateway = recorded(0, 'InvocationEstimated', {
      ...(estimated.data as Record<string, unknown>),
      operationId: 'gateway.anthropic-messages',
      gateway: { keyId: 'k1', keyName: 'ci-bot', model: 'claude-sonnet-5-5', rateCardVersion: 3, stream: true },
    });
    expect(new InvocationProgressReader('i1').read(gateway)).toMatchObject({
      operationId: 'gateway.anthropic-messages',
      gateway: { keyId: 'k1', keyName: 'ci-bot', model: 'claude-sonnet-5-5' },
      publicationVersion: 3,
      estimate: 700,
    });
    expect(new InvocationProgressReader('i1').read(estimated)).not.toHaveProperty('gateway');
  });

  it('names the refusal reason, and a cancellation request leaves the state where it was', () => {
    const reader = new InvocationProgressReader('i1');
    reader.read(estimated);
    expect(reader.read(recorded(1, 'InvocationReserved', { creditHold: 700, reservedAt: '2026-12-01T00:00:01.000Z' }))).toMatchObject({ state: 'reserved', creditHold: 700 });
    expect(reader.read(recorded(2, 'InvocationCancellationRequested', { requestedBy: 'org_member of acme', requestedAt: '2026-12-01T00:00:02.000Z' }))).toEqual({
      type: 'InvocationCancellationRequested',
      revision: 2,
      time: '2026-12-01T00:00:02.000Z',
      invocationId: 'i1',
      state: 'reserved',
      requestedBy: 'org_member of acme',
    });
    const refusedReader = new InvocationProgressReader('i1');
    refusedReader.read(estimated);
    expect(
      refusedReader.read(recorded(1, 'InvocationRefused', { reason: 'insufficient_credits', figures: { available: 3, creditHold: 700 }, transition: 2, refusedAt: '2026-12-01T00:00:01.000Z' })),
    ).toMatchObject({ state: 'refused', refusalReason: 'insufficient_credits' });
  });

  it('says of a failure its fault and figures, and of the settlement its charge and transition', () => {
    const reader = new InvocationProgressReader('i1');
    reader.read(estimated);
    const figures = { turnsUsed: 2, toolCallsUsed: 1, spentCredits: 40, attemptCount: 3, attemptsTruncated: false, usageReported: true, usageTotals: { inputTokens: 1 } };
    expect(reader.read(recorded(1, 'InvocationFailed', { ...figures, fault: 'overloaded', failedAt: '2026-12-01T00:00:05.000Z' }))).toEqual({
      type: 'InvocationFailed',
      revision: 1,
      time: '2026-12-01T00:00:05.000Z',
      invocationId: 'i1',
      state: 'failed',
      outcome: 'failed',
      fault: 'overloaded',
      turnsUsed: 2,
      toolCallsUsed: 1,
      spentCredits: 40,
      attemptCount: 3,
    });
    expect(reader.read(recorded(2, 'InvocationSettled', { transition: 10, chargeCredits: 40, heldCredits: 700, settledBy: 'runtime', settledAt: '2026-12-01T00:00:06.000Z' }))).toMatchObject({
      state: 'settled',
      charge: 40,
      settlementTransition: 10,
    });
  });

  it('says of a type it does not know only that it happened, at its commit time', () => {
    const reader = new InvocationProgressReader('i1');
    reader.read(estimated);
    expect(reader.read(recorded(1, 'SomethingNewer', { secret: 'x' }))).toEqual({ type: 'SomethingNewer', revision: 1, time: '2026-12-01T00:00:09.000Z', invocationId: 'i1', state: 'estimated' });
  });
});
