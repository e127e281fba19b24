/**
 * Property (issue 33; docs/gateway.md "Rate limits"): across any interleaving of concurrent holds and
 * settlements, key changes, rotations and expiries, sent through three repositories over one store
 * (three instances on one log), no key ever has more calls in flight than its `maxConcurrent`, more
 * calls or tokens in a minute than its `requestsPerMinute` or `tokensPerMinute`, a hold after its
 * `expiresAt`, or a hold by a secret rotated away past its grace. The log is read back and replayed by
 * an independent model of the rules, so a count the decider kept wrongly cannot hide.
 */
import fc from 'fast-check';
import { accountDecider } from '../../src/accounts/account.decider';
import type { AccountCommand } from '../../src/accounts/account.commands';
import { accountStreamName } from '../../src/accounts/account.events';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import { DomainError } from '../../src/domain/domain.errors';
import { ConcurrencyError, type EventStore, type RecordedEvent } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';

const ORG = 'acme';
const STREAM = accountStreamName(ORG);
const KEY = 'key-1';
/** The secrets' hashes a run may rotate to and present: the first is the key's at issue. */
const HASHES = ['0', '1', '2', '3'].map((digit) => digit.repeat(64));
const START_MS = Date.UTC(2026, 11, 3, 10, 0, 0);
/** Operations happen within these minutes of START_MS, in any order. */
const SPAN_MS = 4 * 60_000;
const INSTANCES = 3;

interface Limits {
  readonly maxConcurrent?: number;
  readonly requestsPerMinute?: number;
  readonly tokensPerMinute?: number;
  readonly expiresAt?: string;
}

type Operation =
  | { readonly kind: 'hold'; readonly tokens: number; readonly secret: number }
  | { readonly kind: 'settle'; readonly invocation: number; readonly reportedShare?: number }
  | { readonly kind: 'change'; readonly limits: Limits }
  | { readonly kind: 'rotate'; readonly secret: number; readonly graceSeconds: number };

const at = fc.integer({ min: 0, max: SPAN_MS }).map((ms) => new Date(START_MS + ms).toISOString());
const limits: fc.Arbitrary<Limits> = fc.record(
  {
    maxConcurrent: fc.integer({ min: 1, max: 4 }),
    requestsPerMinute: fc.integer({ min: 1, max: 6 }),
    tokensPerMinute: fc.integer({ min: 100, max: 3_000 }),
    expiresAt: fc.integer({ min: 30_000, max: SPAN_MS + 60_000 }).map((ms) => new Date(START_MS + ms).toISOString()),
  },
  { requiredKeys: [] },
);
const operation: fc.Arbitrary<Operation> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('hold' as const), tokens: fc.integer({ min: 0, max: 1_500 }), secret: fc.nat(HASHES.length - 1) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('settle' as const), invocation: fc.nat(), reportedShare: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('change' as const), limits }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rotate' as const), secret: fc.integer({ min: 1, max: HASHES.length - 1 }), graceSeconds: fc.integer({ min: 0, max: 120 }) }) },
);
/** An operation, the instance that sends it and the instant its instance's clock reads. */
const step = fc.record({ operation, instance: fc.nat(INSTANCES - 1), at });

/**
 * The command an instance sends for the operation at `index`: each hold is its own invocation
 * (`inv-<index>`), and a settlement names one of the run's holds, reporting a share of its worst case.
 */
function commandOf(steps: readonly { readonly operation: Operation }[], index: number, placedAt: string): AccountCommand {
  const op = steps[index]!.operation;
  switch (op.kind) {
    case 'hold':
      return {
        type: 'PlaceHold',
        data: { invocationId: `inv-${index}`, credits: 1, placedAt, gatewayKey: { keyId: KEY, period: '' }, gatewayCall: { model: 'm', maxTokens: 1, tokens: op.tokens, keyHash: HASHES[op.secret]! } },
      };
    case 'settle': {
      const holds = steps.flatMap((candidate, at) => (candidate.operation.kind === 'hold' ? [{ at, tokens: candidate.operation.tokens }] : []));
      const hold = holds[op.invocation % Math.max(1, holds.length)] ?? { at: -1, tokens: 0 };
      const reportedTokens = op.reportedShare === undefined ? undefined : Math.floor(hold.tokens * op.reportedShare);
      return { type: 'SettleHold', data: { invocationId: `inv-${hold.at}`, chargeCredits: 1, settledAt: placedAt, ...(reportedTokens === undefined ? {} : { reportedTokens }) } };
    }
    case 'change':
      return { type: 'ChangeGatewayKey', data: { keyId: KEY, name: 'ci-bot', ...op.limits, changedAt: placedAt } };
    case 'rotate':
      return { type: 'RotateGatewayKey', data: { keyId: KEY, keyHash: HASHES[op.secret]!, graceSeconds: op.graceSeconds, rotatedAt: placedAt } };
  }
}

/** Which secret each hold presented, by invocation. */
type Presented = ReadonlyMap<string, string>;

/**
 * Replays the account stream with the rules written out again, independently of the decider, and
 * returns every broken rule it met (empty: none).
 */
