/**
 * A PROTOCOL TEST DOUBLE of KurrentDB/EventStoreDB, not a product and not a database.
 *
 * No KurrentDB server can run on the machines these tests run on, so this serves the gRPC services
 * `@eventstore/db-client` itself ships (`generated/streams_grpc_pb.js`: Read, Append, BatchAppend,
 * Delete, Tombstone; `generated/serverfeatures_grpc_pb.js`: GetSupportedMethods) on 127.0.0.1 with
 * `@grpc/grpc-js`, building every reply from the client's own message classes. The real client
 * library, unchanged, talks to it over a real socket: what the adapter sees is what the client makes
 * of these bytes.
 *
 * It reproduces only what the adapter relies on, as read from the server's source: kurrent-io/KurrentDB
 * at commit 44996ed0576221c14adb8abfdc34cedee3e19362 (`SERVER_SOURCE_COMMIT`); paths below are under
 * its `src/KurrentDB.Core/`, lines at that commit. Each behaviour is tagged with the fact it encodes,
 * `[F-…]`, listed here once:
 *
 * - [F-FEATURES] The client asks GetSupportedMethods before its first append and uses BatchAppend
 *   only when the list names it; UNIMPLEMENTED makes it use the unary Append. The server lists every
 *   mapped client method (Services/Transport/Grpc/ServerFeatures.cs:22-42, ClusterVNodeStartup.cs:154),
 *   so a current server always lists BatchAppend: `batchAppend: false` stands for an old server only.
 * - [F-POSITION] An appended event of an implicit transaction has commit = prepare = its log position;
 *   the reply carries the last event's revision and position, the same a `$all` read gives it.
 * - [F-LEGACY-TX] Events of one explicit (legacy TCP) transaction share the commit position of the
 *   transaction's commit record and keep their own prepare positions; `$all` orders by (commit, prepare).
 *   A stream read does not know where such an event committed: its RecordedEvent positions are
 *   2^64 − 1 and the ReadEvent says NoPosition (Data/ResolvedEvent.cs:64-78, StorageReaderWorker.cs:104-105,
 *   Services/Transport/Grpc/Streams.Read.cs:384-426, Services/Transport/Common/Position.cs:23-26).
 * - [F-IDEMPOTENT-EXACT] Re-append with the exact / `no_stream` revision used the first time: ids are
 *   compared with the events at expected+1…; all equal → nothing written, the original reply; the first
 *   or a later one different → WrongExpectedVersion. Expected = current revision: written, no check.
 * - [F-IDEMPOTENT-CACHE] With `any` / `stream_exists` ids are looked up only in an in-memory cache
 *   filled by this node's writes and emptied by a restart: all cached → idempotent; first not cached →
 *   written again; first cached and a later one not → WrongExpectedVersion. Per stream only.
 * - [F-WEV] WrongExpectedVersion is a reply, not a gRPC error: `BatchAppendResp.error` (google.rpc.Status,
 *   code ALREADY_EXISTS, details `event_store.client.WrongExpectedVersion`) or
 *   `AppendResp.wrong_expected_version`.
 * - [F-DELETED] Tombstoned: a `$streamDeleted` record at revision 2^63 − 1 is written in the stream
 *   (Services/Storage/StorageWriterService.cs:547-564); reads fail FAILED_PRECONDITION
 *   `exception: stream-deleted`; every append fails StreamDeleted. Soft-deleted: a `$metadata` record
 *   `{"$tb": 2^63 − 1}` is written in `$$<stream>` (StorageWriterService.cs:566-597); reads say
 *   StreamNotFound (Services/Storage/ReaderIndex/IndexReader.cs:219-223). An append with `no_stream`
 *   (IndexWriter.cs:283-284), `any` (:223-228) or the old last revision (:324) is ACCEPTED: its events
 *   number on from the old last revision + 1 and the stream is undeleted by a `$metadata` record
 *   `{"$tb": old last + 1}` (StorageWriterService.cs:424-428, 483-504), so reads show only the new
 *   events (IndexReader.cs:237-238; the server's own Core.Tests/ClientAPI/soft_delete.cs:87-111 expects
 *   revisions 2–4 after deleting a 2-event stream). `stream_exists` fails StreamDeleted
 *   (IndexWriter.cs:187-189); another exact revision is WrongExpectedVersion reporting the old revision.
 * - [F-EVENT-ID] An event id must parse as a Guid and not be the nil Guid ("Empty eventId provided.").
 * - [F-SIZE] An append over the max append size (1 MiB up to 25.0, 256 MiB from 25.1) fails
 *   MaximumAppendSizeExceeded; the size is UTF-8 bytes of data + metadata + 2 × type length.
 * - [F-DEADLINE] BatchAppend answers Timeout (DEADLINE_EXCEEDED details) past min(deadline, 2,000 ms);
 *   the unary Append fails ABORTED "Operation timed out". The write may still have committed.
 * - [F-READ] Stream reads: inclusive from a revision, StreamNotFound for a missing stream.
 * - [F-READ-ALL] `$all` from a position (Services/Storage/ReaderIndex/AllReader.cs:72-187, 198-325): the
 *   reader starts at the commit position's byte in the log. Forwards it returns every record at or
 *   after (commit, prepare); backwards every record whose (post-position of its commit, post-position
 *   of its prepare) is at or before it, so reading back from a legacy-transaction event's own
 *   (commit, prepare) skips that transaction's earlier events (:264-310). Only a commit position that
 *   is not the start of a record fails (Services/Storage/StorageReaderWorker.All.cs:44-49, 100-105, with
 *   TransactionLog/Chunks/TFChunk/TFChunkReadSide.cs:488-515 refusing the bytes there): usually as
 *   InvalidPosition, and as Error when the bytes fail some other way, both answered UNKNOWN
 *   "Unexpected ReadAllResult: <result> >> <message>" (Services/Transport/Enumerators/
 *   Enumerator.ReadAllForwards.cs:118-119, Services/Transport/Grpc/RpcExceptions.cs:51-55).
 * - [F-SYSTEM-RECORDS] `$all` holds the `$metadata` records of `$$<stream>` and the `$streamDeleted`
 *   tombstones of [F-DELETED] among the user events.
 * - [F-SUBSCRIBE] Filtered `$all` subscription (Services/Transport/Enumerators/
 *   Enumerator.AllSubscriptionFiltered.cs): confirmation; a `fromPosition` at or past the head goes
 *   live at once (:173-175); otherwise catch-up reads pages of 32 considered records (Enumerator.cs:29)
 *   from it and sends only what is strictly after it (START includes the first record) (:293-307). The
 *   checkpoint is the last event sent, or the page's start when that is later, which can be a
 *   position between events (:309-313); it is sent every 32 × checkpointIntervalMultiplier considered
 *   records (:336-344) and, before CaughtUp, on reaching the end (:320-334, 217-218). Then live events
 *   (and a checkpoint every interval). A commit position inside a record below the head fails
 *   INVALID_ARGUMENT "Trying to read from an invalid position." (:353-354, RpcExceptions.cs:259-260), or
 *   UNKNOWN "Unexpected FilteredReadAllResult: Error >> …" (:355-356); a server shutdown ends it
 *   CANCELLED; access denied is PERMISSION_DENIED `exception: access-denied`.
 * - [F-RECORD] Read events carry id (string form), stream identifier, revision, both positions, and
 *   the metadata keys `type`, `content-type` and `created` (100 ns ticks since the Unix epoch).
 */
