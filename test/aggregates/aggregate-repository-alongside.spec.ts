import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import type { AccountState } from '../../src/accounts/account.state';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import { AggregateRepository, type Alongside } from '../../src/aggregates/aggregate.repository';
import type { AppendResult, AppendTogetherOptions, EventStore, StreamAppend } from '../../src/event-store/event-store.port';
import { openSqliteEventStore, type SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store';
import type { InvocationCommand } from '../../src/invocations/invocation.commands';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import type { InvocationState } from '../../src/invocations/invocation.state';
import { grant, placeHold, settleHold } from '../accounts/account.fixtures';
import { attemptRecord, complete, dispatch, estimate, PRICE_A, PUBLICATION, recordAttempt, reserve, settle } from '../invocations/invocation.fixtures';

const ACCOUNT = accountStreamName('acme');
const stream = (invocationId: string): string => `invocation-${invocationId}`;
const estimateOf = (invocationId: string): InvocationCommand => {
  const command = estimate() as Extract<InvocationCommand, { type: 'EstimateInvocation' }>;
  return { ...command, data: { ...command.data, invocationId } };
};
/** An invocation's estimate before its hold and its reservation and dispatch after, on a stream no one wrote. */
const held = (invocationId: string): Alongside<InvocationCommand, InvocationState> => ({
  streamName: stream(invocationId),
  decider: invocationDecider,
  before: [estimateOf(invocationId)],
  after: [reserve(), dispatch()],
  context: { correlationId: invocationId, newStream: true },
});

/** What the store was asked to write, one entry per append or append across streams, in the order asked. */
interface Written {
  readonly together: boolean;
  readonly parts: ReadonlyArray<readonly [string, readonly string[]]>;
}

/** The store, recording its appends; `acrossStreams: false` hides appendTogether, as EventStoreDB's adapter has none. */
function recording(store: EventStore, acrossStreams = true): { store: EventStore; written: Written[] } {
  const written: Written[] = [];
  const types = (part: StreamAppend) => [part.streamName, part.events.map((event) => event.type)] as const;
  const recorded: EventStore = {
    append: (streamName, events, options) => {
      written.push({ together: false, parts: [types({ streamName, events, expectedRevision: options.expectedRevision })] });
      return store.append(streamName, events, options);
    },
    ...(acrossStreams
      ? {
          appendTogether: (parts: readonly StreamAppend[], options?: AppendTogetherOptions): Promise<AppendResult[]> => {
            written.push({ together: true, parts: parts.map(types) });
            return store.appendTogether!(parts, options);
          },
        }
      : {}),
    readStream: (...args) => store.readStream(...args),
    streamRevision: (...args) => store.streamRevision(...args),
    readAll: (...args) => store.readAll(...args),
    subscribeToAll: (...args) => store.subscribeToAll(...args),
    headPosition: () => store.headPosition(),
    close: () => store.close(),
  };
  return { store: recorded, written };
}

describe('AggregateRepository.handleAlongside — a command and another stream’s events in one commit (docs/gateway.md "One commit before the dispatch")', () => {
  let store: SqliteEventStore;

  beforeEach(async () => {
    store = openSqliteEventStore({ path: ':memory:' });
    await new AggregateRepository(store).handle(ACCOUNT, accountDecider, grant(1_000));
  });

  afterEach(() => store.close());

  it('writes the other stream’s `before`, the command, then its `after` in one append across streams, and keeps both states', async () => {
    const { store: recorded, written } = recording(store);
    const repository = new AggregateRepository(recorded);

    const handled = await repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-1', 100), held('inv-1'));

    expect(written).toEqual([
      { together: true, parts: [[stream('inv-1'), ['InvocationEstimated']], [ACCOUNT, ['HoldPlaced']], [stream('inv-1'), ['InvocationReserved', 'InvocationDispatched']]] },
    ]);
    expect({ status: handled.alongside.state.status, revision: handled.alongside.revision, held: handled.state.openHolds.get('inv-1')?.credits }).toEqual({ status: 'dispatched', revision: 2n, held: 100 });
    expect((await store.readAll()).slice(-4).map((event) => event.type)).toEqual(['InvocationEstimated', 'HoldPlaced', 'InvocationReserved', 'InvocationDispatched']);
    // The states it keeps are the streams' own: the next command on either reads nothing and appends at the right revision.
    await repository.handleAll(stream('inv-1'), invocationDecider, [recordAttempt(attemptRecord(1, 0)), complete(), settle('runtime')]);
    expect(await store.streamRevision(stream('inv-1'))).toBe(5n);
  });

  it('asks the store to make the commit durable at once when a command of its batch asks for it, and not otherwise', async () => {
    const asked: Array<boolean | undefined> = [];
    const watching: EventStore = { ...recording(store).store, appendTogether: (parts, options) => (asked.push(options?.durableAtOnce), store.appendTogether(parts, options)) };
    const repository = new AggregateRepository(watching);

    await repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-1', 100), held('inv-1'), { durableAtOnce: true });
    await repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-2', 100), held('inv-2'));

    expect(asked).toEqual([true, undefined]);
  });

  it('asks the store to make the commit durable off the event loop only when every command of its batch asks for it (issue 35)', async () => {
    const asked: Array<boolean | undefined> = [];
    const watching: EventStore = { ...recording(store).store, appendTogether: (parts, options) => (asked.push(options?.durableOffLoop), store.appendTogether(parts, options)) };
    const repository = new AggregateRepository(watching);

    await Promise.all([
      // Alone: the account's first append.
      repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-1', 100), held('inv-1'), { durableOffLoop: true }),
      // Queued while it is in flight, so one append together: one of them asks, the other not.
      repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-2', 100), held('inv-2'), { durableOffLoop: true }),
      repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-3', 100), held('inv-3')),
    ]);

    expect(asked).toEqual([true, undefined]);
  });

  it('writes nothing of either stream when the command is refused', async () => {
    const repository = new AggregateRepository(store);
    const headBefore = await store.headPosition();

    await expect(repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-1', 5_000), held('inv-1'))).rejects.toBeInstanceOf(AdmissionRefusedError);

    expect(await store.headPosition()).toBe(headBefore);
    expect(await store.streamRevision(stream('inv-1'))).toBeUndefined();
  });

  it('decides the command on the other stream’s state after `before`: a hold settled at what the invocation settled at, in the same commit', async () => {
    const repository = new AggregateRepository(store);
    await repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-1', 100), held('inv-1'));

    const handled = await repository.handleAlongside(
      ACCOUNT,
      accountDecider,
      (invocation: InvocationState) => settleHold('inv-1', invocation.settlement!.chargeCredits),
      { streamName: stream('inv-1'), decider: invocationDecider, before: [recordAttempt(attemptRecord(1, 0)), complete(), settle('runtime')] },
    );

    expect({ invocation: handled.alongside.state.settlement?.chargeCredits, charged: (handled.state as AccountState).charged, held: handled.state.openHolds.size }).toEqual({ invocation: PRICE_A, charged: PRICE_A, held: 0 });
  });

  it('puts the calls queued on one account into one commit: every estimate, the account’s batch, then every reservation and dispatch', async () => {
    const { store: recorded, written } = recording(store);
    const repository = new AggregateRepository(recorded);

    await Promise.all(['inv-1', 'inv-2', 'inv-3'].map((id) => repository.handleAlongside(ACCOUNT, accountDecider, placeHold(id, 100), held(id))));

    const parts = written.flatMap((append) => append.parts.map(([name, types]) => `${name}: ${types.join(', ')}`));
    expect(written.every((append) => append.together)).toBe(true);
    // The first call goes alone; the two queued behind its commit share the next one.
    expect(written.map((append) => append.parts.length)).toEqual([3, 5]);
    expect(parts.slice(3)).toEqual([
      `${stream('inv-2')}: InvocationEstimated`,
      `${stream('inv-3')}: InvocationEstimated`,
      `${ACCOUNT}: HoldPlaced, HoldPlaced`,
      `${stream('inv-2')}: InvocationReserved, InvocationDispatched`,
      `${stream('inv-3')}: InvocationReserved, InvocationDispatched`,
    ]);
  });

  it('decides the other stream’s steps again on it as read when another writer moved it on, and fails only that call when they no longer apply', async () => {
    const repository = new AggregateRepository(store);
    const elsewhere = new AggregateRepository(store);
    await repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-1', 100), held('inv-1'));
    // Another instance settles the invocation (recovery) while this one still has it dispatched.
    await elsewhere.handleAll(stream('inv-1'), invocationDecider, [settle('exception')]);

    const settling = repository.handleAlongside(ACCOUNT, accountDecider, (invocation: InvocationState) => settleHold('inv-1', invocation.settlement!.chargeCredits), {
      streamName: stream('inv-1'),
      decider: invocationDecider,
      before: [recordAttempt(attemptRecord(1, 0)), complete(), settle('runtime')].map((command) => (invocation: InvocationState) => (invocation.status === 'settled' ? undefined : command)),
    });
    const other = repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-2', 100), held('inv-2'));

    const [settled] = await Promise.all([settling, other]);
    // The invocation as the other writer left it decides the charge: settled by exception, at its publication's hold.
    expect({ status: settled.alongside.state.status, by: settled.alongside.state.settlement?.settledBy, charged: settled.state.charged }).toEqual({ status: 'settled', by: 'exception', charged: PUBLICATION.creditHold });
    expect(await store.streamRevision(stream('inv-2'))).toBe(2n);
  });

  it('appends in sequence on a store that cannot commit across streams: `before`, the command, `after`, and a refusal leaves `before` written', async () => {
    const { store: recorded, written } = recording(store, false);
    const repository = new AggregateRepository(recorded);

    const handled = await repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-1', 100), held('inv-1'));
    await expect(repository.handleAlongside(ACCOUNT, accountDecider, placeHold('inv-2', 5_000), held('inv-2'))).rejects.toBeInstanceOf(AdmissionRefusedError);

    expect(written.map((append) => append.parts.map(([name, types]) => `${name}: ${types.join(', ')}`).join(' + '))).toEqual([
      `${stream('inv-1')}: InvocationEstimated`,
      `${ACCOUNT}: HoldPlaced`,
      `${stream('inv-1')}: InvocationReserved, InvocationDispatched`,
      `${stream('inv-2')}: InvocationEstimated`,
    ]);
    expect({ status: handled.alongside.state.status, revision: handled.alongside.revision }).toEqual({ status: 'dispatched', revision: 2n });
  });
});