function brokenRules(events: readonly RecordedEvent[], presented: Presented): string[] {
  const broken: string[] = [];
  let limitsInForce: Limits = {};
  let current = '';
  let previous: { readonly hash: string; readonly validUntil: string } | undefined;
  const open = new Map<string, { readonly tokens: number; readonly minute: string }>();
  const minutes = new Map<string, { requests: number; tokens: number }>();
  let latest = '';
  for (const { type, data } of events as readonly { type: string; data: Record<string, any> }[]) {
    if (type === 'GatewayKeyIssued') current = data.keyHash;
    if (type === 'GatewayKeyIssued' || type === 'GatewayKeyChanged') {
      limitsInForce = { maxConcurrent: data.maxConcurrent, requestsPerMinute: data.requestsPerMinute, tokensPerMinute: data.tokensPerMinute, expiresAt: data.expiresAt };
    }
    if (type === 'GatewayKeyRotated') {
      previous = { hash: current, validUntil: data.previousValidUntil };
      current = data.keyHash;
    }
    if (type === 'HoldPlaced') {
      const { invocationId, placedAt } = data;
      const hold = data.gatewayKey as { tokens: number; minute: string };
      const minute = [new Date(Date.parse(placedAt)).toISOString().slice(0, 16), latest].sort().pop()!;
      if (hold.minute !== minute) broken.push(`${invocationId} counted in ${hold.minute}, not ${minute}`);
      latest = minute;
      open.set(invocationId, { tokens: hold.tokens, minute });
      const count = minutes.get(minute) ?? { requests: 0, tokens: 0 };
      count.requests += 1;
      count.tokens += hold.tokens;
      minutes.set(minute, count);
      const { maxConcurrent, requestsPerMinute, tokensPerMinute, expiresAt } = limitsInForce;
      if (maxConcurrent !== undefined && open.size > maxConcurrent) broken.push(`maxConcurrent: ${open.size} in flight > ${maxConcurrent}`);
      if (requestsPerMinute !== undefined && count.requests > requestsPerMinute) broken.push(`requestsPerMinute: ${count.requests} in ${minute} > ${requestsPerMinute}`);
      if (tokensPerMinute !== undefined && count.tokens > tokensPerMinute) broken.push(`tokensPerMinute: ${count.tokens} in ${minute} > ${tokensPerMinute}`);
      if (expiresAt !== undefined && placedAt >= expiresAt) broken.push(`${invocationId} held at ${placedAt}, the key expired at ${expiresAt}`);
      const hash = presented.get(invocationId);
      const opens = hash === current || (previous !== undefined && hash === previous.hash && placedAt < previous.validUntil);
      if (!opens) broken.push(`${invocationId} held at ${placedAt} by a secret that no longer opened the key`);
    }
    if (type === 'HoldSettled') {
      const hold = open.get(data.invocationId);
      open.delete(data.invocationId);
      // The truth of a minute: the tokens usage reported where it did, the worst case where it did not.
      if (hold !== undefined && data.reportedTokens !== undefined) minutes.get(hold.minute)!.tokens += data.reportedTokens - hold.tokens;
    }
  }
  return broken;
}

/** Sends one command through an instance; a refusal or a lost race writes nothing, as the gateway's handling does. */
async function send(repository: AggregateRepository, command: AccountCommand): Promise<void> {
  try {
    await repository.handle(STREAM, accountDecider, command);
  } catch (error) {
    if (!(error instanceof DomainError) && !(error instanceof ConcurrencyError)) throw error;
  }
}

describe('issue 33: a key’s rate limits and lifetime hold across concurrent instances on one log (property)', () => {
  let store: EventStore;
  afterEach(() => store?.close());

  it('never lets calls in flight, calls or tokens per minute pass the key’s limits, nor a hold by an expired key or a secret past its grace, whatever the interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), limits, fc.array(step, { minLength: 1, maxLength: 40 }), async (scheduler, initial, steps) => {
        await store?.close();
        store = await openEventStore('sqlite::memory:');
        const repositories = Array.from({ length: INSTANCES }, () => new AggregateRepository(store));
        const setUp = repositories[0]!;
        const issuedAt = new Date(START_MS - 60_000).toISOString();
        await setUp.handle(STREAM, accountDecider, { type: 'GrantCredits', data: { credits: 1_000_000, reason: 'test', idempotencyKey: 'g', grantedAt: issuedAt } });
        await setUp.handle(STREAM, accountDecider, { type: 'ChangeSettings', data: { maxRunning: 1_000, changedAt: issuedAt } });
        await setUp.handle(STREAM, accountDecider, { type: 'IssueGatewayKey', data: { keyId: KEY, keyHash: HASHES[0]!, name: 'ci-bot', ...initial, issuedAt } });
        const presented = new Map(steps.flatMap(({ operation: op }, index) => (op.kind === 'hold' ? [[`inv-${index}`, HASHES[op.secret]!] as const] : [])));
        const sent = steps.map(({ operation: op, instance, at: when }, index) =>
          scheduler.schedule(Promise.resolve(), `${op.kind} ${index} on instance ${instance} at ${when}`).then(() => send(repositories[instance]!, commandOf(steps, index, when))),
        );
        await scheduler.waitAll();
        await Promise.all(sent);
        const events = await store.readStream(STREAM);
        expect(brokenRules(events, presented)).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });
});
