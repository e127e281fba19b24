/**
 * Gateway accounting on two instances over one log (docs/gateway.md): what one instance changes, the
 * other admits by from its next call, and no usage upstream reports charges a call past its hold.
 * Each case is one the simulator found (src/simulation/README.md, "What it found").
 */
import { accountDecider } from '../../src/accounts/account.decider';
import { accountStreamName } from '../../src/accounts/account.events';
import { keySpend } from '../../src/accounts/account.state';
import { AggregateRepository } from '../../src/aggregates/aggregate.repository';
import type { EventStore } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/event-store/open-event-store';
import type { GatewayAdmission, GatewayCallOutcome, MessagesBodyFacts } from '../../src/gateway/gateway-call.port';
import { GatewayAdmin } from '../../src/gateway/gateway-admin.service';
import { GATEWAY_FOLLOWED_STATE_MAX_AGE_MS, GatewayCalls } from '../../src/gateway/gateway-calls.service';
import { invocationDecider } from '../../src/invocations/invocation.decider';
import { invocationStreamName } from '../../src/invocations/invocation.events';
import { VirtualClock } from '../../src/runtime/clock';
import { NO_USAGE } from '../../src/runtime/usage';
import { NO_TOOLS } from './support/body-facts';

const ORG = 'acme';
const MODEL = 'claude-sim';
const PRICES = { inputPerMTok: 3_000, outputPerMTok: 15_000, cacheWritePerMTok: 3_750, cacheWrite1hPerMTok: 6_000, cacheReadPerMTok: 300 };
const CARD = { prices: PRICES, maxOutputTokens: 64_000, attemptTimeoutMs: 60_000, enabled: true };
const FACTS: MessagesBodyFacts = { bodyBytes: 1_000, model: MODEL, maxTokens: 1_000, stream: true, imageBlocks: 0, documentBlocks: 0, ...NO_TOOLS };
type Admitted = Extract<GatewayAdmission, { admitted: true }>;

