/**
 * A gateway call across a power loss (docs/gateway.md "One commit for each side of the call"): on a
 * store that commits across streams, one durable commit before the dispatch and one for the
 * settlement; on one that cannot (EventStoreDB), the same events in appends in a row, the earlier
 * ones of each side acknowledged at commit and its last on disk. A log keeps commits in order, so
 * what a power loss leaves is a prefix of the commit order that holds every append acknowledged
 * durable. This replays every prefix of one call's appends into a fresh log, runs the sweep on it a
 * day later, and checks that nothing stays held, that the charge is the call's price once its
 * settlement is in the log and its hold when it went upstream without one, and that `audit verify`'s
 * checks (auditLedger) pass on each.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { heldCredits } from '../../src/accounts/account.state';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { auditLedger } from '../../src/cli/ledger-audit';
import type { AppendResult, AppendTogetherOptions, EventStore, StreamAppend } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import type { GatewayAdmission, GatewayCallOutcome, MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import { GatewayAdmin } from '../../src/gateway/gateway-admin.service';
import { GatewayCalls } from '../../src/gateway/gateway-calls.service';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { invocationStreamName } from '../../src/invocations/invocation.events';
import { openReadModelStore } from '../../src/projection-runner';
import type { SweepCandidates } from '../../src/invocations/sweep-candidates.port';
import { SweepStaleInvocationsCommand } from '../../src/invocations/sweep-stale-invocations.command';
import { SweepStaleInvocationsHandler } from '../../src/invocations/sweep-stale-invocations.handler';
import { VirtualClock } from '../../src/runtime/clock';
import { NO_USAGE } from '../../src/runtime/usage';
import { NO_TOOLS } from './support/body-facts';

const ORG = 'acme';
const MODEL = 'claude-sim';
const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300 };
const CARD = { prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true };
const FACTS: MessagesBodyFacts = { bodyBytes: 1_000, model: MODEL, maxTokens: 1_000, stream: false, imageBlocks: 0, documentBlocks: 0, ...NO_TOOLS };
const GRANTED = 1_000_000;
/** Past the call's deadline (its time bound plus the recovery margin) and any staleness threshold. */
const A_DAY_MS = 86_400_000;
/** The sweep's staleness threshold, in ms. */
const STALE_AFTER_MS = 60_000;
type Admitted = Extract<GatewayAdmission, { admitted: true }>;

/** One append (one part) or one append across streams, as the store was asked for it. */
interface Append {
  readonly parts: readonly StreamAppend[];
  readonly acknowledge: 'durable' | 'committed';
}

/** The embedded store, recording each append and its acknowledgement level in commit order; `acrossStreams: false` hides appendTogether. */
class RecordingStore implements EventStore {
  readonly appends: Append[] = [];
  readonly appendTogether?: EventStore['appendTogether'];
  constructor(
    private readonly inner: EventStore,
    acrossStreams: boolean,
  ) {
    if (acrossStreams) {
      this.appendTogether = async (parts: readonly StreamAppend[], options?: AppendTogetherOptions): Promise<AppendResult[]> => {
        const results = await this.inner.appendTogether!(parts, options);
        this.appends.push({ parts, acknowledge: options?.acknowledge ?? 'durable' });
        return results;
      };
    }
  }
  async append(...[streamName, events, options]: Parameters<EventStore['append']>): Promise<AppendResult> {
    const result = await this.inner.append(streamName, events, options);
    this.appends.push({ parts: [{ streamName, events, expectedRevision: options.expectedRevision }], acknowledge: options.acknowledge ?? 'durable' });
    return result;
  }
  readStream: EventStore['readStream'] = (...args) => this.inner.readStream(...args);
  streamRevision: EventStore['streamRevision'] = (...args) => this.inner.streamRevision(...args);
  readAll: EventStore['readAll'] = (...args) => this.inner.readAll(...args);
  subscribeToAll: EventStore['subscribeToAll'] = (...args) => this.inner.subscribeToAll(...args);
  headPosition: EventStore['headPosition'] = () => this.inner.headPosition();
  close: EventStore['close'] = () => this.inner.close();
}

/** The read side's hint, folded from the log itself: every invocation not settled or refused. */
function candidatesOf(store: EventStore, repository: AggregateRepository): SweepCandidates {
  let open: { invocationId: string; organizationId: string; lastActivityAt: string; ownerLeaseId?: string }[] = [];
  return {
    caughtUp: async () => {
      const streams = new Set((await store.readAll()).map((event) => event.streamName).filter((name) => name.startsWith('invocation-')));
      open = [];
      for (const stream of streams) {
        const { state } = await repository.load(stream, invocationDecider);
        if (state.status === 'settled' || state.status === 'refused') continue;
        open.push({ invocationId: state.invocationId!, organizationId: state.organizationId!, lastActivityAt: state.lastTransitionAt! });
      }
    },
    openInvocations: () => open,
    organizationsWithOpenHolds: () => [ORG],
  };
}

