/**
 * The accounting side of a gateway call (docs/gateway.md): admission with the worst-case hold, then
 * settlement at Anthropic's own usage. A call is an invocation with the lifecycle of
 * docs/lifecycle.md: estimated (the rate card version copied in as a one-attempt publication), the
 * hold placed on the account with the key's limit checked in the same decision, reserved and
 * dispatched in one append; after the one upstream attempt, the attempt, the result and the
 * settlement in one append, then the hold settled.
 */
import { Inject, Injectable, Optional } from '@nestjs/common';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import type { AccountState } from '../accounts/account.state';
import { AdmissionRefusedError, GATEWAY_STATUS_OF_REFUSAL, rateLimitClause, spendLimitRemaining, type AccountRefusal, type AdmissionRefusal, type AdmissionRefusalReason, type KeyWorstCaseTokensFigures } from '../accounts/admission.policy';
import { keyAllowsModel, keyExpiry, UnknownGatewayKeyError, type GatewayKey, type GatewayRejectionReason } from '../accounts/gateway-keys';
import { anthropicErrorTypeOf } from './anthropic-error.body';
import { AggregateRepository, MAX_CACHED_AGGREGATES, type AggregateDecider, type CommandContext } from '../aggregates/aggregate.repository';
import type { DomainEvent } from '../domain/decider';
import type { Publication } from '../catalog/operation.events';
import { CLOCK, isoAt } from '../domain/clock.token';
import { INSTANCE_LEASE, type LeaseHolder } from '../invocations/instance-lease';
import { closeAndSettle, estimate, placeHold, refuseEstimate, reserveAndDispatch, settleHold, type LifecycleStep } from '../invocations/invocation-lifecycle';
import { invocationDecider } from '../invocations/invocation.decider';
import { invocationStreamName } from '../invocations/invocation.events';
import type { InvocationState } from '../invocations/invocation.state';
import { invocationIdFor } from '../invocations/invocation-ids';
import type { Clock } from '../runtime';
import {
  modelNotOnRateCard,
  type GatewayAccounting,
  type GatewayAdmission,
  type GatewayCallOutcome,
  type GatewayCallRequest,
  type GatewayModelInfo,
  type GatewayRefusal,
  type GatewayRejection,
  type MessagesBodyFacts,
} from './gateway-call.port';
import { gatewayAttemptEnd } from './gateway-attempt.record';
import { markGatewayPhase } from './gateway-http.channels';
import { gatewayKeyHash, organizationOfKey } from './gateway-keys.codec';
import { GatewayRejections } from './gateway-rejections';
import { GatewaySettlementRetries, isStoreUnavailable } from './gateway-settlement-retries';
import { RATE_CARD_STREAM, rateCardDecider, rateCardInForce, type RateCardVersion } from './rate-card';
import { reportedTokens, worstCaseHold, worstCaseTokens } from './worst-case-hold';

/** The operation every gateway call is recorded under, beside the published operations. */
export const GATEWAY_OPERATION_ID = 'gateway.anthropic-messages';
/** What a 429 tells the caller to wait before trying again, in whole seconds. */
export const GATEWAY_RETRY_AFTER_SECONDS = 1;
/**
 * Where a call's invocation id comes from: a new time-ordered UUID (`invocationIdFor` with no key)
 * unless a deterministic run (the simulator, src/simulation/README.md) provides its own.
 */
export const GATEWAY_CALL_IDS = Symbol('GATEWAY_CALL_IDS');
export type GatewayCallIds = (organizationId: string) => string;

/**
 * How far behind the log the key and the rate card an admission is checked on may be, in ms of the
 * instance's clock: the state the instance last read or appended to at its expected revision serves
 * calls for this long before it is read on. So a rate card version priced, or a model disabled, on
 * another instance is used from at most this long after; a key's change is exact anyway, since the
 * hold decides on the account as the stream has it (the append's expected revision). A refusal is
 * always decided on the streams as read.
 */
export const GATEWAY_FOLLOWED_STATE_MAX_AGE_MS = 1_000;

type Admitted = Extract<GatewayAdmission, { admitted: true }>;
type KnownKey = { readonly ok: true; readonly organizationId: string; readonly key: GatewayKey; readonly keyHash: string; readonly account: AccountState };
/** The checks before the hold: passed, with the rate card version and the worst case; or the answer, and the rejection to count. */
type Checked =
  | { readonly found: KnownKey; readonly card: RateCardVersion; readonly hold: { readonly credits: number; readonly tokens: number } }
  | { readonly answer: GatewayRefusal; readonly rejection?: Omit<GatewayRejection, 'model' | 'requestId'> };

