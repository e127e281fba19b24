import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { ACCOUNT_SNAPSHOT_EVERY_EVENTS, accountSnapshot } from '../../src/accounts/account.snapshot';
import { balanceOf } from '../../src/accounts/account.state';
import { SNAPSHOT_EVENT_TYPE, snapshotStreamName, type SnapshotCodec } from '../../src/aggregates/aggregate-snapshots';
import { AggregateRepository, type AggregateDecider } from '../../src/aggregates/aggregate.repository';
import { newEventId } from '../../src/event-store/event-id.generator';
import type { EventStore, NewEvent, ReadStreamOptions } from '../../src/event-store/event-store.port';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { grant, placeHold, settleHold, AT } from '../accounts/account.fixtures';

type Counted = { readonly type: 'Counted'; readonly data: { readonly by: number } };
type Count = { readonly type: 'Count'; readonly by: number };

const counterCodec: SnapshotCodec<number> = {
  version: 1,
  everyEvents: 3,
  encode: (total) => ({ total }),
  decode: (data) => {
    const total = (data as { total?: unknown }).total;
    if (typeof total !== 'number') throw new TypeError('not a counter');
    return total;
  },
};

const counter: AggregateDecider<Count, Counted, number> = {
  decide: (command) => [{ type: 'Counted', data: { by: command.by } }],
  evolve: (total, event) => total + event.data.by,
  initialState: () => 0,
  snapshot: counterCodec,
};

/** The store, recording where each read of `streamName` began. */
function readsOf(store: EventStore, streamName: string): { store: EventStore; reads: bigint[] } {
  const reads: bigint[] = [];
  const counted = new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'readStream') return Reflect.get(target, property, receiver) as unknown;
      return (name: string, options?: ReadStreamOptions) => {
        if (name === streamName) reads.push(options?.fromRevision ?? 0n);
        return target.readStream(name, options);
      };
    },
  });
  return { store: counted, reads };
}

async function settled(): Promise<void> {
  // Snapshots are appended without being awaited: let their group commit run.
  for (let turn = 0; turn < 3; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('aggregate snapshots — a cold load folds at most everyEvents events, whatever the history (issue 7)', () => {
  let store: SqliteEventStore;

  beforeEach(() => {
    store = openSqliteEventStore({ path: ':memory:' });
  });

  afterEach(() => store.close());

  it('writes a snapshot each time the stream crosses a multiple of everyEvents, in its own stream', async () => {
    const repository = new AggregateRepository(store);
    for (let index = 1; index <= 7; index++) await repository.handle('counter-1', counter, { type: 'Count', by: index });
    await settled();
    const snapshots = await store.readStream(snapshotStreamName('counter-1'));
    expect(snapshots.map((event) => [event.type, event.data])).toEqual([
      [SNAPSHOT_EVENT_TYPE, { codecVersion: 1, revision: '2', state: { total: 6 } }],
      [SNAPSHOT_EVENT_TYPE, { codecVersion: 1, revision: '5', state: { total: 21 } }],
    ]);
  });

  it('starts a cold load from the latest snapshot and folds only the events after it, to the same state', async () => {
    const writer = new AggregateRepository(store);
    for (let index = 1; index <= 7; index++) await writer.handle('counter-1', counter, { type: 'Count', by: index });
    await settled();

    const { store: counted, reads } = readsOf(store, 'counter-1');
    const cold = await new AggregateRepository(counted).load('counter-1', counter);
    expect(cold).toEqual({ state: 28, revision: 6n });
    expect(reads).toEqual([6n]);
  });

  it('ignores a snapshot of another codec version, or one it cannot decode, and folds the stream from the start', async () => {
    const writer = new AggregateRepository(store);
    for (let index = 1; index <= 4; index++) await writer.handle('counter-1', counter, { type: 'Count', by: index });
    await settled();
    const { store: counted, reads } = readsOf(store, 'counter-1');
    const newer = { ...counter, snapshot: { ...counterCodec, version: 2 } };
    expect(await new AggregateRepository(counted).load('counter-1', newer)).toEqual({ state: 10, revision: 3n });

    await store.append(snapshotStreamName('counter-1'), [{ id: newEventId(), type: SNAPSHOT_EVENT_TYPE, data: { codecVersion: 1, revision: '3', state: 'garbage' }, metadata: { schemaVersion: 1 } }], { expectedRevision: 'any' });
    expect(await new AggregateRepository(counted).load('counter-1', counter)).toEqual({ state: 10, revision: 3n });
    expect(reads).toEqual([0n, 0n]);
  });

  it('restores an account exactly: totals, open holds and idempotency entries', () => {
    let state = accountDecider.initialState();
    for (const event of [
      { type: 'CreditsGranted', data: { credits: 1_000, reason: 'welcome', idempotencyKey: 'g-1', grantedAt: AT } },
      { type: 'HoldPlaced', data: { invocationId: 'inv-1', credits: 300, placedAt: AT } },
      { type: 'HoldPlaced', data: { invocationId: 'inv-2', credits: 200, placedAt: AT } },
      { type: 'HoldSettled', data: { invocationId: 'inv-1', heldCredits: 300, chargedCredits: 120, settledAt: AT } },
    ] as const) {
      state = accountDecider.evolve(state, event);
    }
    const restored = accountSnapshot.decode(JSON.parse(JSON.stringify(accountSnapshot.encode(state))));
    expect(restored).toEqual(state);
    expect(() => accountSnapshot.decode({ ...(accountSnapshot.encode(state) as object), charged: 1.5 })).toThrow(TypeError);
  });

  it('admits on a long account after a restart reading only the events since its last snapshot', async () => {
    const account = accountStreamName('acme');
    const first = new AggregateRepository(store);
    await first.handle(account, accountDecider, grant(1_000_000_000));
    // Fill to one event short of the snapshot point, as an earlier process would have.
    const pairs = (ACCOUNT_SNAPSHOT_EVERY_EVENTS - 2) / 2;
    const history: NewEvent[] = [];
    for (let index = 0; index < pairs; index++) {
      history.push({ id: newEventId(), type: 'HoldPlaced', data: { invocationId: `old-${index}`, credits: 10, placedAt: AT }, metadata: { schemaVersion: 1 } });
      history.push({ id: newEventId(), type: 'HoldSettled', data: { invocationId: `old-${index}`, heldCredits: 10, chargedCredits: 3, settledAt: AT }, metadata: { schemaVersion: 1 } });
    }
    for (let start = 0; start < history.length; start += 1_000) {
      await store.append(account, history.slice(start, start + 1_000), { expectedRevision: 'any' });
    }
    first.forget();
    await first.handle(account, accountDecider, placeHold('inv-crossing', 10));
    await settled();

    const { store: counted, reads } = readsOf(store, account);
    const restarted = new AggregateRepository(counted);
    const { state } = await restarted.handle(account, accountDecider, settleHold('inv-crossing', 4));
    expect(reads).toEqual([BigInt(ACCOUNT_SNAPSHOT_EVERY_EVENTS)]);
    expect(balanceOf(state)).toMatchObject({ charged: pairs * 3 + 4, held: 0, running: 0 });
  });
});