describe('gateway accounting across instances on one log, and at most the hold (docs/gateway.md "Admission", "Settlement")', () => {
  let store: EventStore;
  let clock: VirtualClock;
  let admin: GatewayAdmin;
  let first: GatewayCalls;
  let second: GatewayCalls;
  let secondRepository: AggregateRepository;

  beforeEach(async () => {
    store = await openEventStore('sqlite::memory:');
    clock = new VirtualClock({ startMs: Date.UTC(2026, 11, 1, 12) });
    const firstRepository = new AggregateRepository(store);
    secondRepository = new AggregateRepository(store);
    admin = new GatewayAdmin(firstRepository, clock);
    first = new GatewayCalls(firstRepository, clock);
    second = new GatewayCalls(secondRepository, clock);
    await firstRepository.handle(accountStreamName(ORG), accountDecider, {
      type: 'GrantCredits',
      data: { credits: 1_000_000, reason: 'test', idempotencyKey: 'g-1', grantedAt: new Date(clock.now()).toISOString() },
    });
    await admin.priceModel(MODEL, CARD);
  });
  afterEach(() => store.close());

  const admitted = async (calls: GatewayCalls, key: string, facts: MessagesBodyFacts = FACTS): Promise<Admitted> => {
    const admission = await calls.admit({ presentedKey: key, facts, requestId: 'r' });
    expect(admission).toMatchObject({ admitted: true });
    return admission as Admitted;
  };
  const rateCardVersionOf = async (invocationId: string): Promise<number | undefined> =>
    (await secondRepository.load(invocationStreamName(invocationId), invocationDecider)).state.publication?.version;

  it('admits at the rate card version another instance priced since its last call, not the one it read first', async () => {
    const { key } = await admin.issueKey(ORG, { name: 'ci-bot' });
    expect(await rateCardVersionOf((await admitted(second, key)).invocationId)).toBe(1);
    await clock.advance(60_000);
    await admin.priceModel(MODEL, { ...CARD, prices: { ...PRICES, outputPerMTok: 30_000 } });
    expect(await rateCardVersionOf((await admitted(second, key)).invocationId)).toBe(2);
    // Disabled on the first instance: refused on the second once the card it follows is older than the bound.
    await admin.priceModel(MODEL, { ...CARD, enabled: false });
    await clock.advance(GATEWAY_FOLLOWED_STATE_MAX_AGE_MS + 1);
    expect(await second.admit({ presentedKey: key, facts: FACTS, requestId: 'r' })).toMatchObject({ admitted: false, status: 404 });
  });

  it(`admits from the rate card it read within GATEWAY_FOLLOWED_STATE_MAX_AGE_MS (${GATEWAY_FOLLOWED_STATE_MAX_AGE_MS} ms) without reading it again, and reads it again past that`, async () => {
    const { key } = await admin.issueKey(ORG, { name: 'ci-bot' });
    expect(await rateCardVersionOf((await admitted(second, key)).invocationId)).toBe(1);
    await admin.priceModel(MODEL, { ...CARD, prices: { ...PRICES, outputPerMTok: 30_000 } });
    await clock.advance(GATEWAY_FOLLOWED_STATE_MAX_AGE_MS);
    expect(await rateCardVersionOf((await admitted(second, key)).invocationId)).toBe(1);
    await clock.advance(1);
    expect(await rateCardVersionOf((await admitted(second, key)).invocationId)).toBe(2);
  });

  it('decides a refusal on the streams as read: a model priced on another instance a moment ago is admitted, not refused 404 from the card it follows', async () => {
    const { key } = await admin.issueKey(ORG, { name: 'ci-bot' });
    await admitted(second, key);
    await admin.priceModel('claude-new', CARD);
    await admitted(second, key, { ...FACTS, model: 'claude-new' });
  });

  it('admits from the key it follows only what the account’s own decision at the hold admits: a cap lowered on another instance is refused and recorded, nothing held', async () => {
    const { key, keyId } = await admin.issueKey(ORG, { name: 'ci-bot' });
    await admitted(second, key);
    await admin.changeKey(ORG, keyId, { name: 'ci-bot', maxOutputTokens: 10 });
    const refused = await second.admit({ presentedKey: key, facts: FACTS, requestId: 'r' });
    expect(refused).toMatchObject({ admitted: false, status: 400, invocationId: expect.any(String) });
    const account = (await secondRepository.load(accountStreamName(ORG), accountDecider)).state;
    expect(account.openHolds.size).toBe(1);
  });

  it('follows a key’s allowlist and cap changed on another instance, though it wrote nothing to the account meanwhile', async () => {
    const { key, keyId } = await admin.issueKey(ORG, { name: 'ci-bot', models: ['another-model'] });
    expect(await second.admit({ presentedKey: key, facts: FACTS, requestId: 'r' })).toMatchObject({ admitted: false, status: 403 });
    await admin.changeKey(ORG, keyId, { name: 'ci-bot', models: [MODEL] });
    await admitted(second, key);
    await admin.changeKey(ORG, keyId, { name: 'ci-bot', maxOutputTokens: 10 });
    expect(await second.admit({ presentedKey: key, facts: FACTS, requestId: 'r' })).toMatchObject({ admitted: false, status: 400 });
    await admin.revokeKey(ORG, keyId);
    expect(await second.authenticate(key)).toMatchObject({ admitted: false, status: 401 });
  });

  it('charges an upstream that reports more usage than the request could produce its hold, so the key stays within its limit', async () => {
    const { key, keyId } = await admin.issueKey(ORG, { name: 'ci-bot', spendLimit: { credits: 100, period: 'day' } });
    const call = await admitted(first, key);
    expect(call.holdCredits).toBe(46);
    const overReported: GatewayCallOutcome = {
      startedAtMs: clock.now(),
      durationMs: 5,
      classification: 'ok',
      httpStatus: 200,
      // 10,000 × 15,000 millionths = 150 credits of output alone, from a request allowing 1,000 tokens.
      usage: { ...NO_USAGE, inputTokens: 50_000, outputTokens: 10_000 },
      timedOut: false,
      callerDisconnected: false,
    };
    await first.settle(call, overReported);
    const invocation = (await secondRepository.load(invocationStreamName(call.invocationId), invocationDecider)).state;
    // The attempt keeps the price of what upstream reported; the charge stops at the hold.
    expect(invocation.spentCredits).toBe(300);
    expect(invocation.settlement).toMatchObject({ transition: 8, chargeCredits: 46, heldCredits: 46 });
    const account = (await secondRepository.load(accountStreamName(ORG), accountDecider)).state;
    expect(keySpend(account, account.gatewayKeys.get(keyId)!, new Date(clock.now()).toISOString())).toEqual({ period: '2026-12-01', spent: 46, held: 0 });
    expect(account.charged).toBe(46);
  });
});
