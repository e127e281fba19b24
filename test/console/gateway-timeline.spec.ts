import { timelineFromEvents, timelineFromProgress } from '../../console/src/invocation/timeline';
import type { LoggedEvent } from '../../console/src/api/types';
import type { InvocationProgress } from '../../src/http/invocation-progress';

const event = (revision: number, type: string, data: Record<string, unknown>): LoggedEvent => ({
  id: `e${revision}`,
  type,
  revision: String(revision),
  position: String(100 + revision),
  recordedAt: '2026-12-01T00:00:00.000Z',
  data,
  metadata: {},
});
const publication = { version: 1, creditHold: 46 };
const progress = (revision: number, type: InvocationProgress['type'], fields: Partial<InvocationProgress> = {}): InvocationProgress => ({
  type,
  revision,
  time: '2026-12-01T00:00:00.000Z',
  invocationId: 'i1',
  state: 'estimated',
  ...fields,
});

describe('the console’s lifecycle timeline says whose gateway call it is and that it went upstream, from the log and from the event stream alike (docs/gateway.md)', () => {
  it('reads the log’s events of a gateway call', () => {
    const entries = timelineFromEvents([
      event(0, 'InvocationEstimated', { publication, gateway: { keyId: 'k1', keyName: 'ci-bot', model: 'claude-sonnet-5-5', rateCardVersion: 1, stream: true }, estimatedAt: '2026-12-01T00:00:00.000Z' }),
      event(1, 'InvocationDispatched', { dispatchedAt: '2026-12-01T00:00:00.001Z' }),
    ]);
    expect(entries.map((entry) => entry.summary)).toEqual(['gateway call by key "ci-bot" to claude-sonnet-5-5, rate card version 1, hold 46 credits', 'the call was sent upstream']);
  });

  it('reads the event stream’s messages of a gateway call in the same words', () => {
    const entries = timelineFromProgress([
      progress(0, 'InvocationEstimated', { gateway: { keyId: 'k1', keyName: 'ci-bot', model: 'claude-sonnet-5-5' }, publicationVersion: 1, estimate: 46 }),
      progress(1, 'InvocationDispatched', { state: 'dispatched' }),
    ]);
    expect(entries.map((entry) => entry.summary)).toEqual(['gateway call by key "ci-bot" to claude-sonnet-5-5, rate card version 1, hold 46 credits', 'the call was sent upstream']);
  });

  it('leaves an operation’s lines as they were', () => {
    const fromLog = timelineFromEvents([event(0, 'InvocationEstimated', { publication, estimatedAt: '2026-12-01T00:00:00.000Z' }), event(1, 'InvocationDispatched', { dispatchedAt: '2026-12-01T00:00:00.001Z' })]);
    const fromStream = timelineFromProgress([progress(0, 'InvocationEstimated', { publicationVersion: 1, estimate: 46 }), progress(1, 'InvocationDispatched', { state: 'dispatched' })]);
    for (const entries of [fromLog, fromStream]) {
      expect(entries.map((entry) => entry.summary)).toEqual(['publication version 1, hold 46 credits', 'the request was captured; the conversation starts']);
    }
  });
});
