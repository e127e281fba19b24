import { IllegalTransitionError } from '../../src/domain/domain.errors';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { availableCredits } from '../../src/accounts/account.state';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import type { EventStore, ReadStreamOptions } from '../../src/event-store/event-store.port';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { grant, placeHold, settleHold } from '../accounts/account.fixtures';

const ACCOUNT = accountStreamName('acme');

/** The store, counting the stream reads made through it and where each began. */
function countingReads(store: EventStore): { store: EventStore; reads: bigint[] } {
  const reads: bigint[] = [];
  const counted = new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'readStream') return Reflect.get(target, property, receiver) as unknown;
      return (streamName: string, options?: ReadStreamOptions) => {
        reads.push(options?.fromRevision ?? 0n);
        return target.readStream(streamName, options);
      };
    },
  });
  return { store: counted, reads };
}

describe('AggregateRepository — a cached state decides, the expected revision keeps it honest (issue 7, docs/lifecycle.md)', () => {
  let store: SqliteEventStore;

  beforeEach(() => {
    store = openSqliteEventStore({ path: ':memory:' });
  });

  afterEach(() => store.close());

  it('reads nothing before deciding on a stream whose state it keeps, so a command costs the same on a long stream', async () => {
    const { store: counted, reads } = countingReads(store);
    const repository = new AggregateRepository(counted);
    await repository.handle(ACCOUNT, accountDecider, grant(1_000_000));
    for (let index = 0; index < 200; index++) {
      await repository.handle(ACCOUNT, accountDecider, placeHold(`inv-${index}`, 10));
      await repository.handle(ACCOUNT, accountDecider, settleHold(`inv-${index}`, 7));
    }
    // One read: the cold load of the first command (an empty stream).
    expect(reads).toEqual([0n]);
    expect(await store.streamRevision(ACCOUNT)).toBe(400n);
  });

  it('decides again on the stream as read when another process appended since, and reads only what it missed', async () => {
    const { store: counted, reads } = countingReads(store);
    const here = new AggregateRepository(counted);
    const elsewhere = new AggregateRepository(store);
    await here.handle(ACCOUNT, accountDecider, grant(100, 'grant-1'));
    await elsewhere.handle(ACCOUNT, accountDecider, placeHold('inv-elsewhere', 60));
    reads.length = 0;

    // Here the cache still says 100 available; the account in fact has 40, so this hold must be refused.
    await expect(here.handle(ACCOUNT, accountDecider, placeHold('inv-here', 50))).rejects.toBeInstanceOf(AdmissionRefusedError);
    expect(reads).toEqual([1n]);
    expect(await store.streamRevision(ACCOUNT)).toBe(1n);
  });

  it('never refuses from a stale cache: a hold refused here is admitted once the stream shows the credits another process granted', async () => {
    const here = new AggregateRepository(store);
    const elsewhere = new AggregateRepository(store);
    await here.handle(ACCOUNT, accountDecider, grant(10, 'grant-1'));
    await elsewhere.handle(ACCOUNT, accountDecider, grant(1_000, 'grant-2'));

    const { state, events } = await here.handle(ACCOUNT, accountDecider, placeHold('inv-1', 500));
    expect(events.map((event) => event.type)).toEqual(['HoldPlaced']);
    expect(availableCredits(state)).toBe(510);
  });

  it('confirms a decision that appends nothing on the stream as read, so an idempotent no-op never hides a change', async () => {
    const here = new AggregateRepository(store);
    const elsewhere = new AggregateRepository(store);
    await here.handle(ACCOUNT, accountDecider, grant(1_000));
    await elsewhere.handle(ACCOUNT, accountDecider, placeHold('inv-1', 100));

    // The cache here knows no hold for inv-1 (a no-op); the stream has one, so it is settled.
    const { events, state } = await here.handle(ACCOUNT, accountDecider, settleHold('inv-1', 40));
    expect(events.map((event) => event.type)).toEqual(['HoldSettled']);
    expect(state.charged).toBe(40);
  });

  it('starts a stream the caller just named from the initial state without reading it, and still finds one that exists', async () => {
    const { store: counted, reads } = countingReads(store);
    const repository = new AggregateRepository(counted);
    const estimate = {
      type: 'EstimateInvocation' as const,
      data: { invocationId: 'inv-1', operationId: 'op', organizationId: 'acme', publication: null, estimatedAt: '2025-01-01T00:00:00.000Z' },
    };
    await repository.handle('invocation-inv-1', invocationDecider, estimate, { newStream: true });
    expect(reads).toEqual([]);

    // Another repository (another process) believes the same stream is new: the append's no_stream
    // check fails, the command is decided again on the stream as read, and the transition is refused.
    const other = new AggregateRepository(store);
    await expect(other.handle('invocation-inv-1', invocationDecider, estimate, { newStream: true })).rejects.toThrow(IllegalTransitionError);
    expect(await store.streamRevision('invocation-inv-1')).toBe(0n);
  });

  describe('commands queued on one stream behind its append in flight — decided together, one append', () => {
    it('writes the holds of many concurrent callers on one account in a few appends, each caller told its own outcome', async () => {
      const repository = new AggregateRepository(store);
      await repository.handle(ACCOUNT, accountDecider, grant(1_000));
      const before = store.groupCommitStats;

      const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, index) => repository.handle(ACCOUNT, accountDecider, placeHold(`inv-${index}`, 100))));

      const admitted = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(admitted).toHaveLength(10);
      expect(refused.every((outcome) => outcome.reason instanceof AdmissionRefusedError)).toBe(true);
      // All twenty were queued before the first decision ran: one append holds the ten admitted.
      expect(store.groupCommitStats.appends - before.appends).toBe(1);
      // Each caller sees the state after its own decision, at its own revision.
      const revisions = admitted.map((outcome) => (outcome as PromiseFulfilledResult<{ revision: bigint | undefined }>).value.revision);
      expect(revisions).toEqual(Array.from({ length: 10 }, (_, index) => BigInt(index + 1)));
      expect(availableCredits((await repository.load(ACCOUNT, accountDecider)).state)).toBe(0);
    });

    it('splits a batch too big for one append and decides each half again, so no caller pays for the others', async () => {
      type Note = { readonly type: 'Noted'; readonly data: { readonly index: number } };
      const noter = {
        initialState: () => 0,
        evolve: (count: number) => count + 1,
        decide: (command: { readonly notes: number }): Note[] => Array.from({ length: command.notes }, (_, index) => ({ type: 'Noted', data: { index } })),
      };
      const repository = new AggregateRepository(store);
      await repository.handle('notes-1', noter, { notes: 1 });
      // Ten callers of 300 events each: 3,000 together, over the store's 1,000 per append.
      const outcomes = await Promise.all(Array.from({ length: 10 }, () => repository.handle('notes-1', noter, { notes: 300 })));
      expect(outcomes.map((outcome) => outcome.events.length)).toEqual(Array(10).fill(300));
      expect(await store.streamRevision('notes-1')).toBe(3_000n);
      // A single decision past the bound still fails, for its caller alone.
      await expect(repository.handle('notes-1', noter, { notes: 1_001 })).rejects.toThrow(/at most 1000 events/);
    });

    it('decides a batch that appends nothing again on the stream as read, so refusals never stand on a stale cache', async () => {
      const { store: counted, reads } = countingReads(store);
      const here = new AggregateRepository(counted);
      const elsewhere = new AggregateRepository(store);
      await here.handle(ACCOUNT, accountDecider, grant(10, 'grant-1'));
      await elsewhere.handle(ACCOUNT, accountDecider, grant(1_000, 'grant-2'));
      reads.length = 0;

      // The cache says 10 available: both holds would be refused on it; the stream says 1,010.
      const [first, second] = await Promise.all([here.handle(ACCOUNT, accountDecider, placeHold('inv-a', 500)), here.handle(ACCOUNT, accountDecider, placeHold('inv-b', 500))]);
      expect([first.events.length, second.events.length]).toEqual([1, 1]);
      expect(reads.length).toBeGreaterThan(0);
    });
  });

  describe('handleAll — several commands decided in order and appended together', () => {
    it('decides each command on the state the earlier ones led to and appends all their events in one append', async () => {
      const repository = new AggregateRepository(store);
      await repository.handle(ACCOUNT, accountDecider, grant(1_000));
      const appendsBefore = store.groupCommitStats.appends;
      const { events, state } = await repository.handleAll(ACCOUNT, accountDecider, [
        placeHold('inv-1', 600),
        // Decided on the state after the first hold: 400 left, so 500 more would be refused.
        (current) => (availableCredits(current) >= 500 ? placeHold('inv-2', 500) : settleHold('inv-1', 600)),
      ]);
      expect(events.map((event) => event.type)).toEqual(['HoldPlaced', 'HoldSettled']);
      expect(state.charged).toBe(600);
      expect(store.groupCommitStats.appends - appendsBefore).toBe(1);
      expect(await store.streamRevision(ACCOUNT)).toBe(2n);
    });

    it('appends nothing of any command when one of them is refused', async () => {
      const repository = new AggregateRepository(store);
      await repository.handle(ACCOUNT, accountDecider, grant(1_000));
      await expect(
        repository.handleAll(ACCOUNT, accountDecider, [placeHold('inv-1', 600), placeHold('inv-2', 600)]),
      ).rejects.toBeInstanceOf(AdmissionRefusedError);
      expect(await store.streamRevision(ACCOUNT)).toBe(0n);
    });
  });
});