import * as grpc from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb';
import {
  AppendReq,
  AppendResp,
  BatchAppendReq,
  BatchAppendResp,
  DeleteReq,
  DeleteResp,
  ReadReq,
  ReadResp,
  TombstoneReq,
  TombstoneResp,
} from '@eventstore/db-client/generated/streams_pb';
import {
  AllStreamPosition,
  BadRequest,
  Empty as SharedEmpty,
  MaximumAppendSizeExceeded,
  StreamDeleted,
  StreamIdentifier,
  Timeout,
  UUID,
  WrongExpectedVersion,
} from '@eventstore/db-client/generated/shared_pb';
import { Status } from '@eventstore/db-client/generated/status_pb';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb';
import { Any } from 'google-protobuf/google/protobuf/any_pb';
import { Empty } from 'google-protobuf/google/protobuf/empty_pb';

/** The server source these behaviours were read from (kurrent-io/KurrentDB). */
export const SERVER_SOURCE_COMMIT = '44996ed0576221c14adb8abfdc34cedee3e19362';
/** [F-DELETED] The server's EventNumber.DeletedStream: a tombstone's revision and a soft delete's `$tb`. */
export const WIRE_DELETED_STREAM_REVISION = (1n << 63n) - 1n;
/** [F-LEGACY-TX] What a position the server does not know is sent as (unsigned 64-bit all ones). */
const UNKNOWN_POSITION = (1n << 64n) - 1n;
/** [F-SIZE] Max append size of servers up to 25.0, in bytes. */
export const WIRE_MAX_APPEND_SIZE_BYTES_UP_TO_25_0 = 1_048_576;
/** [F-DEADLINE] The server's write timeout, the upper bound of a BatchAppend deadline, in ms. */
export const WIRE_WRITE_TIMEOUT_MS = 2_000;
/** [F-SUBSCRIBE] Considered records between two checkpoints, per unit of checkpointIntervalMultiplier. */
export const WIRE_CHECKPOINT_RECORDS = 32;
/** Bytes of log a record takes beyond its payload (so positions are sparse, like a real log's). */
const RECORD_OVERHEAD_BYTES = 100;
const TICKS_PER_MS = 10_000n;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';
const GUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Expected = { kind: 'any' } | { kind: 'no_stream' } | { kind: 'stream_exists' } | { kind: 'revision'; revision: bigint };

interface LogRecord {
  readonly streamName: string;
  readonly revision: bigint;
  readonly id: string;
  readonly type: string;
  readonly contentType: string;
  readonly data: Uint8Array;
  readonly metadata: Uint8Array;
  readonly createdTicks: bigint;
  readonly commit: bigint;
  readonly prepare: bigint;
  /** Bytes of the record at `prepare`. */
  readonly size: bigint;
  /** [F-LEGACY-TX] Bytes of the transaction's commit record at `commit`; undefined when self-committed. */
  readonly commitSize?: bigint;
}

interface StreamState {
  /** Log indexes of the stream's records, in revision order. */
  readonly records: number[];
  lastRevision: bigint | undefined;
  /** [F-DELETED] The `$tb` of the stream's latest `$metadata`: revisions below it are hidden from reads. */
  truncateBefore: bigint | undefined;
  tombstoned: boolean;
}

/** A (commit, prepare) pair, compared as `$all` orders them. */
interface Pos {
  readonly commit: bigint;
  readonly prepare: bigint;
}

function comparePos(a: Pos, b: Pos): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  return a.prepare === b.prepare ? 0 : a.prepare < b.prepare ? -1 : 1;
}

/**
 * [F-READ-ALL] What a backwards read compares with its position: the post-positions of the record's
 * commit and prepare (AllReader.cs:244-245 for a self-committed record, :294-295 in a transaction).
 */
function backwardKey(record: LogRecord): Pos {
  const preparePost = record.prepare + record.size;
  return record.commitSize === undefined ? { commit: preparePost, prepare: preparePost } : { commit: record.commit + record.commitSize, prepare: preparePost };
}

interface ProposedEvent {
  readonly id: string;
  readonly type: string;
  readonly contentType: string;
  readonly data: Uint8Array;
  readonly metadata: Uint8Array;
}

type AppendOutcome =
  | { kind: 'success'; revision: bigint; commit: bigint; prepare: bigint }
  | { kind: 'wrong-expected-version'; current: bigint | undefined; expected: Expected }
  | { kind: 'stream-deleted' }
  | { kind: 'bad-request'; message: string }
  | { kind: 'too-big'; maxAppendSize: number };

/** What the next matching append suffers after (or instead of) being applied. */
export type AppendFault =
  /** [F-DEADLINE] Committed, but answered as timed out (BatchAppend: Timeout; Append: ABORTED). */
  | 'commit-then-timeout'
  /** Committed, then the connection fails before the reply (the client sees UNAVAILABLE). */
  | 'commit-then-drop'
  /** Not committed; the connection fails (UNAVAILABLE). */
  | 'drop'
  /** Not committed; the server is shutting down and cancels the call (CANCELLED). */
  | 'shutdown';

/** A permanent error every new `$all` subscription gets. */
export type SubscriptionFault = 'access-denied';

interface LiveSubscription {
  readonly call: grpc.ServerWritableStream<ReadReq, ReadResp>;
  readonly filter: ((record: LogRecord) => boolean) | undefined;
  readonly checkpointEvery: number;
  considered: number;
  /** [F-SUBSCRIBE] Live records at or before it are not sent (a `fromPosition` past the head). */
  readonly after: Pos;
}