describe('docs/gateway.md "One commit for each side of the call": a gateway call cut by a power loss at any append is recovered whole (STATE-PFM-LLM-001 transitions 12 and 14)', () => {
  let directory: string;
  beforeAll(() => (directory = mkdtempSync(join(tmpdir(), 'llm-ledger-power-loss-'))));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it.each([
    { store: 'that commits across streams (the embedded store, PostgreSQL)', acrossStreams: true },
    { store: 'that cannot (EventStoreDB), in appends in a row', acrossStreams: false },
  ])('writes each side of the call durably before it acts, on a store $store, and every prefix of the call’s appends recovers to nothing held', async ({ acrossStreams }) => {
    const clock = new VirtualClock({ startMs: Date.UTC(2026, 11, 1, 12) });
    const recording = new RecordingStore(await openEventStore('sqlite::memory:'), acrossStreams);
    const repository = new AggregateRepository(recording);
    const admin = new GatewayAdmin(repository, clock);
    await repository.handle(accountStreamName(ORG), accountDecider, { type: 'GrantCredits', data: { credits: GRANTED, reason: 'test', idempotencyKey: 'g-1', grantedAt: new Date(clock.now()).toISOString() } });
    await admin.priceModel(MODEL, CARD);
    const { key } = await admin.issueKey(ORG, { name: 'ci-bot' });
    const setUp = recording.appends.length;

    const calls = new GatewayCalls(repository, clock);
    const call = (await calls.admit({ presentedKey: key, facts: FACTS, requestId: 'r' })) as Admitted;
    expect(call.admitted).toBe(true);
    const outcome: GatewayCallOutcome = { startedAtMs: clock.now(), durationMs: 5, classification: 'ok', httpStatus: 200, usage: { ...NO_USAGE, inputTokens: 300, outputTokens: 200 }, timedOut: false, callerDisconnected: false };
    await calls.settle(call, outcome);
    await recording.close();

    const ofCall = recording.appends.slice(setUp);
    const invocation = invocationStreamName(call.invocationId);
    const typesOf = (append: Append) => append.parts.flatMap((part) => part.events.map((event) => event.type));
    const settling = ofCall.findIndex((append) => append.parts.some((part) => part.streamName === invocation && part.events.some((event) => event.type === 'InvocationSettled')));
    const released = ofCall.findIndex((append) => typesOf(append).includes('HoldSettled'));
    const dispatching = ofCall.findIndex((append) => typesOf(append).includes('InvocationDispatched'));
    const holdIndex = ofCall.findIndex((append) => typesOf(append).includes('HoldPlaced'));
    if (acrossStreams) {
      // Two commits: the estimate, hold, reservation and dispatch; then the result, its settlement and the hold's. Both on disk.
      expect(ofCall.map((append) => [typesOf(append), append.acknowledge])).toEqual([
        [['InvocationEstimated', 'HoldPlaced', 'InvocationReserved', 'InvocationDispatched'], 'durable'],
        [['AttemptRecorded', 'InvocationCompleted', 'InvocationSettled', 'HoldSettled'], 'durable'],
      ]);
    } else {
      // The settlement's two appends: the invocation's at commit, then the account's on disk, last.
      expect({ settling: ofCall[settling]?.acknowledge, released: ofCall[released]?.acknowledge, last: released === ofCall.length - 1 }).toEqual({ settling: 'committed', released: 'durable', last: true });
      expect(settling).toBeLessThan(released);
      // Nothing goes upstream before a durable append holds the hold.
      expect(ofCall[dispatching]!.acknowledge).toBe('durable');
      expect(holdIndex).toBeLessThan(dispatching);
    }

    for (let kept = 0; kept <= ofCall.length; kept++) {
      const store = await openEventStore(`sqlite:${join(directory, `cut-${acrossStreams}-${kept}.sqlite`)}`);
      try {
        // What the disk kept, on disk (readAll and the sweep's candidates see durable commits only).
        for (const { parts } of recording.appends.slice(0, setUp + kept)) await store.appendTogether!(parts);
        const later = new VirtualClock({ startMs: clock.now() + A_DAY_MS });
        const fresh = new AggregateRepository(store);
        await new SweepStaleInvocationsHandler(fresh, candidatesOf(store, fresh), later).execute(new SweepStaleInvocationsCommand(STALE_AFTER_MS));
        const account = (await fresh.load(accountStreamName(ORG), accountDecider)).state;
        const state = (await fresh.load(invocation, invocationDecider)).state;
        const settledByCall = kept > settling;
        const wentUpstream = kept > dispatching;
        const expectedCharge = settledByCall ? state.spentCredits : wentUpstream ? call.holdCredits : 0;
        expect({ kept, held: heldCredits(account), running: account.openHolds.size, charged: account.charged }).toEqual({ kept, held: 0, running: 0, charged: expectedCharge });
        if (kept > 0) expect({ kept, status: state.status, charge: state.settlement?.chargeCredits }).toEqual({ kept, status: 'settled', charge: expectedCharge });
        expect({ kept, differences: (await auditLedger({ eventStore: store, readStore: openReadModelStore({ path: ':memory:' }) })).differences }).toEqual({ kept, differences: [] });
      } finally {
        await store.close();
      }
    }
  });
});