/** A refusal answered with `status`, in the error type Anthropic gives that status. */
const refusal = (status: GatewayRefusal['status'], message: string, extra: Partial<GatewayRefusal> = {}): GatewayRefusal => ({
  admitted: false,
  status,
  errorType: anthropicErrorTypeOf(status),
  message,
  ...extra,
});
/** A refusal for an admission reason, answered with its status (GATEWAY_STATUS_OF_REFUSAL). */
const refusalFor = (reason: AdmissionRefusalReason, message: string, extra: Partial<GatewayRefusal> = {}): GatewayRefusal =>
  refusal(GATEWAY_STATUS_OF_REFUSAL[reason], message, extra);
const INVALID_KEY = refusalFor('key_revoked', 'invalid x-api-key');

@Injectable()
export class GatewayCalls implements GatewayAccounting {
  /** Per stream (the rate card, accounts): when the instance last proved its cached state current, by its clock. */
  private readonly provedCurrentAtMs = new Map<string, number>();

  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
    @Optional() @Inject(GATEWAY_CALL_IDS) private readonly newInvocationId: GatewayCallIds = (organizationId) => invocationIdFor(organizationId, undefined),
    // Absent where only the accounting is built (the simulator's nodes): nothing is counted there.
    @Optional() private readonly rejections?: GatewayRejections,
    // The instance's lease: each call records it as its owner, so recovery leaves the call to its relay while it lives.
    @Optional() @Inject(INSTANCE_LEASE) private readonly lease?: LeaseHolder,
    // Absent where only the accounting is built (the simulator's nodes): a failed settlement is left to recovery there.
    @Optional() private readonly retries?: GatewaySettlementRetries,
  ) {}

  noteRejection(rejection: GatewayRejection): void {
    this.rejections?.note(rejection);
  }

  async authenticate(presentedKey: string): Promise<{ readonly ok: true; readonly organizationId: string; readonly keyId: string } | GatewayRefusal> {
    const found = await this.findKey(presentedKey);
    return 'ok' in found ? { ok: true, organizationId: found.organizationId, keyId: found.key.keyId } : found;
  }

  async models(presentedKey: string): Promise<{ readonly ok: true; readonly models: readonly GatewayModelInfo[] } | GatewayRefusal> {
    const found = await this.findKey(presentedKey);
    if (!('ok' in found)) return found;
    const card = (await this.repository.load(RATE_CARD_STREAM, rateCardDecider)).state;
    const models: GatewayModelInfo[] = [];
    for (const [model, versions] of [...card.models].sort(([a], [b]) => a.localeCompare(b))) {
      if (!versions[versions.length - 1]!.enabled || !keyAllowsModel(found.key, model)) continue;
      models.push({ type: 'model', id: model, display_name: model, created_at: versions[0]!.pricedAt });
    }
    return { ok: true, models };
  }

  async admit({ presentedKey, facts, tags, requestId }: GatewayCallRequest): Promise<GatewayAdmission> {
    // From the key and rate card the instance follows; a refusal is never decided on state that may
    // be behind the log, so it is decided again on the streams as read, and only that answer stands.
    let checked = await this.check(presentedKey, facts, false);
    if (!('hold' in checked)) checked = await this.check(presentedKey, facts, true);
    if (!('hold' in checked)) {
      // Counted on the key and logged (docs/gateway.md "Rejections before admission"); nothing is held.
      if (checked.rejection !== undefined) this.noteRejection({ ...checked.rejection, model: facts.model, requestId });
      return checked.answer;
    }
    markGatewayPhase(requestId, 'key_checked');
    return this.hold(checked.found, checked.card, facts, checked.hold, tags ?? [], requestId);
  }

  /**
   * The checks before the hold (docs/gateway.md "Admission", steps 1 to 3): the key, the model on the
   * rate card and the key, the caps, the worst case. `fresh`: on the streams as read now, else on the
   * state the instance follows (at most GATEWAY_FOLLOWED_STATE_MAX_AGE_MS behind what it last read or wrote).
   */
  private async check(presentedKey: string, facts: MessagesBodyFacts, fresh: boolean): Promise<Checked> {
    const found = await this.findKey(presentedKey, fresh);
    if (!('ok' in found)) return { answer: found };
    const { key, organizationId } = found;
    const rejected = (reason: GatewayRejectionReason, answer: GatewayRefusal): Checked => ({ answer, rejection: { organizationId, keyId: key.keyId, reason } });
    const card = rateCardInForce(await this.followed(RATE_CARD_STREAM, rateCardDecider, fresh), facts.model);
    if (card === undefined || !card.enabled) return rejected('model_not_on_rate_card', refusal(404, modelNotOnRateCard(facts.model)));
    if (!keyAllowsModel(key, facts.model)) return rejected('model_not_allowed', modelNotAllowed(key, facts.model));
    const cap = Math.min(card.maxOutputTokens, key.maxOutputTokens ?? Number.MAX_SAFE_INTEGER);
    if (facts.maxTokens > cap) {
      const whose = cap === key.maxOutputTokens ? keyCap(key) : `the rate card's maxOutputTokens for ${facts.model}`;
      return rejected('max_tokens_over_cap', maxTokensOverCap(facts.maxTokens, cap, whose));
    }
    const hold = worstCaseHold(facts, card);
    if (hold.problem !== undefined) return rejected('not_holdable', refusal(400, hold.problem));
    const tokens = worstCaseTokens(hold.bounds);
    if (key.tokensPerMinute !== undefined && tokens > key.tokensPerMinute) {
      return rejected('max_tokens_over_tokens_per_minute', worstCaseOverTokensPerMinute({ keyId: key.keyId, maxTokens: facts.maxTokens, worstCaseTokens: tokens, tokensPerMinute: key.tokensPerMinute }, key));
    }
    return { found, card, hold: { credits: hold.credits, tokens } };
  }

  /**
   * Settles the call at what upstream reported. When the store could not take it (a server restart),
   * the same settlement is tried again in the background (GatewaySettlementRetries) and the failure
   * still goes to the caller, which relays the answer anyway.
   */
  async settle(admission: Admitted, outcome: GatewayCallOutcome, requestId?: string): Promise<void> {
    try {
      await this.settleOnce(admission, outcome, requestId);
    } catch (error) {
      if (this.retries !== undefined && isStoreUnavailable(error)) this.retries.retry(admission.invocationId, () => this.settleOnce(admission, outcome));
      throw error;
    }
  }

  /**
   * The settlement, safe to repeat: an invocation already settled (by an earlier try whose append
   * committed though its answer was lost, or by recovery) is not settled again, and only its hold is
   * settled, which the account does once.
   */
  private async settleOnce(admission: Admitted, outcome: GatewayCallOutcome, requestId?: string): Promise<void> {
    const stream = invocationStreamName(admission.invocationId);
    const context: CommandContext = { correlationId: admission.invocationId };
    const current = (await this.repository.load(stream, invocationDecider, false)).state;
    // Read so that nothing upstream sent can make it throw: unpriceable usage is unknown usage.
    const { attempt, end } = gatewayAttemptEnd(outcome, current.publication!);
    const at = isoAt(this.clock);
    // The invocation's result and settlement, and the hold's, in one commit (docs/gateway.md
    // "Settlement", "One commit for each side of the call"); an invocation already settled (an earlier
    // try, or recovery) is not settled again, and then only its hold is.
    const closing = closeAndSettle(end, at, attempt).map((step): LifecycleStep => (state) => {
      if (state.status === 'settled') return undefined;
      return typeof step === 'function' ? step(state) : step;
    });
    // Reported usage trues up the key's tokens per minute; unknown usage (or a settlement at the hold by recovery) keeps the worst case counted.
    const tokensOf = (settled: InvocationState) => (attempt.usage === undefined || settled.settlement?.settledBy !== 'runtime' ? undefined : reportedTokens(attempt.usage));
    const account = accountStreamName(admission.organizationId);
    const released = await this.repository.handleAlongside(
      account,
      accountDecider,
      (settled: InvocationState) => settleHold(admission.invocationId, settled, at, undefined, tokensOf(settled)),
      { streamName: stream, decider: invocationDecider, before: closing, context },
      // Once durable, the caller is given the answer's last bytes and nothing else runs for this call:
      // the main thread goes on with other calls while the disk makes it durable (docs/gateway.md).
      { ...context, durableOffLoop: true },
    );
    if (released.events.length > 0) this.provedCurrent(account, this.clock.now());
    if (requestId !== undefined) markGatewayPhase(requestId, 'hold_settled');
    this.repository.forget(stream);
  }

  /**
   * The key the caller presented, from its organization's account (revocation included): as the
   * stream has it now when `fresh`, else as the instance follows it.
   */
  private async findKey(presentedKey: string, fresh = true): Promise<KnownKey | GatewayRefusal> {
    const organizationId = organizationOfKey(presentedKey);
    if (organizationId === undefined) return INVALID_KEY;
    const hash = gatewayKeyHash(presentedKey);
    // Read on from the cached revision when fresh: another instance may have issued, changed or
    // revoked the key since (the simulator found calls refused for an allowlist changed minutes
    // before, on an instance that never wrote to the account in between).
    const account = await this.followed(accountStreamName(organizationId), accountDecider, fresh);
    const key = account.gatewayKeys.get(account.gatewayKeyHashes.get(hash) ?? '');
    if (key === undefined || key.revokedAt !== undefined) return INVALID_KEY;
    const expired = keyExpiry(key, hash, isoAt(this.clock));
    if (expired !== undefined) return keyExpired(expired);
    return { ok: true, organizationId, key, keyHash: hash, account };
  }

  /**
   * A stream's state as the instance follows it: the cached state while it was proved current (read,
   * or appended to at its expected revision) within GATEWAY_FOLLOWED_STATE_MAX_AGE_MS, else read on
   * from the cached revision. `fresh`: read on in any case.
   */
  private async followed<State>(streamName: string, decider: AggregateDecider<unknown, DomainEvent, State>, fresh: boolean): Promise<State> {
    const nowMs = this.clock.now();
    const provedAtMs = this.provedCurrentAtMs.get(streamName);
    const read = fresh || provedAtMs === undefined || nowMs - provedAtMs > GATEWAY_FOLLOWED_STATE_MAX_AGE_MS;
    const { state } = await this.repository.load(streamName, decider, read);
    if (read) this.provedCurrent(streamName, nowMs);
    return state;
  }

  /** Notes that the instance's cached state of `streamName` was the stream's at `atMs`. */
  private provedCurrent(streamName: string, atMs: number): void {
    // Map keeps insertion order: re-inserting marks the entry most recently proved.
    this.provedCurrentAtMs.delete(streamName);
    this.provedCurrentAtMs.set(streamName, atMs);
    if (this.provedCurrentAtMs.size > MAX_CACHED_AGGREGATES) this.provedCurrentAtMs.delete(this.provedCurrentAtMs.keys().next().value as string);
  }

  /** Estimated, held (or refused and recorded), reserved and dispatched. */
  private async hold(
    { organizationId, key, keyHash }: KnownKey,
    card: RateCardVersion,
    facts: MessagesBodyFacts,
    { credits: holdCredits, tokens }: { readonly credits: number; readonly tokens: number },
    tags: readonly string[],
    requestId: string,
  ): Promise<GatewayAdmission> {
    const { stream } = facts;
    const invocationId = this.newInvocationId(organizationId);
    const streamName = invocationStreamName(invocationId);
    const invocation: CommandContext = { correlationId: invocationId, newStream: true };
    const at = isoAt(this.clock);
    // The caller's attribution (docs/gateway.md "Who spent it"): opaque, bounded, never body text.
    const attribution = { ...(facts.userId === undefined ? {} : { userId: facts.userId }), ...(tags.length === 0 ? {} : { tags }) };
    const gateway = { keyId: key.keyId, keyName: key.name, model: card.model, rateCardVersion: card.version, stream, ...(key.teamId === undefined ? {} : { teamId: key.teamId }), ...attribution };
    const owner = this.lease?.leaseId === undefined ? {} : { ownerLeaseId: this.lease.leaseId };
    const estimated = estimate({ invocationId, operationId: GATEWAY_OPERATION_ID, organizationId, publication: publicationOf(card, holdCredits), gateway, ...owner }, at);
    // Once written (a store without appendTogether, or a refusal decided again), the estimate is not written twice.
    const estimateUnlessWritten: LifecycleStep = (state) => (state.status === 'initial' ? estimated : undefined);
    const account = accountStreamName(organizationId);
    // The estimate, the hold (the key's limits checked in the same decision), the reservation and the
    // dispatch in one durable commit: nothing goes upstream before it, and no crash leaves a part of it
    // (docs/gateway.md "One commit for each side of the call").
    const holdAndDispatch = (context: CommandContext) =>
      this.repository.handleAlongside(
        account,
        accountDecider,
        placeHold(invocationId, holdCredits, at, { gatewayKey: { keyId: key.keyId, period: '' }, gatewayCall: { model: card.model, maxTokens: facts.maxTokens, tokens, keyHash } }),
        { streamName, decider: invocationDecider, before: [estimateUnlessWritten], after: reserveAndDispatch(at), context: invocation },
        // The dispatch waits for this commit, and the HTTP client writes it at the end of the turn it is
        // handed over in: made durable at once, not at the turn's end, it goes out in this turn (docs/gateway.md).
        { ...context, durableAtOnce: true },
      );
    let refused = await refusalOf(holdAndDispatch({ correlationId: invocationId }), key);
    if (refused !== undefined) {
      // A refusal is recorded only as the account says it after the call's estimate, so the log shows
      // the state that refused between the two (docs/gateway.md "Admission"): the estimate on its own,
      // then the hold decided again on the account as read, and the refusal if it stands.
      await this.repository.handleAll(streamName, invocationDecider, [estimateUnlessWritten], { ...invocation, acknowledgeOnCommit: true });
      refused = await refusalOf(holdAndDispatch({ correlationId: invocationId, refresh: true }), key);
    }
    if (refused !== undefined) {
      await this.repository.handleAll(streamName, invocationDecider, [refuseEstimate(refused.refusal, isoAt(this.clock))], invocation);
      this.repository.forget(streamName);
      return refused.revoked ? { ...INVALID_KEY, invocationId } : refusalOfAccount(refused.refusal, invocationId, key);
    }
    // Appended at its expected revision: the cached account was the stream's a moment ago.
    this.provedCurrent(account, this.clock.now());
    markGatewayPhase(requestId, 'durable');
    return { admitted: true, invocationId, organizationId, keyId: key.keyId, holdCredits, attemptTimeoutMs: card.attemptTimeoutMs };
  }
}