export interface WireServerOptions {
  /** [F-FEATURES] List BatchAppend in GetSupportedMethods (true) or answer UNIMPLEMENTED (false). */
  readonly batchAppend: boolean;
  /** [F-SIZE] Default 1 MiB, the bound of servers up to 25.0. */
  readonly maxAppendSizeBytes?: number;
  /**
   * [F-READ-ALL] How a read from a commit position inside a record fails: as InvalidPosition (the
   * default, what the bytes there usually cause) or as Error (what other bytes can cause).
   */
  readonly midRecordReads?: 'invalid-position' | 'error';
}

/** The log and the listening server; the log survives `restart()`, the id cache does not. */
export class EventStoreDbWireServer {
  private readonly log: LogRecord[] = [];
  private readonly streams = new Map<string, StreamState>();
  /** [F-IDEMPOTENT-CACHE] event id → (stream, log index) of this node's writes since its start. */
  private idCache = new Map<string, { streamName: string; index: number }>();
  private nextPosition = 0n;
  /** [F-READ-ALL] Where records start: the only commit positions a read can start from below the end. */
  private readonly recordStarts = new Set<bigint>();
  private server: grpc.Server | undefined;
  private readonly live = new Set<LiveSubscription>();
  private readonly batchCalls = new Set<grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>>();
  private readonly appendFaults: Array<{ streamPrefix: string; fault: AppendFault }> = [];
  private subscriptionFault: SubscriptionFault | undefined;
  /** Appends received through BatchAppend and through the unary Append, so a test can tell the paths apart. */
  readonly appendRequests = { batchAppend: 0, unaryAppend: 0 };
  /** `$all` subscriptions opened. */
  subscriptionsOpened = 0;

  private constructor(
    private readonly options: WireServerOptions,
    private portNumber: number,
  ) {}

  /** Starts on 127.0.0.1 and a free port. */
  static async start(options: WireServerOptions): Promise<EventStoreDbWireServer> {
    const server = new EventStoreDbWireServer(options, 0);
    server.writeSystemRecord('$settings', '$settings');
    await server.listen();
    return server;
  }

  get port(): number {
    return this.portNumber;
  }

  /** `esdb://127.0.0.1:<port>?tls=false`: the server speaks plain HTTP/2, as a `--insecure` node does. */
  get connectionString(): string {
    return `esdb://127.0.0.1:${this.portNumber}?tls=false`;
  }

  /** Every record of the log, system records included, as stored. */
  records(): ReadonlyArray<Readonly<LogRecord>> {
    return this.log;
  }

  /** The stream's events as stored (hidden ones included), for assertions on what was written. */
  storedEvents(streamName: string): ReadonlyArray<Readonly<LogRecord>> {
    return (this.streams.get(streamName)?.records ?? []).map((index) => this.log[index]!);
  }

  /** The next append to a stream starting with `streamPrefix` suffers `fault`. */
  injectAppendFault(fault: AppendFault, streamPrefix = ''): void {
    this.appendFaults.push({ streamPrefix, fault });
  }

  /** Faults injected and not yet suffered. */
  pendingAppendFaults(): number {
    return this.appendFaults.length;
  }

  /** Every new `$all` subscription fails with this permanent error (undefined: none). */
  failSubscriptions(fault: SubscriptionFault | undefined): void {
    this.subscriptionFault = fault;
  }

