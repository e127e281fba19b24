/**
 * On a server store a subscription's read is I/O the pump's probe does not see. A keyed repeat waits
 * for its first request to end through such a subscription (the log watcher), so the pump could count
 * the process idle while the ending was on its way and fire the repeat's 60 s timer first: a CI run
 * failed PostgreSQL seed 2 with KeyedRequestInProgressError on it (src/simulation/README.md). The pump
 * now fires no timer for idleness until every subscription of the live process has handed over the
 * log's head. Here the inner store is the embedded one and a handler that waits on the test stands in
 * for the read in flight.
 */
import { randomUUID } from 'node:crypto';
import type { EventStore, NewEvent } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import { ActivityProbe, EventLoopPump } from '../../src/simulation/event-loop-pump';
import { FaultyEventStore } from '../../src/simulation/faulty-event-store';
import { Prng } from '../../src/simulation/prng';
import { SimulationClock } from '../../src/simulation/simulation-clock';
import { NO_STORE_FAULTS } from '../support/no-store-faults';

const something = (): NewEvent[] => [{ id: randomUUID(), type: 'Something', data: {}, metadata: { schemaVersion: 1 } }];

const turns = async (count: number): Promise<void> => {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('the simulator on a server store: no timer fires for idleness while a subscription is short of the head', () => {
  let inner: EventStore;
  let store: FaultyEventStore;
  let probe: ActivityProbe;

  beforeEach(async () => {
    inner = await openEventStore('sqlite::memory:');
    probe = new ActivityProbe();
    store = new FaultyEventStore(inner, NO_STORE_FAULTS, probe);
  });

  afterEach(() => inner.close());

  /** A subscription whose handler holds each event until the test lets it go. */
  const heldSubscription = () => {
    const held: (() => void)[] = [];
    const subscription = store.subscribeToAll(() => new Promise<void>((release) => held.push(release)));
    return { subscription, releaseAll: () => held.splice(0).forEach((release) => release()), held: () => held.length };
  };

  it('reports a subscription short of the head until it has handled the head, and a stopped or dead one as no obstacle', async () => {
    expect(await store.subscriptionsAtHead()).toBe(true);
    const { subscription, releaseAll, held } = heldSubscription();
    await store.append('s-1', something(), { expectedRevision: 'no_stream' });
    while (held() === 0) await turns(1);
    expect(await store.subscriptionsAtHead()).toBe(false);
    releaseAll();
    await turns(5);
    expect(subscription.lastPosition).toBe(await inner.headPosition());
    expect(await store.subscriptionsAtHead()).toBe(true);

    await store.append('s-1', something(), { expectedRevision: 0n });
    while (held() === 0) await turns(1);
    expect(await store.subscriptionsAtHead()).toBe(false);
    releaseAll();
    await subscription.stop();
    const other = heldSubscription();
    await store.append('s-1', something(), { expectedRevision: 1n });
    while (other.held() === 0) await turns(1);
    store.die();
    expect(await store.subscriptionsAtHead()).toBe(true);
    other.releaseAll();
  });

  it('fires the pending timer only once the subscription has caught up (the keyed repeat’s 60 s wait, PostgreSQL seed 2)', async () => {
    const clock = new SimulationClock(0);
    const pump = new EventLoopPump(clock, probe, new Prng(1, 'latency'), true, () => store.subscriptionsAtHead());
    const { releaseAll, held } = heldSubscription();
    await store.append('s-1', something(), { expectedRevision: 'no_stream' });
    while (held() === 0) await turns(1);
    let fired = false;
    clock.setTimer(60_000, () => (fired = true));
    const running = pump.runUntil({ done: () => fired, maxTurns: 1_000_000, deadlineMs: 120_000 });
    // Far more than QUIET_TURNS_BEFORE_TIMER quiet turns while the delivery is held.
    await turns(200);
    const firedWhileBehind = fired;
    releaseAll();
    expect(await running).toBe('done');
    expect(firedWhileBehind).toBe(false);
    expect(clock.now()).toBe(60_000);
  });
});