/**
 * The account's refusal of a hold, or undefined when it was placed: refused for the account's reasons
 * (AdmissionRefusedError), or because the key was revoked between the key check and the hold
 * (transition 1, nothing held). Any other failure is thrown.
 */
async function refusalOf(
  holding: Promise<unknown>,
  key: GatewayKey,
): Promise<{ readonly revoked: true; readonly refusal: AdmissionRefusal } | { readonly revoked: false; readonly refusal: AccountRefusal } | undefined> {
  try {
    await holding;
    return undefined;
  } catch (error) {
    if (error instanceof UnknownGatewayKeyError) return { refusal: { reason: 'key_revoked', figures: { keyId: key.keyId } }, revoked: true };
    if (error instanceof AdmissionRefusedError) return { refusal: error.refusal, revoked: false };
    throw error;
  }
}

/** The rate card version as the one-turn, one-attempt publication the invocation copies. */
export function publicationOf(card: RateCardVersion, holdCredits: number): Publication {
  return {
    version: card.version,
    routing: { provider: 'anthropic', model: card.model },
    limits: {
      maxTurns: 1,
      maxToolCalls: 0,
      totalTimeMs: card.attemptTimeoutMs,
      attemptTimeoutMs: card.attemptTimeoutMs,
      maxOutputTokens: card.maxOutputTokens,
      maxAttemptsPerTurn: 1,
    },
    prices: card.prices,
    creditHold: holdCredits,
    enabled: card.enabled,
    publishedAt: card.pricedAt,
  };
}