  /** Ends every open subscription as a dropped connection does (UNAVAILABLE); the server stays up. Returns how many. */
  dropSubscriptions(): number {
    const dropped = [...this.live];
    for (const subscription of dropped) {
      this.live.delete(subscription);
      subscription.call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'Connection dropped' });
    }
    return dropped.length;
  }

  /**
   * Stops and starts again on the same port: open calls end (subscriptions CANCELLED, the server shutting
   * down), the log stays, the id cache empties ([F-IDEMPOTENT-CACHE]).
   */
  async restart(): Promise<void> {
    await this.shutdown();
    this.idCache = new Map();
    await this.listen();
  }

  /** Stops listening and ends every call. */
  async stop(): Promise<void> {
    await this.shutdown();
  }

  /**
   * [F-LEGACY-TX] Writes events as one explicit transaction: one prepare record each, then the commit
   * record; every event has the commit's position and its own prepare position.
   */
  appendLegacyTransaction(streamName: string, events: ReadonlyArray<{ id: string; type: string; data: unknown }>): void {
    const stream = this.stream(streamName);
    const prepares = events.map((event) => {
      const size = BigInt(RECORD_OVERHEAD_BYTES + JSON.stringify(event.data).length);
      return { prepare: this.reserve(size), size };
    });
    const commitSize = BigInt(RECORD_OVERHEAD_BYTES);
    const commit = this.reserve(commitSize);
    events.forEach((event, index) => {
      const revision = stream.lastRevision === undefined ? 0n : stream.lastRevision + 1n;
      this.push(stream, {
        streamName,
        revision,
        id: event.id,
        type: event.type,
        contentType: 'application/json',
        data: Buffer.from(JSON.stringify(event.data), 'utf8'),
        metadata: Buffer.from(JSON.stringify({ schemaVersion: 1 }), 'utf8'),
        createdTicks: BigInt(Date.now()) * TICKS_PER_MS,
        commit,
        prepare: prepares[index]!.prepare,
        size: prepares[index]!.size,
        commitSize,
      });
    });
  }

  /** The position of the log's end (where the next record starts). */
  get endPosition(): bigint {
    return this.nextPosition;
  }

  /** Takes `size` bytes at the end of the log for one record; returns where it starts. */
  private reserve(size: bigint): bigint {
    const start = this.nextPosition;
    this.recordStarts.add(start);
    this.nextPosition += size;
    return start;
  }

  private async listen(): Promise<void> {
    const server = new grpc.Server();
    server.addService(StreamsService, {
      read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => this.read(call),
      append: (call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>) =>
        this.unaryAppend(call, callback),
      batchAppend: (call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>) => this.batchAppend(call),
      delete: (call: grpc.ServerUnaryCall<DeleteReq, DeleteResp>, callback: grpc.sendUnaryData<DeleteResp>) =>
        this.deleteStream(call.request, callback),
      tombstone: (call: grpc.ServerUnaryCall<TombstoneReq, TombstoneResp>, callback: grpc.sendUnaryData<TombstoneResp>) =>
        this.tombstoneStream(call.request, callback),
    });
    server.addService(ServerFeaturesService, {
      getSupportedMethods: (_call: grpc.ServerUnaryCall<unknown, SupportedMethods>, callback: grpc.sendUnaryData<SupportedMethods>) =>
        this.supportedMethods(callback),
    });
    this.portNumber = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${this.portNumber}`, grpc.ServerCredentials.createInsecure(), (error, port) =>
        error ? reject(error) : resolve(port),
      ),
    );
    this.server = server;
  }

  private async shutdown(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    for (const subscription of [...this.live]) {
      this.live.delete(subscription);
      subscription.call.emit('error', { code: grpc.status.CANCELLED, details: 'Server is shutting down' });
    }
    for (const call of [...this.batchCalls]) call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'Server is shutting down' });
    this.batchCalls.clear();
    server.forceShutdown();
  }

  // [F-FEATURES]
  private supportedMethods(callback: grpc.sendUnaryData<SupportedMethods>): void {
    if (!this.options.batchAppend) {
      callback({ code: grpc.status.UNIMPLEMENTED, details: 'Method not found' });
      return;
    }
    const methods = new SupportedMethods();
    const [, serviceName, methodName] = StreamsService.batchAppend.path.toLowerCase().split('/');
    const method = new SupportedMethod();
    method.setServiceName(serviceName!);
    method.setMethodName(methodName!);
    method.setFeaturesList(['deadline_duration']);
    methods.setMethodsList([method]);
    methods.setEventStoreServerVersion('24.10.0-wire-test-double');
    callback(null, methods);
  }

  // ---- appends -------------------------------------------------------------------------------

  private unaryAppend(call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>): void {
    let options: AppendReq.Options | undefined;
    const events: ProposedEvent[] = [];
    call.on('data', (request: AppendReq) => {
      if (request.hasOptions()) options = request.getOptions();
      if (request.hasProposedMessage()) events.push(proposedEvent(request.getProposedMessage()!));
    });
    call.on('end', () => {
      this.appendRequests.unaryAppend++;
      if (options === undefined) {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: 'Options were not sent' });
        return;
      }
      const streamName = Buffer.from(options.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8');
      const expected = unaryExpected(options);
      const fault = this.takeFault(streamName);
      if (fault === 'drop' || fault === 'shutdown') {
        callback(
          fault === 'drop'
            ? { code: grpc.status.UNAVAILABLE, details: 'Connection dropped' }
            : { code: grpc.status.CANCELLED, details: 'Server is shutting down' },
        );
        return;
      }
      const outcome = this.applyAppend(streamName, expected, events);
      if (outcome.kind === 'success' && fault === 'commit-then-timeout') {
        callback({ code: grpc.status.ABORTED, details: 'Operation timed out: CommitTimeout' });
        return;
      }
      if (outcome.kind === 'success' && fault === 'commit-then-drop') {
        callback({ code: grpc.status.UNAVAILABLE, details: 'Connection dropped' });
        return;
      }
      switch (outcome.kind) {
        case 'success': {
          const success = new AppendResp.Success();
          success.setCurrentRevision(outcome.revision.toString());
          const position = new AppendResp.Position();
          position.setCommitPosition(outcome.commit.toString());
          position.setPreparePosition(outcome.prepare.toString());
          success.setPosition(position);
          const response = new AppendResp();
          response.setSuccess(success);
          callback(null, response);
          return;
        }
        case 'wrong-expected-version': {
          // [F-WEV] a reply, not an error
          const wrong = new AppendResp.WrongExpectedVersion();
          if (outcome.current === undefined) wrong.setCurrentNoStream(new SharedEmpty());
          else wrong.setCurrentRevision(outcome.current.toString());
          setExpected(outcome.expected, {
            any: () => wrong.setExpectedAny(new SharedEmpty()),
            noStream: () => wrong.setExpectedNoStream(new SharedEmpty()),
            streamExists: () => wrong.setExpectedStreamExists(new SharedEmpty()),
            revision: (revision) => wrong.setExpectedRevision(revision),
          });
          const response = new AppendResp();
          response.setWrongExpectedVersion(wrong);
          callback(null, response);
          return;
        }
        case 'stream-deleted':
          callback(streamDeletedError(streamName));
          return;
        case 'too-big': {
          const metadata = new grpc.Metadata();
          metadata.set('exception', 'maximum-append-size-exceeded');
          metadata.set('maximum-append-size', String(outcome.maxAppendSize));
          callback({ code: grpc.status.INVALID_ARGUMENT, details: `Maximum Append Size of ${outcome.maxAppendSize} Exceeded.`, metadata });
          return;
        }
        case 'bad-request':
          callback({ code: grpc.status.INVALID_ARGUMENT, details: outcome.message });
      }
    });
  }

  private batchAppend(call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>): void {
    this.batchCalls.add(call);
    const pending = new Map<string, { streamName: string; expected: Expected; deadlineMs: number; events: ProposedEvent[] }>();
    call.on('data', (request: BatchAppendReq) => {
      const correlation = request.getCorrelationId()!;
      const key = correlation.getString();
      if (request.hasOptions()) {
        const options = request.getOptions()!;
        const deadline = options.getDeadline();
        const requestedMs = deadline === undefined ? WIRE_WRITE_TIMEOUT_MS : deadline.toDate().getTime() - Date.now();
        pending.set(key, {
          streamName: Buffer.from(options.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8'),
          expected: batchExpected(options),
          deadlineMs: Math.min(requestedMs, WIRE_WRITE_TIMEOUT_MS),
          events: [],
        });
      }
      const write = pending.get(key);
      if (write === undefined) return;
      write.events.push(...request.getProposedMessagesList().map(proposedEvent));
      if (!request.getIsFinal()) return;
      pending.delete(key);
      this.appendRequests.batchAppend++;
      const response = new BatchAppendResp();
      response.setCorrelationId(correlation);
      response.setStreamIdentifier(streamIdentifier(write.streamName));
      if (write.deadlineMs <= 0) {
        response.setError(status(grpc.status.DEADLINE_EXCEEDED, 'Timeout', new Timeout(), 'event_store.client.Timeout'));
        call.write(response);
        return;
      }
      const fault = this.takeFault(write.streamName);
      if (fault === 'drop' || fault === 'shutdown') {
        this.dropBatchCall(call, fault === 'drop' ? grpc.status.UNAVAILABLE : grpc.status.CANCELLED);
        return;
      }
      const outcome = this.applyAppend(write.streamName, write.expected, write.events);
      if (outcome.kind === 'success' && fault === 'commit-then-drop') {
        this.dropBatchCall(call);
        return;
      }
      if (outcome.kind === 'success' && fault === 'commit-then-timeout') {
        response.setError(status(grpc.status.DEADLINE_EXCEEDED, 'Timeout', new Timeout(), 'event_store.client.Timeout'));
        call.write(response);
        return;
      }
      switch (outcome.kind) {
        case 'success': {
          const success = new BatchAppendResp.Success();
          success.setCurrentRevision(outcome.revision.toString());
          const position = new AllStreamPosition();
          position.setCommitPosition(outcome.commit.toString());
          position.setPreparePosition(outcome.prepare.toString());
          success.setPosition(position);
          response.setSuccess(success);
          break;
        }
        case 'wrong-expected-version': {
          // [F-WEV] google.rpc.Status in the reply, code ALREADY_EXISTS
          const details = new WrongExpectedVersion();
          if (outcome.current === undefined) details.setCurrentNoStream(new Empty());
          else details.setCurrentStreamRevision(outcome.current.toString());
          setExpected(outcome.expected, {
            any: () => details.setExpectedAny(new Empty()),
            noStream: () => details.setExpectedNoStream(new Empty()),
            streamExists: () => details.setExpectedStreamExists(new Empty()),
            revision: (revision) => details.setExpectedStreamPosition(revision),
          });
          response.setError(status(grpc.status.ALREADY_EXISTS, 'WrongExpectedVersion', details, 'event_store.client.WrongExpectedVersion'));
          break;
        }
        case 'stream-deleted': {
          const details = new StreamDeleted();
          details.setStreamIdentifier(streamIdentifier(write.streamName));
          response.setError(status(grpc.status.NOT_FOUND, 'StreamDeleted', details, 'event_store.client.StreamDeleted'));
          break;
        }
        case 'too-big': {
          const details = new MaximumAppendSizeExceeded();
          details.setMaxappendsize(outcome.maxAppendSize);
          response.setError(
            status(grpc.status.INVALID_ARGUMENT, 'MaximumAppendSizeExceeded', details, 'event_store.client.MaximumAppendSizeExceeded'),
          );
          break;
        }
        case 'bad-request': {
          const details = new BadRequest();
          details.setMessage(outcome.message);
          response.setError(status(grpc.status.INVALID_ARGUMENT, 'BadRequest', details, 'event_store.client.BadRequest'));
        }
      }
      call.write(response);
    });
    call.on('end', () => {
      this.batchCalls.delete(call);
      call.end();
    });
    call.on('cancelled', () => this.batchCalls.delete(call));
    call.on('error', () => this.batchCalls.delete(call));
  }

  private dropBatchCall(call: grpc.ServerDuplexStream<BatchAppendReq, BatchAppendResp>, code = grpc.status.UNAVAILABLE): void {
    this.batchCalls.delete(call);
    call.emit('error', { code, details: code === grpc.status.UNAVAILABLE ? 'Connection dropped' : 'Server is shutting down' });
  }

  private takeFault(streamName: string): AppendFault | undefined {
    const index = this.appendFaults.findIndex((fault) => streamName.startsWith(fault.streamPrefix));
    if (index < 0) return undefined;
    return this.appendFaults.splice(index, 1)[0]!.fault;
  }

  /** The write path of one append: checks, idempotency, then the records. */
  private applyAppend(streamName: string, expected: Expected, events: readonly ProposedEvent[]): AppendOutcome {
    // [F-EVENT-ID]
    for (const event of events) {
      if (!GUID_PATTERN.test(event.id)) return { kind: 'bad-request', message: `Unrecognized Guid format: ${event.id}` };
      if (event.id === NIL_UUID) return { kind: 'bad-request', message: 'Empty eventId provided. (Parameter \'eventId\')' };
    }
    // [F-SIZE]
    const maxAppendSize = this.options.maxAppendSizeBytes ?? WIRE_MAX_APPEND_SIZE_BYTES_UP_TO_25_0;
    const size = events.reduce((total, event) => total + event.data.length + event.metadata.length + 2 * event.type.length, 0);
    if (size > maxAppendSize) return { kind: 'too-big', maxAppendSize };

    const stream = this.streams.get(streamName);
    // [F-DELETED] IndexWriter.cs:171-174 (tombstone), :187-195 (stream_exists)
    if (stream?.tombstoned) return { kind: 'stream-deleted' };
    const softDeleted = stream?.truncateBefore === WIRE_DELETED_STREAM_REVISION;
    if (expected.kind === 'stream_exists' && softDeleted) return { kind: 'stream-deleted' };
    const current = stream?.lastRevision;

    if (expected.kind === 'revision' || expected.kind === 'no_stream') {
      // [F-IDEMPOTENT-EXACT] IndexWriter.cs:261-325
      const expectedRevision = expected.kind === 'revision' ? expected.revision : -1n;
      const currentRevision = current ?? -1n;
      if (currentRevision > expectedRevision && stream !== undefined) {
        const first = Number(expectedRevision + 1n);
        const stored = stream.records.slice(first, first + events.length).map((index) => this.log[index]!);
        if (stored[0]?.id !== events[0]!.id) {
          // [F-DELETED] :283-284: `no_stream` on a soft-deleted stream recreates it
          if (expected.kind === 'no_stream' && softDeleted) return this.write(streamName, events, true);
          return { kind: 'wrong-expected-version', current, expected };
        }
        if (stored.length === events.length && stored.every((record, offset) => record.id === events[offset]!.id)) {
          const last = stored[stored.length - 1]!;
          return { kind: 'success', revision: last.revision, commit: last.commit, prepare: last.prepare };
        }
        return { kind: 'wrong-expected-version', current, expected };
      }
      if (currentRevision !== expectedRevision) return { kind: 'wrong-expected-version', current, expected };
      // [F-DELETED] :324: the old last revision recreates a soft-deleted stream too
      return this.write(streamName, events, softDeleted);
    }

    if (expected.kind === 'stream_exists' && current === undefined) return { kind: 'wrong-expected-version', current, expected };
    // [F-IDEMPOTENT-CACHE] IndexWriter.cs:198-255
    const cached = events.map((event) => {
      const entry = this.idCache.get(event.id);
      return entry !== undefined && entry.streamName === streamName ? entry.index : undefined;
    });
    if (cached[0] !== undefined) {
      if (cached.some((index) => index === undefined)) return { kind: 'wrong-expected-version', current, expected };
      const last = this.log[cached[cached.length - 1]!]!;
      return { kind: 'success', revision: last.revision, commit: last.commit, prepare: last.prepare };
    }
    // [F-DELETED] :223-228: so does `any`
    return this.write(streamName, events, softDeleted);
  }

  /** Writes the events; `undelete`: after a soft delete, with the `$metadata` that recreates the stream. */
  private write(streamName: string, events: readonly ProposedEvent[], undelete = false): AppendOutcome {
    const stream = this.stream(streamName);
    const recreateFrom = stream.lastRevision === undefined ? 0n : stream.lastRevision + 1n;
    let last: LogRecord | undefined;
    for (const event of events) {
      // [F-POSITION] implicit transaction: commit = prepare = the record's own position
      const size = BigInt(RECORD_OVERHEAD_BYTES + event.data.length + event.metadata.length);
      const position = this.reserve(size);
      last = {
        streamName,
        revision: stream.lastRevision === undefined ? 0n : stream.lastRevision + 1n,
        id: event.id,
        type: event.type,
        contentType: event.contentType,
        data: event.data,
        metadata: event.metadata,
        createdTicks: BigInt(Date.now()) * TICKS_PER_MS,
        commit: position,
        prepare: position,
        size,
      };
      this.push(stream, last);
    }
    // StorageWriterService.cs:424-428, 483-504
    if (undelete) this.writeTruncateBefore(streamName, recreateFrom);
    return { kind: 'success', revision: last!.revision, commit: last!.commit, prepare: last!.prepare };
  }

  private push(stream: StreamState, record: LogRecord): void {
    const index = this.log.push(record) - 1;
    stream.records.push(index);
    stream.lastRevision = record.revision;
    this.idCache.set(record.id, { streamName: record.streamName, index });
    for (const subscription of this.live) this.deliver(subscription, record);
  }

  private stream(streamName: string): StreamState {
    let stream = this.streams.get(streamName);
    if (stream === undefined) {
      stream = { records: [], lastRevision: undefined, truncateBefore: undefined, tombstoned: false };
      this.streams.set(streamName, stream);
    }
    return stream;
  }

  private writeSystemRecord(streamName: string, type: string, data = '{}'): void {
    this.write(streamName, [{ id: randomUUID(), type, contentType: 'application/json', data: Buffer.from(data), metadata: Buffer.alloc(0) }]);
  }

  /** [F-DELETED] [F-SYSTEM-RECORDS] A `$metadata` record in `$$<stream>` setting its `$tb`. */
  private writeTruncateBefore(streamName: string, truncateBefore: bigint): void {
    // Written as the server writes it: the number in full, which JSON.parse rounds (2^63 − 1 → 2^63).
    this.writeSystemRecord(`$$${streamName}`, '$metadata', `{"$tb":${truncateBefore.toString()}}`);
    this.stream(streamName).truncateBefore = truncateBefore;
  }

  // ---- deletes -------------------------------------------------------------------------------

  /** [F-DELETED] soft delete: `$tb` = DeletedStream in the metastream; reads hide the stream. */
  private deleteStream(request: DeleteReq, callback: grpc.sendUnaryData<DeleteResp>): void {
    const streamName = Buffer.from(request.getOptions()!.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8');
    const stream = this.streams.get(streamName);
    if (stream?.tombstoned) {
      callback(streamDeletedError(streamName));
      return;
    }
    if (stream !== undefined && stream.lastRevision !== undefined) this.writeTruncateBefore(streamName, WIRE_DELETED_STREAM_REVISION);
    const response = new DeleteResp();
    response.setNoPosition(new SharedEmpty());
    callback(null, response);
  }

  /** [F-DELETED] tombstone: a `$streamDeleted` record at revision DeletedStream; gone for good. */
  private tombstoneStream(request: TombstoneReq, callback: grpc.sendUnaryData<TombstoneResp>): void {
    const streamName = Buffer.from(request.getOptions()!.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8');
    const stream = this.stream(streamName);
    if (!stream.tombstoned) {
      const size = BigInt(RECORD_OVERHEAD_BYTES);
      const position = this.reserve(size);
      const record: LogRecord = {
        streamName,
        revision: WIRE_DELETED_STREAM_REVISION,
        id: randomUUID(),
        type: '$streamDeleted',
        contentType: 'application/octet-stream',
        data: new Uint8Array(0),
        metadata: new Uint8Array(0),
        createdTicks: BigInt(Date.now()) * TICKS_PER_MS,
        commit: position,
        prepare: position,
        size,
      };
      this.log.push(record);
      stream.tombstoned = true;
      for (const subscription of this.live) this.deliver(subscription, record);
    }
    const response = new TombstoneResp();
    response.setNoPosition(new SharedEmpty());
    callback(null, response);
  }

  // ---- reads ---------------------------------------------------------------------------------

  private read(call: grpc.ServerWritableStream<ReadReq, ReadResp>): void {
    const options = call.request.getOptions()!;
    if (options.hasStream()) {
      this.readStream(call, options);
      return;
    }
    if (options.hasSubscription()) {
      this.subscribeToAll(call, options);
      return;
    }
    this.readAll(call, options);
  }

  private readStream(call: grpc.ServerWritableStream<ReadReq, ReadResp>, options: ReadReq.Options): void {
    const streamOptions = options.getStream()!;
    const streamName = Buffer.from(streamOptions.getStreamIdentifier()!.getStreamName_asU8()).toString('utf8');
    const stream = this.streams.get(streamName);
    if (stream?.tombstoned) {
      call.emit('error', streamDeletedError(streamName));
      return;
    }
    // [F-READ] [F-DELETED] IndexReader.cs:222-223: no events, or soft-deleted
    if (stream === undefined || stream.lastRevision === undefined || stream.truncateBefore === WIRE_DELETED_STREAM_REVISION) {
      const response = new ReadResp();
      const notFound = new ReadResp.StreamNotFound();
      notFound.setStreamIdentifier(streamIdentifier(streamName));
      response.setStreamNotFound(notFound);
      call.write(response);
      call.end();
      return;
    }
    // IndexReader.cs:237-238: what the stream's `$tb` hides is never read
    const visible = stream.records
      .map((index) => this.log[index]!)
      .filter((record) => stream.truncateBefore === undefined || record.revision >= stream.truncateBefore);
    const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
    const count = BigInt(options.getCount());
    const revisionCase = streamOptions.getRevisionOptionCase();
    let selected: LogRecord[];
    if (backwards) {
      const from = revisionCase === ReadReq.Options.StreamOptions.RevisionOptionCase.REVISION ? BigInt(streamOptions.getRevision()) : undefined;
      selected = visible.filter((record) => from === undefined || record.revision <= from).reverse();
    } else {
      const from = revisionCase === ReadReq.Options.StreamOptions.RevisionOptionCase.REVISION ? BigInt(streamOptions.getRevision()) : 0n;
      selected = revisionCase === ReadReq.Options.StreamOptions.RevisionOptionCase.END ? [] : visible.filter((record) => record.revision >= from);
    }
    for (const record of selected.slice(0, Number(count < BigInt(selected.length) ? count : BigInt(selected.length)))) {
      call.write(eventResponse(record, 'stream'));
    }
    call.end();
  }

  /**
   * [F-READ-ALL] The error a read from `commit` meets, or undefined when a read can start there (the
   * start of a record, or at or past the end of the log).
   */
  private unreadableAt(commit: bigint, resultName: 'ReadAllResult' | 'FilteredReadAllResult'): grpc.StatusObject | undefined {
    if (commit >= this.nextPosition || this.recordStarts.has(commit)) return undefined;
    const message = `Error while reading log record at actual position ${commit}: not the start of a record`;
    if (this.options.midRecordReads === 'error') {
      return { code: grpc.status.UNKNOWN, details: `Unexpected ${resultName}: Error >> ${message}`, metadata: new grpc.Metadata() };
    }
    return resultName === 'FilteredReadAllResult'
      ? { code: grpc.status.INVALID_ARGUMENT, details: 'Trying to read from an invalid position.', metadata: new grpc.Metadata() }
      : { code: grpc.status.UNKNOWN, details: `Unexpected ${resultName}: InvalidPosition >> ${message}`, metadata: new grpc.Metadata() };
  }

  private readAll(call: grpc.ServerWritableStream<ReadReq, ReadResp>, options: ReadReq.Options): void {
    const all = options.getAll()!;
    const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
    const count = Number(BigInt(options.getCount()) > BigInt(this.log.length) ? BigInt(this.log.length) : BigInt(options.getCount()));
    let selected: LogRecord[];
    if (all.hasPosition()) {
      const position = positionOf(all.getPosition()!);
      const failure = this.unreadableAt(position.commit, 'ReadAllResult');
      if (failure !== undefined) {
        call.emit('error', failure);
        return;
      }
      if (backwards) {
        // AllReader.cs:244-245, 294-295: the keys rise with the log's order, so cut at the last one in reach
        let end = this.log.length;
        while (end > 0 && comparePos(backwardKey(this.log[end - 1]!), position) > 0) end--;
        selected = this.log.slice(0, end).reverse();
      } else {
        // AllReader.cs:114-115, 157-158: every record at or after the position
        const start = this.log.findIndex((record) => comparePos(record, position) >= 0);
        selected = start < 0 ? [] : this.log.slice(start);
      }
    } else if (all.hasEnd()) {
      selected = backwards ? [...this.log].reverse() : [];
    } else {
      selected = backwards ? [] : [...this.log];
    }
    for (const record of selected.slice(0, count)) call.write(eventResponse(record, 'all'));
    call.end();
  }

  private subscribeToAll(call: grpc.ServerWritableStream<ReadReq, ReadResp>, options: ReadReq.Options): void {
    this.subscriptionsOpened++;
    if (this.subscriptionFault === 'access-denied') {
      const metadata = new grpc.Metadata();
      metadata.set('exception', 'access-denied');
      call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: 'Access Denied', metadata });
      return;
    }
    const all = options.getAll()!;
    const head: Pos = { commit: this.nextPosition, prepare: this.nextPosition };
    // START: before every record; END: the head (Enumerator.AllSubscriptionFiltered.cs:147-156)
    const from: Pos | undefined = all.hasPosition() ? positionOf(all.getPosition()!) : all.hasEnd() ? head : undefined;
    const subscription: LiveSubscription = {
      call,
      filter: options.hasFilter() ? filterOf(options.getFilter()!) : undefined,
      checkpointEvery: options.hasFilter() ? WIRE_CHECKPOINT_RECORDS * options.getFilter()!.getCheckpointintervalmultiplier() : 0,
      considered: 0,
      after: from ?? { commit: -1n, prepare: -1n },
    };
    const confirmation = new ReadResp();
    const confirmed = new ReadResp.SubscriptionConfirmation();
    confirmed.setSubscriptionId(`wire-${this.subscriptionsOpened}`);
    confirmation.setConfirmation(confirmed);
    call.write(confirmation);
    // :173-175: from the head on, live at once, with no read (so no invalid position either)
    if (from === undefined || comparePos(from, head) < 0) {
      const failure = from === undefined ? undefined : this.unreadableAt(from.commit, 'FilteredReadAllResult');
      if (failure !== undefined) {
        call.emit('error', failure);
        return;
      }
      this.catchUp(subscription, from);
    }
    const caughtUp = new ReadResp();
    caughtUp.setCaughtUp(new ReadResp.CaughtUp());
    call.write(caughtUp);
    this.live.add(subscription);
    const forget = (): void => {
      this.live.delete(subscription);
    };
    call.on('cancelled', forget);
    call.on('close', forget);
  }

  /**
   * [F-SUBSCRIBE] Catch-up as Enumerator.AllSubscriptionFiltered.cs:265-362 does it: pages of
   * WIRE_CHECKPOINT_RECORDS considered records read from `from` (inclusive), each event sent only when
   * after the last one sent; the checkpoint moves to a page's start when that is later (a position
   * between events); it is sent every interval and once more, before CaughtUp, at the end.
   */
  private catchUp(subscription: LiveSubscription, from: Pos | undefined): void {
    let checkpoint: Pos = subscription.after;
    let pageStart: Pos = from ?? { commit: 0n, prepare: 0n };
    let index = from === undefined ? 0 : this.log.findIndex((record) => comparePos(record, from) >= 0);
    if (index < 0) index = this.log.length;
    let counter = 0;
    for (;;) {
      const page = this.log.slice(index, index + WIRE_CHECKPOINT_RECORDS);
      for (const record of page) {
        if (subscription.filter !== undefined && !subscription.filter(record)) continue;
        if (comparePos(record, checkpoint) <= 0) continue;
        subscription.call.write(eventResponse(record, 'all'));
        checkpoint = record;
      }
      const last = page[page.length - 1];
      // AllReader.cs:125, 171: where the next page starts
      const nextPos: Pos = last === undefined ? pageStart : last.commitSize === undefined ? { commit: last.prepare + last.size, prepare: 0n } : { commit: last.commit, prepare: last.prepare + last.size };
      if (comparePos(checkpoint, pageStart) < 0 && comparePos(pageStart, nextPos) < 0) checkpoint = pageStart;
      counter += page.length;
      const checkpoints = subscription.checkpointEvery > 0;
      if (page.length < WIRE_CHECKPOINT_RECORDS) {
        if (checkpoints && checkpoint.commit >= 0n) subscription.call.write(checkpointResponse(checkpoint));
        return;
      }
      if (checkpoints && counter >= subscription.checkpointEvery) {
        counter %= subscription.checkpointEvery;
        subscription.call.write(checkpointResponse(checkpoint));
      }
      pageStart = nextPos;
      index += page.length;
    }
  }

  private deliver(subscription: LiveSubscription, record: LogRecord): void {
    subscription.considered++;
    const sent = comparePos(record, subscription.after) > 0 && (subscription.filter === undefined || subscription.filter(record));
    if (sent) subscription.call.write(eventResponse(record, 'all'));
    if (subscription.checkpointEvery > 0 && subscription.considered % subscription.checkpointEvery === 0) {
      subscription.call.write(checkpointResponse(record));
    }
  }
}

function positionOf(position: ReadReq.Options.Position): Pos {
  return { commit: BigInt(position.getCommitPosition()), prepare: BigInt(position.getPreparePosition()) };
}

function proposedEvent(message: AppendReq.ProposedMessage | BatchAppendReq.ProposedMessage): ProposedEvent {
  const metadata = message.getMetadataMap();
  return {
    id: message.getId()!.getString(),
    type: metadata.get('type') ?? '',
    contentType: metadata.get('content-type') ?? 'application/octet-stream',
    data: message.getData_asU8(),
    metadata: message.getCustomMetadata_asU8(),
  };
}

function unaryExpected(options: AppendReq.Options): Expected {
  if (options.hasNoStream()) return { kind: 'no_stream' };
  if (options.hasStreamExists()) return { kind: 'stream_exists' };
  if (options.hasAny()) return { kind: 'any' };
  return { kind: 'revision', revision: BigInt(options.getRevision()) };
}

function batchExpected(options: BatchAppendReq.Options): Expected {
  if (options.hasNoStream()) return { kind: 'no_stream' };
  if (options.hasStreamExists()) return { kind: 'stream_exists' };
  if (options.hasAny()) return { kind: 'any' };
  return { kind: 'revision', revision: BigInt(options.getStreamPosition()) };
}

/** [F-WEV] The expected revision as each reply message spells it (the two protos name the fields differently). */
function setExpected(
  expected: Expected,
  set: { any(): void; noStream(): void; streamExists(): void; revision(revision: string): void },
): void {
  switch (expected.kind) {
    case 'any':
      return set.any();
    case 'no_stream':
      return set.noStream();
    case 'stream_exists':
      return set.streamExists();
    case 'revision':
      return set.revision(expected.revision.toString());
  }
}

function streamIdentifier(streamName: string): StreamIdentifier {
  const identifier = new StreamIdentifier();
  identifier.setStreamName(Uint8Array.from(Buffer.from(streamName, 'utf8')));
  return identifier;
}

function status(code: number, message: string, details: { serializeBinary(): Uint8Array }, typeName: string): Status {
  const any = new Any();
  any.pack(details.serializeBinary(), typeName);
  const result = new Status();
  result.setCode(code);
  result.setMessage(message);
  result.setDetails(any);
  return result;
}

function streamDeletedError(streamName: string): grpc.ServiceError {
  const metadata = new grpc.Metadata();
  metadata.set('exception', 'stream-deleted');
  metadata.set('stream-name', streamName);
  return Object.assign(new Error(`Event stream '${streamName}' is deleted.`), {
    code: grpc.status.FAILED_PRECONDITION,
    details: `Event stream '${streamName}' is deleted.`,
    metadata,
  });
}

/**
 * [F-RECORD] One read event. [F-LEGACY-TX] From `$all` (and subscriptions) every event has its position;
 * a stream read knows it only for a self-committed event (ResolvedEvent.cs:72-77).
 */
function eventResponse(record: LogRecord, read: 'stream' | 'all'): ReadResp {
  const positionKnown = read === 'all' || record.commitSize === undefined;
  const recorded = new ReadResp.ReadEvent.RecordedEvent();
  const id = new UUID();
  id.setString(record.id);
  recorded.setId(id);
  recorded.setStreamIdentifier(streamIdentifier(record.streamName));
  recorded.setStreamRevision(record.revision.toString());
  recorded.setCommitPosition((positionKnown ? record.commit : UNKNOWN_POSITION).toString());
  recorded.setPreparePosition((positionKnown ? record.prepare : UNKNOWN_POSITION).toString());
  recorded.getMetadataMap().set('type', record.type);
  recorded.getMetadataMap().set('content-type', record.contentType);
  recorded.getMetadataMap().set('created', record.createdTicks.toString());
  recorded.setCustomMetadata(record.metadata);
  recorded.setData(record.data);
  const event = new ReadResp.ReadEvent();
  event.setEvent(recorded);
  // Streams.Read.cs:416-423
  if (positionKnown) event.setCommitPosition(record.commit.toString());
  else event.setNoPosition(new SharedEmpty());
  const response = new ReadResp();
  response.setEvent(event);
  return response;
}

function checkpointResponse(position: Pos): ReadResp {
  const checkpoint = new ReadResp.Checkpoint();
  checkpoint.setCommitPosition(position.commit.toString());
  checkpoint.setPreparePosition(position.prepare.toString());
  const response = new ReadResp();
  response.setCheckpoint(checkpoint);
  return response;
}

function filterOf(filter: ReadReq.Options.FilterOptions): (record: LogRecord) => boolean {
  const onType = filter.hasEventType();
  const expression = onType ? filter.getEventType()! : filter.getStreamIdentifier()!;
  const regex = expression.getRegex() ? new RegExp(expression.getRegex()) : undefined;
  const prefixes = expression.getPrefixList();
  return (record) => {
    const subject = onType ? record.type : record.streamName;
    if (regex !== undefined && !regex.test(subject)) return false;
    return prefixes.length === 0 || prefixes.some((prefix) => subject.startsWith(prefix));
  };
}
