import {
  AppendToStreamOptions,
  EventStoreDBClient,
  SubscribeToAllOptions,
  UnavailableError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import { ConcurrencyError, ExpectedRevision, InvalidEventStoreInputError, RecordedEvent } from '../../src/event-store/event-store.port';
import { EventStoreDbEventStore, openEventStoreDb, toPortPosition } from '../../src/event-store/eventstoredb/eventstoredb-event-store';
import { describeEventStoreContract, newEvent } from './event-store.contract';
import { EventStoreDbWireServer } from '../support/eventstoredb-wire-server';

// Every call is a gRPC round trip to a local server (the racing writers alone make ~2,500): on a shared,
// loaded machine that takes far longer than an in-process store, so this file allows more time.
jest.setTimeout(120_000);

const connectionString = process.env['EVENTSTORE_CONNECTION_STRING'];

/**
 * The contract through the real client against the wire-level test double in test/support (a gRPC
 * server speaking the client's own protocol, not a KurrentDB), once per append path the client has.
 */
// Every current server lists BatchAppend (ServerFeatures.cs:22-42 at the commit in the wire server's
// SERVER_SOURCE_COMMIT), so the unary Append path runs only against servers older than that.
describe.each([
  ['BatchAppend', true],
  ['unary Append (older servers only)', false],
] as const)('EventStoreDB adapter through @eventstore/db-client and the wire test server, %s path', (path, batchAppend) => {
  let server: EventStoreDbWireServer;

  beforeAll(async () => {
    server = await EventStoreDbWireServer.start({ batchAppend });
  });

  afterAll(async () => {
    const used = server.appendRequests;
    await server.stop();
    console.log(
      `EventStoreDB contract suite ran through the ${path} path against the wire test server: ` +
        `${used.batchAppend} BatchAppend and ${used.unaryAppend} unary Append requests`,
    );
    // The suite must have gone through the path it is named after, and only through it.
    expect(batchAppend ? used.batchAppend : used.unaryAppend).toBeGreaterThan(0);
    expect(batchAppend ? used.unaryAppend : used.batchAppend).toBe(0);
  });

  describeEventStoreContract(`EventStoreDB/KurrentDB (wire test server, ${path})`, () => openEventStoreDb(server.connectionString), { acrossStreams: false });
});

if (connectionString) {
  describeEventStoreContract('EventStoreDB/KurrentDB (real server from EVENTSTORE_CONNECTION_STRING)', () => {
    console.log('EventStoreDB contract suite running against the real server named by EVENTSTORE_CONNECTION_STRING');
    return openEventStoreDb(connectionString);
  }, { acrossStreams: false });
}

/** A recorded `$all` event as the client hands it over. */
function recorded(streamId: string, revision: bigint, commit: bigint, type = 'SomethingNoted') {
  return {
    event: {
      streamId,
      id: `00000000-0000-4000-8000-${commit.toString().padStart(12, '0')}`,
      revision,
      type,
      data: { commit: commit.toString() },
      metadata: { schemaVersion: 1 },
      isJson: true,
      created: new Date(0),
      position: { commit, prepare: commit },
    },
  };
}

type FakeRead = ReturnType<typeof recorded>;

/**
 * Just enough of EventStoreDBClient for the adapter's own logic: no server, no network. Each
 * subscription hands over its scripted events, then fails as a dropped connection would (or ends).
 */
class FakeClient {
  appendCalls: Array<{ streamName: string; options: AppendToStreamOptions | undefined }> = [];
  appendOutcome: () => Promise<unknown> = async () => ({ success: true, nextExpectedRevision: 0n, position: { commit: 10n, prepare: 10n } });
  subscribeCalls: SubscribeToAllOptions[] = [];
  subscriptionScripts: Array<{ events: FakeRead[]; then: 'drop' | 'hang' }> = [];
  disposed = false;

  /** No stream here was ever soft-deleted: no metadata. */
  async getStreamMetadata(streamName: string): Promise<unknown> {
    return { streamName };
  }

  appendToStream(streamName: string, _events: unknown, options?: AppendToStreamOptions): Promise<unknown> {
    this.appendCalls.push({ streamName, options });
    return this.appendOutcome();
  }

  subscribeToAll(options: SubscribeToAllOptions) {
    this.subscribeCalls.push(options);
    const script = this.subscriptionScripts.shift() ?? { events: [], then: 'hang' as const };
    let unsubscribed!: () => void;
    const gone = new Promise<void>((resolve) => (unsubscribed = resolve));
    async function* deliver(): AsyncGenerator<FakeRead> {
      for (const event of script.events) yield event;
      if (script.then === 'drop') throw new UnavailableError(undefined, '14 UNAVAILABLE: Connection dropped');
      await gone;
    }
    return Object.assign(deliver(), { unsubscribe: async () => unsubscribed() });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }
}

function adapterOn(client: FakeClient): EventStoreDbEventStore {
  return new EventStoreDbEventStore(client as unknown as EventStoreDBClient);
}

describe('EventStoreDB adapter, without a server', () => {
  it.each<[ExpectedRevision, unknown]>([
    ['no_stream', 'no_stream'],
    ['any', 'any'],
    ['stream_exists', 'stream_exists'],
    [2n ** 63n + 5n, 2n ** 63n + 5n],
  ])('passes expected revision %p to the client as %p, keeping a 64-bit revision exact', async (expected, sent) => {
    const client = new FakeClient();

    await adapterOn(client).append('order-1', [newEvent()], { expectedRevision: expected });

    expect(client.appendCalls[0]!.options?.expectedRevision).toBe(sent);
  });

  it('answers an append with the revision and the commit position as bigint', async () => {
    const client = new FakeClient();
    const commit = 2n ** 60n + 7n;
    client.appendOutcome = async () => ({ success: true, nextExpectedRevision: 4n, position: { commit, prepare: commit } });

    await expect(adapterOn(client).append('order-1', [newEvent()], { expectedRevision: 3n })).resolves.toEqual({
      nextExpectedRevision: 4n,
      position: toPortPosition({ commit, prepare: commit }),
    });
  });

  it('turns WrongExpectedVersionError into a ConcurrencyError naming stream, expected and actual, so callers branch on one error type', async () => {
    const client = new FakeClient();
    client.appendOutcome = async () => {
      throw new WrongExpectedVersionError(undefined, { streamName: 'order-1', expected: 3n, current: 7n });
    };

    const error = await adapterOn(client)
      .append('order-1', [newEvent()], { expectedRevision: 3n })
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(ConcurrencyError);
    expect(error).toMatchObject({ streamName: 'order-1', expected: 3n, actual: 7n });
  });

  it('refuses bad input before any call reaches the server', async () => {
    const client = new FakeClient();

    await expect(adapterOn(client).append('', [newEvent()], { expectedRevision: 'any' })).rejects.toBeInstanceOf(InvalidEventStoreInputError);
    await expect(adapterOn(client).append('order-1', [newEvent('T', { n: 1n })], { expectedRevision: 'any' })).rejects.toMatchObject({
      field: 'events[0].data',
    });
    expect(client.appendCalls).toEqual([]);
  });

  it('resubscribes from the last handled position after a dropped connection, delivering each event once, and skips system events', async () => {
    const client = new FakeClient();
    client.subscriptionScripts = [
      { events: [recorded('order-1', 0n, 100n), recorded('$stats-1', 0n, 150n, '$statsCollected'), recorded('order-1', 1n, 200n)], then: 'drop' },
      // The server may resend the event at the resume position; it must not be handled twice.
      { events: [recorded('order-1', 1n, 200n), recorded('order-2', 0n, 300n)], then: 'hang' },
    ];
    const store = adapterOn(client);
    const handled: RecordedEvent[] = [];
    let done!: () => void;
    const allHandled = new Promise<void>((resolve) => (done = resolve));

    const subscription = store.subscribeToAll((event) => {
      handled.push(event);
      if (handled.length === 3) done();
    });
    await allHandled;
    await subscription.stop();
    await store.close();

    const at = (commit: bigint) => toPortPosition({ commit, prepare: commit });
    expect(handled.map((event) => [event.streamName, event.position])).toEqual([
      ['order-1', at(100n)],
      ['order-1', at(200n)],
      ['order-2', at(300n)],
    ]);
    expect(client.subscribeCalls.map((call) => call.fromPosition)).toEqual(['start', { commit: 200n, prepare: 200n }]);
    expect(subscription.lastPosition).toBe(at(300n));
    expect(client.disposed).toBe(true);
  });

  it('accepts kurrentdb:// connection strings, which this client version only knows as esdb://', async () => {
    const store = openEventStoreDb('kurrentdb://localhost:2113?tls=false');
    await store.close();
  });
});