/**
 * An account refusal as Anthropic's error, with its status (GATEWAY_STATUS_OF_REFUSAL). A key's name
 * is quoted as JSON, as its explanation quotes it.
 */
export function refusalOfAccount(refused: AccountRefusal, invocationId: string, key: GatewayKey): GatewayRefusal {
  const refuse = (message: string, extra: Partial<GatewayRefusal> = {}): GatewayRefusal => refusalFor(refused.reason, message, { invocationId, ...extra });
  switch (refused.reason) {
    case 'ai_disabled':
      return refuse('AI is switched off for this organization');
    case 'insufficient_credits':
      return refuse(`insufficient credits: available ${refused.figures.available} < hold ${refused.figures.creditHold}`);
    case 'key_spend_limit': {
      const f = refused.figures;
      const period = f.period === 'total' ? 'in total' : `per UTC ${f.period} (${f.periodStart})`;
      return refuse(`key ${JSON.stringify(key.name)} spend limit: ${f.limitCredits} credits ${period}; spent ${f.spentCredits}, held ${f.heldCredits}, ${spendLimitRemaining(f)} remain < hold ${f.creditHold}`);
    }
    case 'team_spend_limit': {
      const f = refused.figures;
      const period = f.period === 'total' ? 'in total' : `per UTC ${f.period} (${f.periodStart})`;
      return refuse(`team ${JSON.stringify(f.teamName)} spend limit: ${f.limitCredits} credits ${period}; its keys spent ${f.spentCredits}, held ${f.heldCredits}, ${spendLimitRemaining(f)} remain < hold ${f.creditHold}`);
    }
    case 'no_running_slot':
      return refuse(`no running slot: running ${refused.figures.running} of ${refused.figures.maxRunning}`, { retryAfterSeconds: GATEWAY_RETRY_AFTER_SECONDS });
    case 'ledger_totals_bound':
      return refuse('the account cannot hold this call within its exact-integer bound');
    // The key changed after it was checked: the same answers as that check gives (docs/gateway.md "Admission").
    case 'key_model_not_allowed':
      return modelNotAllowed(key, refused.figures.model, { invocationId });
    case 'key_max_tokens':
      return maxTokensOverCap(refused.figures.maxTokens, refused.figures.maxOutputTokens, keyCap(key), { invocationId });
    case 'key_expired':
      return keyExpired(refused.figures, { invocationId });
    case 'key_worst_case_tokens':
      return worstCaseOverTokensPerMinute(refused.figures, key, { invocationId });
    case 'key_rate_limit': {
      const f = refused.figures;
      return refuse(`key ${JSON.stringify(key.name)} rate limit: ${rateLimitClause(f, String)}`, { retryAfterSeconds: f.retryAfterSeconds });
    }
  }
}

