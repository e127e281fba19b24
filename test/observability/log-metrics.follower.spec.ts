import { newEventId } from '../../src/event-store/event-id.generator';
import type { EventStore } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import { LedgerMetrics } from '../../src/observability/ledger-metrics';
import { LogMetricsFollower } from '../../src/observability/log-metrics.follower';
import { parseMetrics, samples } from './support/metrics-text';

const event = (type: string, data: object) => ({ id: newEventId(), type, data, metadata: { schemaVersion: 1 } });

describe('README.md the metrics follower counts what the log records after its start', () => {
  let store: EventStore;

  beforeEach(async () => {
    store = await openEventStore('sqlite::memory:');
  });

  afterEach(() => store.close());

  it('labels an invocation begun before it started from the stream’s first event, and counts only what follows', async () => {
    await store.append(
      'invocation-early',
      [
        event('InvocationEstimated', { invocationId: 'early', operationId: 'op.early', organizationId: 'acme', publication: { routing: { provider: 'scripted', model: 'm' } } }),
        event('InvocationCompleted', { outcome: 'completed' }),
      ],
      { expectedRevision: 'no_stream' },
    );
    const metrics = new LedgerMetrics({ organizationLabels: false });
    const follower = new LogMetricsFollower(store, metrics);
    await follower.start();
    const { position } = await store.append('invocation-early', [event('InvocationSettled', { chargeCredits: 12 })], { expectedRevision: 1n });
    await follower.caughtUpTo(position);
    const families = parseMetrics(await metrics.registry.metrics());
    expect(samples(families, 'ledger_invocations_total', ['operation', 'outcome'])).toEqual(new Map([['operation=op.early,outcome=completed', 1]]));
    expect(samples(families, 'ledger_credits_charged_total', ['operation'])).toEqual(new Map([['operation=op.early', 12]]));
    expect(follower.skipped).toBe(0);
    await follower.stop();
  });

  it('reports the errors its subscription meets on its own, so a follower that stopped does not stop silently', async () => {
    let onError: ((error: Error, willRetry: boolean) => void) | undefined;
    // The real store, except that the test holds the subscription's error callback.
    const failing: EventStore = Object.assign(Object.create(store) as EventStore, {
      subscribeToAll: (...[handler, options]: Parameters<EventStore['subscribeToAll']>) => {
        onError = options?.onError;
        return store.subscribeToAll(handler, options);
      },
    });
    const reported: Array<[string, boolean]> = [];
    const follower = new LogMetricsFollower(failing, new LedgerMetrics({ organizationLabels: false }), (error, willRetry) => reported.push([error.message, willRetry]));
    await follower.start();
    onError?.(new Error('connection lost'), true);
    onError?.(new Error('access denied'), false);
    expect(reported).toEqual([
      ['connection lost', true],
      ['access denied', false],
    ]);
    await follower.stop();
  });

  it('counts nothing for a final event whose stream has no estimate to label it, and goes on to the next', async () => {
    const metrics = new LedgerMetrics({ organizationLabels: false });
    const follower = new LogMetricsFollower(store, metrics);
    await follower.start();
    await store.append('invocation-orphan', [event('InvocationSettled', { chargeCredits: 5 })], { expectedRevision: 'no_stream' });
    const { position } = await store.append(
      'invocation-next',
      [
        event('InvocationEstimated', { invocationId: 'next', operationId: 'op.next', organizationId: 'acme', publication: null }),
        event('InvocationRefused', { reason: 'unknown_operation' }),
      ],
      { expectedRevision: 'no_stream' },
    );
    await follower.caughtUpTo(position);
    const families = parseMetrics(await metrics.registry.metrics());
    expect(samples(families, 'ledger_invocations_total', ['operation', 'outcome'])).toEqual(new Map([['operation=op.next,outcome=refused', 1]]));
    await follower.stop();
  });
});
