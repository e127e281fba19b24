import { RecordedEvent } from '../../src/event-store/event-store.port';
import { openSqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { UpcasterRegistrationError, UpcasterRegistry, withUpcasting } from '../../src/event-store/upcasting';
import { newEvent } from './event-store.contract';

/** Version 1 stored `cost` in whole credits as a string; version 2 made it `credits: number`; version 3 added `currency`. */
function registry(): UpcasterRegistry {
  return new UpcasterRegistry()
    .register('AttemptPriced', 1, (data) => {
      const { cost, ...rest } = data as { cost: string };
      return { ...rest, credits: Number(cost) };
    })
    .register('AttemptPriced', 2, (data) => ({ ...(data as object), currency: 'credits' }));
}

function stored(type: string, data: unknown, schemaVersion: number): RecordedEvent {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    type,
    data,
    metadata: { schemaVersion, correlationId: 'c-1' },
    streamName: 'invocation-1',
    revision: 0n,
    position: 1n,
    recordedAt: new Date(0).toISOString(),
  };
}

describe('upcasting old schema versions on read', () => {
  it('chains upcasters from the stored version to the current one, raising schemaVersion each step and keeping other metadata', () => {
    const upcast = registry().upcast(stored('AttemptPriced', { turn: 1, cost: '12' }, 1));

    expect(upcast.data).toEqual({ turn: 1, credits: 12, currency: 'credits' });
    expect(upcast.metadata).toEqual({ schemaVersion: 3, correlationId: 'c-1' });
  });

  it('starts the chain at the stored version, so an event already at version 2 is not upcast from 1 again', () => {
    const upcast = registry().upcast(stored('AttemptPriced', { turn: 1, credits: 5 }, 2));

    expect(upcast.data).toEqual({ turn: 1, credits: 5, currency: 'credits' });
  });

  it('returns current-version events and events of other types untouched, as the same object', () => {
    const current = stored('AttemptPriced', { credits: 1, currency: 'credits' }, 3);
    const other = stored('InvocationSettled', { charge: 3 }, 1);

    expect(registry().upcast(current)).toBe(current);
    expect(registry().upcast(other)).toBe(other);
  });

  it('tells writers the current version of a type: one past its last upcaster, else 1', () => {
    expect(registry().currentVersion('AttemptPriced')).toBe(3);
    expect(registry().currentVersion('InvocationSettled')).toBe(1);
  });

  it('refuses a second upcaster for the same step and a step from a version that cannot exist', () => {
    expect(() => registry().register('AttemptPriced', 1, (data) => data)).toThrow(UpcasterRegistrationError);
    expect(() => registry().register('AttemptPriced', 0, (data) => data)).toThrow(UpcasterRegistrationError);
  });

  it('upcasts what a store returns from streams, $all and subscriptions, while the log keeps the bytes it was given', async () => {
    const raw = openSqliteEventStore({ path: ':memory:' });
    const store = withUpcasting(raw, registry());
    try {
      await store.append('invocation-1', [newEvent('AttemptPriced', { cost: '7' }, { schemaVersion: 1 })], { expectedRevision: 'no_stream' });
      let delivered!: (event: RecordedEvent) => void;
      const live = new Promise<RecordedEvent>((resolve) => (delivered = resolve));
      const subscription = store.subscribeToAll((event) => delivered(event));

      const fromStream = (await store.readStream('invocation-1'))[0]!;
      const fromAll = (await store.readAll())[0]!;
      const fromSubscription = await live;
      await subscription.stop();

      for (const event of [fromStream, fromAll, fromSubscription]) {
        expect(event.data).toEqual({ credits: 7, currency: 'credits' });
        expect(event.metadata.schemaVersion).toBe(3);
      }
      expect((await raw.readStream('invocation-1'))[0]!.data).toEqual({ cost: '7' });
    } finally {
      await store.close();
    }
  });
});