/** A key past its `expiresAt`, or a secret rotated away past its grace: 401, saying which and when. */
function keyExpired({ expiredAt, rotated }: { readonly expiredAt: string; readonly rotated: boolean }, extra: Partial<GatewayRefusal> = {}): GatewayRefusal {
  const message = rotated ? `x-api-key: this secret was rotated, and its grace ended at ${expiredAt}; use the key's new secret` : `x-api-key: the key expired at ${expiredAt}`;
  return refusalFor('key_expired', message, extra);
}

/** A model outside the key's `models`: at the key check, or recorded when the key changed before the hold. */
function modelNotAllowed(key: GatewayKey, model: string, extra: Partial<GatewayRefusal> = {}): GatewayRefusal {
  return refusalFor('key_model_not_allowed', `key ${JSON.stringify(key.name)} may not call ${model}`, extra);
}

/** A `max_tokens` over a cap (`whose` names it): at the key check, or recorded when the key's cap fell before the hold. */
function maxTokensOverCap(maxTokens: number, cap: number, whose: string, extra: Partial<GatewayRefusal> = {}): GatewayRefusal {
  return refusalFor('key_max_tokens', `max_tokens: ${maxTokens} is over ${cap}, ${whose}`, extra);
}

/**
 * A call whose worst-case tokens alone are over its key's `tokensPerMinute`: 400, never 429, since no
 * minute could admit it (at the key check, or recorded when the limit fell before the hold).
 */
function worstCaseOverTokensPerMinute(f: KeyWorstCaseTokensFigures, key: GatewayKey, extra: Partial<GatewayRefusal> = {}): GatewayRefusal {
  const message =
    `max_tokens: this call's worst case is ${f.worstCaseTokens} tokens (an input bound of ${f.worstCaseTokens - f.maxTokens} plus max_tokens ${f.maxTokens}), ` +
    `over key ${JSON.stringify(key.name)}'s tokensPerMinute of ${f.tokensPerMinute}, so it can never be admitted; lower max_tokens or raise tokensPerMinute`;
  return refusalFor('key_worst_case_tokens', message, extra);
}

const keyCap = (key: GatewayKey): string => `key ${JSON.stringify(key.name)}'s maxOutputTokens`;
