/**
 * The simulator's auditor: it reads the durable log (through its own handle, so it outlives every
 * crashed process), folds it with its own accounting — written apart from the deciders so a bug in one
 * is not repeated in the other — and checks, event by event:
 *
 * - lifecycle: only the transitions of docs/lifecycle.md's table, nothing after `settled` or `refused`;
 * - per organization: `granted + adjustments − charged − held == available`, `held` is the sum of the
 *   open holds, a hold is admitted only with the switch on, the credits available and a slot free
 *   (`running < maxRunning`), and each invocation's hold is placed, charged and released at most once;
 * - settlement: each charge is what docs/lifecycle.md says for its path (the sum of attempt prices, the
 *   estimate, or 0) and the account charges exactly what the invocation settled at;
 * - attempts: priced at the invocation's own rate version (docs/rules.md rule 07), in order, within the
 *   bounds;
 * - conversations: no more turns or tool calls than published, no more handler runs than answered
 *   calls, and `spent > creditHold` only by the turn that crossed it (the credit guard of docs/rules.md
 *   step 8, checked against what the model really answered);
 * - gateway calls (gateway-audit.ts): holds only for live keys within their limits, the rate card
 *   version in force copied, the worst-case hold, never a charge over the hold, every refusal explained;
 * - the ledger's own fold (its deciders' `evolve`) agrees with this one after every event.
 */
import { createHash, type Hash } from 'node:crypto';
import { DEFAULT_MAX_RUNNING } from '../accounts/account.bounds';
import { accountDecider } from '../accounts/account.decider';
import type { AccountEvent } from '../accounts/account.events';
import { balanceOf, type AccountState } from '../accounts/account.state';
import { ACCESS_REFUSAL_REASONS } from '../accounts/admission.policy';
import type { Publication } from '../catalog/operation.events';
import type { GatewayKeySettings } from '../accounts/gateway-keys';
import type { GatewayCallOutcome } from '../gateway/gateway-call.port';
import { GATEWAY_OPERATION_ID } from '../gateway/gateway-calls.service';
import { RATE_CARD_STREAM } from '../gateway/rate-card';
import type { GatewayPrices } from '../runtime/conversation.types';
import {
  cardVersionAcceptable,
  expectedGatewayPublication,
  independentGatewayPrice,
  judgeUpstreamReport,
  settlementAgainstReport,
  type UpstreamReport,
  KeyAudit,
  momentOf,
  refusalExplainedBy,
  type AccountMoment,
  type CardVersionAudit,
} from './gateway-audit';
import type { EventStore, RecordedEvent } from '../event-store/event-store.port';
import { invocationDecider } from '../invocations/invocation.decider';
import { MAX_RETAINED_ATTEMPTS, TRANSITIONS, type InvocationEvent, type InvocationStatus } from '../invocations/invocation.events';
import type { InvocationState, InvocationSummary } from '../invocations/invocation.state';
import type { Prices } from '../runtime/conversation.types';
import { PRICE_KINDS } from '../runtime/price-kinds';
import type { Usage } from '../runtime/provider.port';
import { LeaseAudit } from './lease-audit';
import { FOLD_WAIT_POLL_WALL_MS, MAX_FOLD_WAIT_WALL_MS } from './simulation.bounds';
import type { SimulatedEpisode } from './simulated-episode';

/**
 * The first of an account's moments that may explain a gateway refusal recorded after the call's
 * estimate (LogAudit.gatewayRefusal). A moment is the account after the event at that revision: every
 * account event makes one, in stream order. `momentsBeforeEstimate`: the account's moments the fold
 * had made when it met the estimate. Where positions follow commit order, the refusal's read of the
 * account held all of them, so the window opens at the last. Otherwise it held at least the account's
 * revision committed when the estimate was issued (`committedAtEstimate`; none: the account's start).
 */
export function refusalWindowStart(momentsBeforeEstimate: number, committedAtEstimate: bigint | undefined, positionsInCommitOrder: boolean): number {
  const lastBeforeEstimate = Math.max(0, momentsBeforeEstimate - 1);
  if (positionsInCommitOrder) return lastBeforeEstimate;
  return committedAtEstimate === undefined ? 0 : Math.min(lastBeforeEstimate, Number(committedAtEstimate));
}

/** A broken invariant, with the streams whose events show it. */
export interface Violation {
  /** A stable name, e.g. `account.hold-settled-once`. */
  readonly invariant: string;
  readonly detail: string;
  readonly streams: readonly string[];
  /** Invocations involved; an account's history is narrowed to the events naming them. */
  readonly invocations: readonly string[];
}

/** What only the simulator knows about a conversation (the log holds no bodies). */
export interface ConversationWitness {
  episodeOf(invocationId: string): SimulatedEpisode | undefined;
  /** True when an append of this invocation had its acknowledgement lost (the exception path is then expected). */
  disturbed(invocationId: string): boolean;
  /** Counts what was checked or seen (coverage figures). */
  note(name: string): void;
  /** A gateway call's account: its last revision committed when the call's estimate was issued, if any. */
  accountCommittedAtEstimate?(invocationId: string): bigint | undefined;
}

export interface LogAuditOptions {
  /** Only ids starting with this are the run's own (a shared EventStoreDB holds other runs too). */
  readonly namespace: string;
  /** Organizations that only make gateway calls and are never debited otherwise: available must never go below zero there. */
  readonly gatewayOnlyOrganizations?: ReadonlySet<string>;
  /**
   * Whether the log's positions follow the order of commit (SQLite, EventStoreDB: true, the default).
   * On PostgreSQL a position is the writing transaction's id, taken at its first write, so an append
   * that began earlier may commit later and still sort first.
   */
  readonly positionsInCommitOrder?: boolean;
}

/** Events read from the log per page while catching up. */
const AUDIT_PAGE_EVENTS = 1_000;
/** Pages one catch-up reads at most: a bound far above any scenario's log (100 million events). */
const MAX_AUDIT_PAGES = 100_000;
const MILLION = 1_000_000n;

type Status = InvocationStatus | 'none';

interface HoldRecord {
  readonly credits: number;
  readonly placedAt: bigint;
  /** The gateway key the hold counts against, for a gateway call. */
  readonly keyId?: string;
  settled: { readonly charged: number; readonly at: bigint } | undefined;
}

export class AccountAudit {
  granted = 0;
  adjustments = 0;
  charged = 0;
  aiEnabled = true;
  maxRunning = DEFAULT_MAX_RUNNING;
  /** Open holds: invocation → credits. */
  readonly open = new Map<string, number>();
  /** Every hold ever placed. */
  readonly holds = new Map<string, HoldRecord>();
  readonly entryKeys = new Set<string>();
  /** Gateway keys, by id. */
  readonly keys = new Map<string, KeyAudit>();
  /** Gateway teams, by id, folded like keys (a deleted team's `revokedAtMs` is its deletion). */
  readonly teams = new Map<string, KeyAudit>();
  /** Budget alerts recorded: `<key or team id> <period> <percent>`, each at most once. */
  readonly alertsSent = new Set<string>();
  /** The account after each of its events, for explaining recorded refusals (gateway-audit.ts). */
  readonly moments: AccountMoment[] = [];
  ledger: AccountState = accountDecider.initialState();

  constructor(
    readonly organizationId: string,
    readonly stream: string,
  ) {}

  get held(): number {
    let sum = 0;
    for (const credits of this.open.values()) sum += credits;
    return sum;
  }

  get running(): number {
    return this.open.size;
  }

  get available(): number {
    return this.granted + this.adjustments - this.charged - this.held;
  }
}

interface AttemptFact {
  readonly turn: number;
  readonly retry: number;
  readonly ok: boolean;
  readonly priceCredits: number;
}

interface ResultFact {
  readonly kind: 'completed' | 'failed';
  readonly outcome: string;
  readonly turnsUsed: number;
  readonly toolCallsUsed: number;
  readonly spentCredits: number;
  readonly attemptCount: number;
  readonly usageReported: boolean;
}

export class InvocationAudit {
  status: Status = 'none';
  organizationId = '';
  operationId = '';
  publication: Publication | null = null;
  estimate = 0;
  reservedCredits: number | undefined;
  readonly attempts: AttemptFact[] = [];
  recordedSpend = 0;
  recordedUsage = false;
  result: ResultFact | undefined;
  settlement:
    | {
        readonly transition: number;
        readonly charge: number;
        readonly by: string;
        readonly at: bigint;
        readonly settledAtMs: number;
        /** Why a stale closer settled what a lease owned: `lease-expired` or `deadline-passed`. */
        readonly ground: string | undefined;
      }
    | undefined;
  /** A gateway call's key, model and rate card version; and the account's moment when it was estimated. */
  gateway: { readonly keyId: string; readonly model: string; readonly rateCardVersion: number; readonly momentIndex: number } | undefined;
  /** What a gateway call's upstream reported, judged when its attempt was recorded. */
  upstream: UpstreamReport | undefined;
  ledger: InvocationState = invocationDecider.initialState();

  constructor(
    readonly invocationId: string,
    readonly stream: string,
  ) {}
}

interface OperationAudit {
  readonly versions: Map<number, Publication>;
  latest: number;
}

/** Thrown inside the fold to stop at the first broken invariant. */
class Broken extends Error {
  constructor(readonly violation: Violation) {
    super(violation.detail);
  }
}

function broken(invariant: string, detail: string, streams: readonly string[], invocations: readonly string[] = []): never {
  throw new Broken({ invariant, detail, streams, invocations });
}

export class LogAudit {
  readonly accounts = new Map<string, AccountAudit>();
  readonly invocations = new Map<string, InvocationAudit>();
  private readonly operations = new Map<string, OperationAudit>();
  /** Instance leases, and what recovery settles by them (lease-audit.ts). */
  private readonly leases = new LeaseAudit();
  /** The rate card: model → its versions, oldest first. */
  readonly rateCard = new Map<string, CardVersionAudit[]>();
  private after: bigint | undefined;
  private readonly hash: Hash = createHash('sha256');
  private folded = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private failure: Violation | undefined;
  /** Holds placed for an invocation a sweep had already settled (released later by a sweep). */
  holdsAfterSettlement = 0;
  /** What each gateway call's upstream answered, as the driver handed it to settlement, until its attempt is folded. */
  private readonly upstreamAnswers = new Map<string, GatewayCallOutcome>();
  /**
   * Checks of what was handed out before the fold reached it, run again at the next quiet point
   * (`checkDeferred`), each with the position of the event the fold must have reached by then.
   */
  private readonly deferred: Array<{ readonly check: () => Violation | undefined; readonly position: bigint }> = [];

  constructor(
    private readonly store: EventStore,
    private readonly witness: ConversationWitness,
    private readonly options: LogAuditOptions,
  ) {}

  /** Events folded so far. */
  get events(): number {
    return this.folded;
  }

  /** SHA-256 over every folded event's stream, type and data, in log order: equal runs, equal digests. */
  digest(): string {
    return this.hash.copy().digest('hex');
  }

  /** Reads and checks what was appended since the last call; the first violation sticks. Calls queue. */
  catchUp(): Promise<Violation | undefined> {
    const run = this.queue.then(() => this.readNewEvents());
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * A result handed to a caller must be the log's. The fold answers first. Where it has not reached
   * the result yet, the invocation's own stream, which shows every commit at once, must already hold
   * it, and the fold must agree at the next quiet point (`checkDeferred`): on PostgreSQL a
   * reader of `$all` stops below the oldest append still running (docs/architecture.md, "The global
   * order on PostgreSQL"), so an event committed beside one arrives in the fold a little later.
   */
  async checkHandedResult(summary: InvocationSummary): Promise<Violation | undefined> {
    const violation = this.checkSummary(summary);
    if (violation === undefined) return undefined;
    const position = await this.positionOfResult(summary);
    if (position === undefined) return violation;
    this.deferToQuietPoint(() => this.checkSummary(summary), position);
    this.witness.note('audit.result-ahead-of-the-fold');
    return undefined;
  }

  /**
   * Runs `check` at the next quiet point (`checkDeferred`) instead of now: for something a caller was
   * handed that the invocation's own stream already holds, at `position`, but the fold has not reached yet.
   */
  deferToQuietPoint(check: () => Violation | undefined, position: bigint): void {
    this.deferred.push({ check, position });
  }

  /**
   * At a quiet point (no append of the run in flight), once the fold has reached every event a
   * deferred check waits for. On PostgreSQL a reader of `$all` also stops below a transaction still
   * running in another database of the same cluster (the read bound is the cluster's), so the fold
   * is read again, MAX_FOLD_WAIT_WALL_MS at most, until it gets there; a fold that never does is the
   * check's to report.
   */
  async checkDeferred(): Promise<Violation | undefined> {
    const deferred = this.deferred.splice(0);
    if (deferred.length === 0) return undefined;
    const failure = await this.foldPast(deferred.reduce((highest, { position }) => (position > highest ? position : highest), 0n));
    if (failure !== undefined) return failure;
    for (const { check } of deferred) {
      const violation = check();
      if (violation !== undefined) return violation;
    }
    return undefined;
  }

  /**
   * Folds the log until the fold has passed `position`, reading again for MAX_FOLD_WAIT_WALL_MS at most
   * (a server store's read bound may wait for transactions outside the run); the first violation met.
   */
  async foldPast(position: bigint): Promise<Violation | undefined> {
    const waitUntil = performance.now() + MAX_FOLD_WAIT_WALL_MS;
    for (;;) {
      const failure = await this.catchUp();
      if (failure !== undefined || (this.after ?? -1n) >= position || performance.now() >= waitUntil) return failure;
      await new Promise((resolve) => setTimeout(resolve, FOLD_WAIT_POLL_WALL_MS));
    }
  }

  /**
   * Folds the log through everything those streams hold now, read directly: for a judgement that
   * needs what a command met in them (a settlement that refused a live run's write) before the
   * reader of `$all` hands it over. The first violation met.
   */
  async foldThrough(streamNames: readonly string[]): Promise<Violation | undefined> {
    const position = await this.positionAheadOfTheFold(streamNames);
    return position === undefined ? undefined : this.foldPast(position);
  }

  /** The last position of those streams, read directly (every commit at once), when the fold has not reached it. */
  async positionAheadOfTheFold(streamNames: readonly string[]): Promise<bigint | undefined> {
    let highest: bigint | undefined;
    for (const streamName of streamNames) {
      const last = (await this.store.readStream(streamName)).at(-1)?.position;
      if (last !== undefined && (highest === undefined || last > highest)) highest = last;
    }
    return highest !== undefined && (this.after === undefined || highest > this.after) ? highest : undefined;
  }

  /** The position of the first event of `type` in the invocation's stream read directly (every commit at once), if it holds one. */
  async streamPositionOf(invocationId: string, type: string): Promise<bigint | undefined> {
    return (await this.invocationEvents(invocationId)).find((event) => event.type === type)?.position;
  }

  /** The invocation's stream, read directly: it shows every commit at once, unlike a reader of `$all`. */
  private invocationEvents(invocationId: string): Promise<RecordedEvent[]> {
    return this.store.readStream(`invocation-${invocationId}`);
  }

  /** Where the invocation's stream, read directly, holds the summary's state (and its charge), if it does. */
  private async positionOfResult(summary: InvocationSummary): Promise<bigint | undefined> {
    const events = await this.invocationEvents(summary.invocationId);
    if (summary.state === 'refused') return summary.charge === 0 ? events.find((event) => event.type === 'InvocationRefused')?.position : undefined;
    if (summary.state !== 'settled') return events.at(-1)?.position;
    return events.find((event) => event.type === 'InvocationSettled' && (event.data as { chargeCredits?: unknown }).chargeCredits === summary.charge)?.position;
  }

  /** A result handed to a caller must be the fold's: a final state there with the same charge. */
  checkSummary(summary: InvocationSummary): Violation | undefined {
    const invocation = this.invocations.get(summary.invocationId);
    const stream = `invocation-${summary.invocationId}`;
    if (invocation === undefined) {
      return { invariant: 'result.durable', detail: `a caller was answered for ${summary.invocationId}, which the log does not hold`, streams: [stream], invocations: [summary.invocationId] };
    }
    if (summary.state !== 'settled' && summary.state !== 'refused') return undefined;
    const charge = invocation.settlement?.charge ?? 0;
    if (invocation.status !== summary.state || summary.charge !== charge) {
      return {
        invariant: 'result.durable',
        detail: `a caller was told ${summary.state} with charge ${summary.charge}; the log says ${invocation.status} with charge ${charge}`,
        streams: [stream, `account-${invocation.organizationId}`],
        invocations: [summary.invocationId],
      };
    }
    return undefined;
  }

  /** The driver hands each admitted call's upstream answer here before it settles the call. */
  upstreamAnswered(invocationId: string, outcome: GatewayCallOutcome): void {
    this.upstreamAnswers.set(invocationId, outcome);
  }

  /** Settled by a closer of stale requests (a sweep or recovery), which a live run may then find settled. */
  settledByStaleCloser(invocationId: string): boolean {
    const by = this.invocations.get(invocationId)?.settlement?.by;
    return by === 'sweep' || by === 'recovery';
  }

  /**
   * After the final sweep: every invocation settled or refused, no hold left open, and each account's
   * charges equal to what its invocations settled at (the read side's cross-check of balances against
   * charges, README.md "Invoicing").
   */
  finalChecks(): Violation | undefined {
    for (const invocation of this.invocations.values()) {
      if (invocation.status !== 'settled' && invocation.status !== 'refused') {
        return {
          invariant: 'lifecycle.final-after-sweep',
          detail: `invocation ${invocation.invocationId} is still ${invocation.status} after the final sweep`,
          streams: [invocation.stream, `account-${invocation.organizationId}`],
          invocations: [invocation.invocationId],
        };
      }
    }
    const charges = new Map<string, number>();
    for (const invocation of this.invocations.values()) {
      charges.set(invocation.organizationId, (charges.get(invocation.organizationId) ?? 0) + (invocation.settlement?.charge ?? 0));
    }
    for (const account of this.accounts.values()) {
      if (account.open.size > 0) {
        const [invocationId] = account.open.keys();
        return {
          invariant: 'account.no-open-hold-after-sweep',
          detail: `${account.stream} still holds ${account.held} credits for ${account.open.size} invocation(s) after the final sweep`,
          streams: [account.stream, `invocation-${invocationId!}`],
          invocations: [...account.open.keys()],
        };
      }
      const settled = charges.get(account.organizationId) ?? 0;
      if (account.charged !== settled) {
        return {
          invariant: 'account.charges-match-invocations',
          detail: `${account.stream} charged ${account.charged} credits; its invocations settled at ${settled}`,
          streams: [account.stream],
          invocations: [],
        };
      }
    }
    return undefined;
  }

  private async readNewEvents(): Promise<Violation | undefined> {
    if (this.failure !== undefined) return this.failure;
    for (let pages = 0; pages < MAX_AUDIT_PAGES; pages++) {
      const page = await this.store.readAll({ ...(this.after === undefined ? {} : { after: this.after }), maxCount: AUDIT_PAGE_EVENTS });
      for (const event of page) {
        this.after = event.position;
        if (!this.owns(event.streamName)) continue;
        this.folded += 1;
        this.hash.update(`${event.streamName}\n${event.type}\n${JSON.stringify(event.data)}\n`);
        try {
          this.fold(event);
        } catch (error) {
          if (!(error instanceof Broken)) throw error;
          this.failure = error.violation;
          return this.failure;
        }
      }
      if (page.length < AUDIT_PAGE_EVENTS) return undefined;
    }
    throw new Error(`the audit read more than ${MAX_AUDIT_PAGES} pages in one catch-up`);
  }

  private owns(streamName: string): boolean {
    const dash = streamName.indexOf('-');
    return dash > 0 && streamName.startsWith(this.options.namespace, dash + 1);
  }

  private fold(event: RecordedEvent): void {
    const dash = event.streamName.indexOf('-');
    const category = event.streamName.slice(0, dash);
    const id = event.streamName.slice(dash + 1);
    switch (category) {
      case 'account':
        return this.foldAccount(id, event);
      case 'invocation':
        return this.foldInvocation(id, event);
      case 'operation':
        return this.foldOperation(id, event);
      case 'gateway':
        if (event.streamName === RATE_CARD_STREAM) return this.foldRateCard(event);
        return broken('log.known-streams', `unexpected stream ${event.streamName}`, [event.streamName]);
      case 'lease':
        return this.leases.fold(id, event, (invariant, detail) => broken(invariant, detail, [event.streamName]));
      default:
        return broken('log.known-streams', `unexpected stream ${event.streamName}`, [event.streamName]);
    }
  }

  private foldOperation(operationId: string, event: RecordedEvent): void {
    const operation = this.operations.get(operationId) ?? { versions: new Map<number, Publication>(), latest: 0 };
    this.operations.set(operationId, operation);
    if (event.type !== 'OperationPublished') broken('catalog.known-events', `unexpected ${event.type}`, [event.streamName]);
    const { operationId: _id, ...publication } = event.data as Publication & { operationId: string };
    if (publication.version !== operation.latest + 1) {
      broken('catalog.versions-consecutive', `version ${publication.version} follows ${operation.latest}`, [event.streamName]);
    }
    operation.versions.set(publication.version, publication);
    operation.latest = publication.version;
  }

  private foldRateCard(event: RecordedEvent): void {
    if (event.type !== 'GatewayModelPriced') broken('gateway.rate-card-known-events', `unexpected ${event.type}`, [event.streamName]);
    const data = event.data as CardVersionAudit & { model: string };
    const versions = this.rateCard.get(data.model) ?? [];
    this.rateCard.set(data.model, versions);
    if (data.version !== versions.length + 1) broken('gateway.rate-card-versions-consecutive', `${data.model} v${data.version} follows v${versions.length}`, [event.streamName]);
    const { model: _model, ...card } = data;
    versions.push({ ...card, pricedAtMs: Date.parse(data.pricedAt) });
  }

  private foldAccount(organizationId: string, event: RecordedEvent): void {
    const stream = event.streamName;
    let account = this.accounts.get(organizationId);
    if (account === undefined) {
      account = new AccountAudit(organizationId, stream);
      this.accounts.set(organizationId, account);
    }
    const data = event.data as Record<string, unknown>;
    switch (event.type) {
      case 'CreditsGranted':
      case 'CreditsAdjusted': {
        const key = data.idempotencyKey as string;
        if (account.entryKeys.has(key)) broken('account.entry-once-per-key', `${event.type} repeats idempotency key ${key}`, [stream]);
        account.entryKeys.add(key);
        if (event.type === 'CreditsGranted') account.granted += data.credits as number;
        else account.adjustments += data.credits as number;
        break;
      }
      case 'OrganizationSettingsChanged':
        account.aiEnabled = data.aiEnabled as boolean;
        account.maxRunning = data.maxRunning as number;
        break;
      case 'HoldPlaced':
        this.holdPlaced(account, data.invocationId as string, data.credits as number, event);
        break;
      case 'GatewayKeyIssued':
      case 'GatewayKeyChanged':
      case 'GatewayKeyRevoked':
        this.keyEvent(account, event);
        break;
      case 'GatewayKeyRotated':
        // A new secret for the same key: its settings, spend and limits are unchanged.
        if (account.keys.get(data.keyId as string)?.revokedAtMs !== undefined) broken('gateway.key-changed-while-live', `GatewayKeyRotated for key ${data.keyId as string}, which is revoked`, [stream]);
        account.keys.get(data.keyId as string)?.rotated(data.rotatedAt as string, data.previousValidUntil as string);
        break;
      case 'GatewayCallsRejected':
        // Counts of calls refused before their hold: no money moves.
        break;
      case 'GatewayTeamCreated':
      case 'GatewayTeamChanged':
      case 'GatewayTeamDeleted':
        this.teamEvent(account, event);
        break;
      case 'GatewayBudgetThresholdCrossed':
        this.budgetAlert(account, event);
        break;
      case 'HoldSettled':
        this.holdSettled(account, data as { invocationId: string; heldCredits: number; chargedCredits: number }, event);
        break;
      default:
        broken('account.known-events', `unexpected ${event.type}`, [stream]);
    }
    account.ledger = accountDecider.evolve(account.ledger, { type: event.type, data: event.data } as AccountEvent);
    this.compareAccount(account);
    account.moments.push(momentOf(account.available, account.running, account.maxRunning, account.aiEnabled, account.keys.values(), account.teams.values()));
    if (account.available < 0 && this.options.gatewayOnlyOrganizations?.has(organizationId) === true) {
      broken('gateway.available-never-below-zero', `${stream} has ${account.available} credits available after ${event.type}, with only gateway calls charged`, [stream]);
    }
  }

  private keyEvent(account: AccountAudit, event: RecordedEvent): void {
    const data = event.data as GatewayKeySettings & { keyId: string; issuedAt?: string; changedAt?: string; revokedAt?: string; keyHash?: string };
    const key = account.keys.get(data.keyId);
    if (event.type === 'GatewayKeyIssued') {
      if (key !== undefined) broken('gateway.key-issued-once', `key ${data.keyId} issued twice`, [account.stream]);
      const issued = new KeyAudit(data.keyId, account.organizationId);
      const { keyId: _id, keyHash: _hash, issuedAt, ...settings } = data;
      issued.change(Date.parse(issuedAt!), settings);
      account.keys.set(data.keyId, issued);
      return;
    }
    if (key === undefined || key.revokedAtMs !== undefined) broken('gateway.key-changed-while-live', `${event.type} for key ${data.keyId}, which is unknown or revoked`, [account.stream]);
    if (event.type === 'GatewayKeyRevoked') {
      key.revokedAtMs = Date.parse(data.revokedAt!);
      return;
    }
    const { keyId: _id, changedAt, ...settings } = data;
    key.change(Date.parse(changedAt!), settings);
  }

  /** A gateway hold (docs/gateway.md "Admission"): a live key of this organization, in its own period, within its limit. */
  private gatewayHold(account: AccountAudit, invocation: InvocationAudit, credits: number, data: Record<string, unknown>, streams: string[]): string | undefined {
    const asked = data.gatewayKey as { keyId: string; period: string } | undefined;
    const invocationId = invocation.invocationId;
    if (invocation.gateway === undefined) {
      if (asked !== undefined) broken('gateway.hold-names-its-key', `an operation's hold for ${invocationId} names gateway key ${asked.keyId}`, streams, [invocationId]);
      return undefined;
    }
    if (asked?.keyId !== invocation.gateway.keyId) broken('gateway.hold-names-its-key', `gateway call ${invocationId} of key ${invocation.gateway.keyId} held against ${asked?.keyId ?? 'no key'}`, streams, [invocationId]);
    const key = account.keys.get(asked.keyId);
    if (key === undefined || key.revokedAtMs !== undefined) broken('gateway.hold-for-a-live-key', `hold for ${invocationId} against key ${asked.keyId}, which is ${key === undefined ? 'unknown' : 'revoked'}`, streams, [invocationId]);
    const period = key.periodAt(data.placedAt as string);
    if (asked.period !== period) broken('gateway.hold-in-the-keys-period', `hold for ${invocationId} counts in ${asked.period}; key ${key.keyId} (${key.kind}) counts it in ${period}`, streams, [invocationId]);
    const limit = key.settings.spendLimit?.credits;
    const { spent, held } = key.figures(period);
    if (limit !== undefined && spent + held + credits > limit) {
      broken('gateway.key-within-limit', `hold of ${credits} for ${invocationId}: key ${key.keyId} spent ${spent} and holds ${held} in ${period} of a limit of ${limit}`, streams, [invocationId]);
    }
    this.witness.note(`checked.gateway-key-limit.${limit === undefined ? 'none' : key.kind}`);
    if (key.lastPeriod !== undefined && key.lastPeriod !== period) this.witness.note(`observed.gateway-key-period-rolled-over.${key.kind}`);
    this.rateHold(key, invocationId, data, streams);
    key.hold(invocationId, period, credits);
    this.teamHold(account, key, invocationId, credits, data, streams);
    return key.keyId;
  }

  /**
   * The key's lifetime and rate limits at the hold, from the log alone (docs/gateway.md "Keys", "Rate
   * limits"): not past its expiresAt, no more calls in flight than maxConcurrent, and its minute's calls
   * and tokens (worst case held, reported once settled) within requestsPerMinute and tokensPerMinute.
   */
  private rateHold(key: KeyAudit, invocationId: string, data: Record<string, unknown>, streams: string[]): void {
    const fail = (invariant: string, detail: string): never => broken(invariant, `hold for ${invocationId} by key ${key.keyId}: ${detail}`, streams, [invocationId]);
    const placedAt = data.placedAt as string;
    const { expiresAt, maxConcurrent, requestsPerMinute, tokensPerMinute } = key.settings;
    if (expiresAt !== undefined && Date.parse(placedAt) >= Date.parse(expiresAt)) fail('gateway.hold-before-expiry', `placed at ${placedAt}, the key expired at ${expiresAt}`);
    if (maxConcurrent !== undefined && key.open.size + 1 > maxConcurrent) fail('gateway.key-within-max-concurrent', `${key.open.size} calls in flight already, maxConcurrent ${maxConcurrent}`);
    const asked = data.gatewayKey as { tokens?: number; minute?: string };
    if (asked.tokens === undefined) return;
    const minute = key.minuteAt(placedAt);
    if (asked.minute !== minute) fail('gateway.hold-in-the-keys-minute', `counts in minute ${String(asked.minute)}; the key counts it in ${minute}`);
    const counted = key.minute?.minute === minute ? key.minute : { requests: 0, tokens: 0 };
    if (requestsPerMinute !== undefined && counted.requests + 1 > requestsPerMinute) fail('gateway.key-within-requests-per-minute', `${counted.requests} calls in ${minute} already, requestsPerMinute ${requestsPerMinute}`);
    if (tokensPerMinute !== undefined && counted.tokens + asked.tokens > tokensPerMinute) fail('gateway.key-within-tokens-per-minute', `${counted.tokens} tokens in ${minute} and ${asked.tokens} more, tokensPerMinute ${tokensPerMinute}`);
    const limited = [maxConcurrent, requestsPerMinute, tokensPerMinute, expiresAt].some((limit) => limit !== undefined);
    if (limited) this.witness.note('checked.gateway-key-rate-limits');
    key.holdTokens(invocationId, minute, asked.tokens);
  }

  /** The key's team, as the log has it now, counts the hold in its own period, within its limit (docs/gateway.md "Teams"). */
  private teamHold(account: AccountAudit, key: KeyAudit, invocationId: string, credits: number, data: Record<string, unknown>, streams: string[]): void {
    const asked = (data.gatewayKey as { team?: { teamId: string; period: string } }).team;
    const teamId = key.settings.teamId;
    const team = teamId === undefined ? undefined : account.teams.get(teamId);
    const live = team === undefined || team.revokedAtMs !== undefined ? undefined : team;
    if (asked?.teamId !== live?.keyId) broken('gateway.hold-names-its-team', `hold for ${invocationId} counts against team ${asked?.teamId ?? 'none'}; key ${key.keyId} is in ${live?.keyId ?? 'none'}`, streams, [invocationId]);
    if (live === undefined || asked === undefined) return;
    const period = live.periodAt(data.placedAt as string);
    if (asked.period !== period) broken('gateway.hold-in-the-teams-period', `hold for ${invocationId} counts in ${asked.period}; team ${live.keyId} (${live.kind}) counts it in ${period}`, streams, [invocationId]);
    const limit = live.settings.spendLimit?.credits;
    const { spent, held } = live.figures(period);
    if (limit !== undefined && spent + held + credits > limit) {
      broken('gateway.team-within-limit', `hold of ${credits} for ${invocationId}: team ${live.keyId} spent ${spent} and holds ${held} in ${period} of a limit of ${limit}`, streams, [invocationId]);
    }
    this.witness.note(`checked.gateway-team-limit.${limit === undefined ? 'none' : live.kind}`);
    live.hold(invocationId, period, credits);
  }

  private teamEvent(account: AccountAudit, event: RecordedEvent): void {
    const data = event.data as GatewayKeySettings & { teamId: string; createdAt?: string; changedAt?: string; deletedAt?: string };
    const team = account.teams.get(data.teamId);
    if (event.type === 'GatewayTeamCreated') {
      if (team !== undefined) broken('gateway.team-created-once', `team ${data.teamId} created twice`, [account.stream]);
      const created = new KeyAudit(data.teamId, account.organizationId);
      const { teamId: _id, createdAt, ...settings } = data;
      created.change(Date.parse(createdAt!), settings);
      account.teams.set(data.teamId, created);
      return;
    }
    if (team === undefined || team.revokedAtMs !== undefined) broken('gateway.team-changed-while-there', `${event.type} for team ${data.teamId}, which is unknown or deleted`, [account.stream]);
    if (event.type === 'GatewayTeamDeleted') {
      const named = [...account.keys.values()].filter((key) => key.revokedAtMs === undefined && key.settings.teamId === data.teamId);
      if (named.length > 0) broken('gateway.team-deleted-without-live-keys', `team ${data.teamId} deleted while live keys ${named.map((key) => key.keyId).join(', ')} name it`, [account.stream]);
      team.revokedAtMs = Date.parse(data.deletedAt!);
      return;
    }
    const { teamId: _id, changedAt, ...settings } = data;
    team.change(Date.parse(changedAt!), settings);
  }

  /** A budget alert (docs/gateway.md "Budget alerts"): reached by its own figures, at most once per threshold and period. */
  private budgetAlert(account: AccountAudit, event: RecordedEvent): void {
    const data = event.data as { budget: { kind: string; keyId?: string; teamId?: string }; percent: number; periodStart: string; limitCredits: number; spentCredits: number };
    const id = data.budget.kind === 'key' ? data.budget.keyId! : data.budget.teamId!;
    const name = `${id} ${data.periodStart} ${data.percent}`;
    if (account.alertsSent.has(name)) broken('gateway.budget-alert-once', `GatewayBudgetThresholdCrossed ${name} recorded twice`, [account.stream]);
    account.alertsSent.add(name);
    if (BigInt(data.spentCredits) * 100n < BigInt(data.percent) * BigInt(data.limitCredits) || data.spentCredits <= 0) {
      broken('gateway.budget-alert-reached', `GatewayBudgetThresholdCrossed ${name}: spent ${data.spentCredits} is short of ${data.percent} % of ${data.limitCredits}`, [account.stream]);
    }
    const level = (data.budget.kind === 'key' ? account.keys : account.teams).get(id);
    if (level !== undefined && level.kindChanges === 0 && level.figures(data.periodStart).spent !== data.spentCredits) {
      broken('gateway.budget-alert-figures', `GatewayBudgetThresholdCrossed ${name} says spent ${data.spentCredits}; the log charged ${level.figures(data.periodStart).spent}`, [account.stream]);
    }
    this.witness.note(`checked.gateway-budget-alert.${data.budget.kind}`);
  }

  private holdPlaced(account: AccountAudit, invocationId: string, credits: number, event: RecordedEvent): void {
    const streams = [account.stream, `invocation-${invocationId}`];
    if (account.holds.has(invocationId)) {
      broken('account.hold-placed-once', `a second hold for invocation ${invocationId} (the first at position ${account.holds.get(invocationId)!.placedAt})`, streams, [invocationId]);
    }
    // Admission (docs/lifecycle.md "What one run does", step 3), judged on the account as it was just
    // before this hold.
    if (!account.aiEnabled) broken('account.admission', `hold placed for ${invocationId} while AI is switched off`, streams, [invocationId]);
    if (account.available < credits) {
      broken('account.admission', `hold of ${credits} placed for ${invocationId} with only ${account.available} available`, streams, [invocationId]);
    }
    if (account.running >= account.maxRunning) {
      broken('account.running-within-max', `hold placed for ${invocationId} with ${account.running} running of maxRunning ${account.maxRunning}`, streams, [invocationId]);
    }
    const invocation = this.invocations.get(invocationId);
    if (invocation === undefined || invocation.organizationId !== account.organizationId) {
      broken('account.hold-names-its-invocation', `hold for ${invocationId}, which this organization never estimated`, streams, [invocationId]);
    }
    if (credits !== invocation.estimate) {
      broken('account.hold-is-the-estimate', `hold of ${credits} for an invocation estimated at ${invocation.estimate}`, streams, [invocationId]);
    }
    if (invocation.status === 'settled') this.holdsAfterSettlement += 1;
    this.witness.note('checked.hold-admission');
    const keyId = this.gatewayHold(account, invocation, credits, event.data as Record<string, unknown>, streams);
    account.open.set(invocationId, credits);
    account.holds.set(invocationId, { credits, placedAt: event.position, settled: undefined, ...(keyId === undefined ? {} : { keyId }) });
  }

  private holdSettled(account: AccountAudit, data: { invocationId: string; heldCredits: number; chargedCredits: number }, event: RecordedEvent): void {
    const { invocationId, heldCredits, chargedCredits } = data;
    const streams = [account.stream, `invocation-${invocationId}`];
    const hold = account.holds.get(invocationId);
    if (hold === undefined) broken('account.hold-settled-once', `hold of ${invocationId} settled but never placed`, streams, [invocationId]);
    if (hold.settled !== undefined) {
      broken(
        'account.hold-settled-once',
        `hold of ${invocationId} settled again at position ${event.position} (first at ${hold.settled.at}): charged ${hold.settled.charged}, then ${chargedCredits}`,
        streams,
        [invocationId],
      );
    }
    if (heldCredits !== hold.credits) {
      broken('account.release-what-was-held', `released ${heldCredits} of a hold of ${hold.credits} for ${invocationId}`, streams, [invocationId]);
    }
    const invocation = this.invocations.get(invocationId)!;
    if (invocation.settlement === undefined) {
      broken('account.charge-after-settlement', `hold of ${invocationId} charged while the invocation is ${invocation.status}`, streams, [invocationId]);
    }
    if (chargedCredits !== invocation.settlement.charge) {
      broken(
        'account.charge-is-the-settlement',
        `account charged ${chargedCredits} for ${invocationId}; the invocation settled at ${invocation.settlement.charge}`,
        streams,
        [invocationId],
      );
    }
    if (hold.keyId !== undefined) {
      // A gateway call is never charged more than it held (docs/gateway.md), so it never takes its key
      // past its limit nor its organization below what admission saw.
      if (chargedCredits > hold.credits) broken('gateway.charge-within-hold', `gateway call ${invocationId} charged ${chargedCredits} of a hold of ${hold.credits}`, streams, [invocationId]);
      account.keys.get(hold.keyId)?.settle(invocationId, chargedCredits);
      account.keys.get(hold.keyId)?.settleTokens(invocationId, (data as { reportedTokens?: number }).reportedTokens);
      // Only the team the hold was counted against has it open; the others leave it alone.
      for (const team of account.teams.values()) team.settle(invocationId, chargedCredits);
      this.witness.note('checked.gateway-charge-within-hold');
    }
    hold.settled = { charged: chargedCredits, at: event.position };
    this.witness.note('checked.hold-settlement');
    account.open.delete(invocationId);
    account.charged += chargedCredits;
  }

  /** `available` is derived; the ledger's fold and this one must agree on every figure. */
  private compareAccount(account: AccountAudit): void {
    const ledger = balanceOf(account.ledger);
    const mine = {
      granted: account.granted,
      adjustments: account.adjustments,
      held: account.held,
      charged: account.charged,
      available: account.available,
      running: account.running,
    };
    if (ledger.available !== ledger.granted + ledger.adjustments - ledger.charged - ledger.held) {
      broken('account.available-derived', `ledger's balance ${JSON.stringify(ledger)} breaks granted + adjustments − charged − held`, [account.stream]);
    }
    for (const key of Object.keys(mine) as (keyof typeof mine)[]) {
      if (ledger[key] !== mine[key]) {
        broken('account.ledger-fold-agrees', `${key}: the ledger's fold says ${ledger[key]}, the audit's ${mine[key]}`, [account.stream]);
      }
    }
    if (account.ledger.maxRunning !== account.maxRunning || account.ledger.aiEnabled !== account.aiEnabled) {
      broken('account.ledger-fold-agrees', 'settings differ between the ledger fold and the audit', [account.stream]);
    }
  }

  private foldInvocation(invocationId: string, event: RecordedEvent): void {
    const stream = event.streamName;
    let invocation = this.invocations.get(invocationId);
    if (invocation === undefined) {
      invocation = new InvocationAudit(invocationId, stream);
      this.invocations.set(invocationId, invocation);
    }
    const streams = (): string[] => [stream, `account-${invocation!.organizationId}`];
    const fail = (invariant: string, detail: string): never => broken(invariant, detail, streams(), [invocationId]);
    const before = invocation.status;
    if (before === 'settled' || before === 'refused') fail('lifecycle.final-is-final', `${event.type} after ${before}`);
    this.invocationEvent(invocation, event, before, fail);
    invocation.ledger = invocationDecider.evolve(invocation.ledger, { type: event.type, data: event.data } as InvocationEvent);
    if (invocation.ledger.status !== invocation.status) {
      fail('lifecycle.ledger-fold-agrees', `the ledger's fold says ${invocation.ledger.status}, the audit's ${invocation.status}`);
    }
    if ((invocation.ledger.settlement?.chargeCredits ?? 0) !== (invocation.settlement?.charge ?? 0)) {
      fail('lifecycle.ledger-fold-agrees', 'the settled charge differs between the ledger fold and the audit');
    }
  }

  /** One event of an invocation's stream, checked against the state it arrives in (`before`) and folded. */
  private invocationEvent(invocation: InvocationAudit, event: RecordedEvent, before: Status, fail: (invariant: string, detail: string) => never): void {
    const expectFrom = (...states: Status[]): void => {
      if (!states.includes(before)) fail('lifecycle.known-transitions', `${event.type} in state ${before}`);
    };
    const data = event.data as Record<string, unknown>;
    switch (event.type) {
      case 'InvocationEstimated':
        expectFrom('none');
        this.estimated(invocation, data, fail);
        break;
      case 'InvocationRefused':
        expectFrom('estimated');
        this.refused(invocation, data, fail);
        break;
      case 'InvocationReserved':
        expectFrom('estimated');
        this.reserved(invocation, data, fail);
        break;
      case 'InvocationDispatched':
        expectFrom('reserved');
        invocation.status = 'dispatched';
        break;
      case 'AttemptRecorded':
        expectFrom('dispatched');
        this.attempt(invocation, data, fail);
        break;
      case 'InvocationCompleted':
      case 'InvocationFailed':
        expectFrom('dispatched');
        this.result(invocation, event.type === 'InvocationCompleted' ? 'completed' : 'failed', data, fail);
        break;
      case 'InvocationPending':
        expectFrom('completed');
        if (invocation.result?.usageReported !== false || invocation.result.attemptCount === 0) {
          fail('lifecycle.pending-only-unmeasured', 'pending although its attempts reported usage (or none was made)');
        }
        invocation.status = 'pending';
        break;
      case 'InvocationSettled':
        this.settled(invocation, data, event.position, fail);
        break;
      case 'InvocationCancellationRequested':
        // Not a transition; only while the conversation has no result yet.
        expectFrom('estimated', 'reserved', 'dispatched');
        break;
      default:
        fail('lifecycle.known-events', `unexpected ${event.type}`);
    }
  }

  private refused(invocation: InvocationAudit, data: Record<string, unknown>, fail: (invariant: string, detail: string) => never): void {
    const access = (ACCESS_REFUSAL_REASONS as readonly unknown[]).includes(data.reason);
    if (data.transition !== (access ? 1 : 2)) fail('lifecycle.known-transitions', `refusal ${String(data.reason)} recorded as transition ${String(data.transition)}`);
    if (invocation.gateway !== undefined) this.gatewayRefusal(invocation, data, fail);
    invocation.status = 'refused';
  }

  private reserved(invocation: InvocationAudit, data: Record<string, unknown>, fail: (invariant: string, detail: string) => never): void {
    if (data.creditHold !== invocation.estimate) fail('lifecycle.reserve-the-estimate', `reserved ${String(data.creditHold)} of an estimate of ${invocation.estimate}`);
    const held = this.accounts.get(invocation.organizationId)?.open.get(invocation.invocationId);
    if (held !== invocation.estimate) fail('lifecycle.reserved-holds', `reserved, but the account holds ${held ?? 'nothing'} for it`);
    invocation.reservedCredits = invocation.estimate;
    invocation.status = 'reserved';
  }

  private estimated(invocation: InvocationAudit, data: Record<string, unknown>, fail: (invariant: string, detail: string) => never): void {
    invocation.organizationId = data.organizationId as string;
    invocation.operationId = data.operationId as string;
    invocation.publication = (data.publication as Publication | null) ?? null;
    invocation.estimate = invocation.publication?.creditHold ?? 0;
    invocation.status = 'estimated';
    const publication = invocation.publication;
    if (invocation.operationId === GATEWAY_OPERATION_ID) return this.gatewayEstimated(invocation, data, fail);
    if (publication === null) return;
    // The publication in force is copied whole; a later one never changes it (ATS-PFM-LLM-002-12).
    const published = this.operations.get(invocation.operationId)?.versions.get(publication.version);
    if (published === undefined || JSON.stringify(canonical(published)) !== JSON.stringify(canonical(publication))) {
      fail('catalog.publication-copied-whole', `the invocation's publication v${publication.version} is not the one published`);
    }
  }

  /** A gateway call copies the rate card version in force, whole, as a one-attempt publication, for one of its organization's live keys. */
  private gatewayEstimated(invocation: InvocationAudit, data: Record<string, unknown>, fail: (invariant: string, detail: string) => never): void {
    const gateway = data.gateway as { keyId: string; keyName: string; model: string; rateCardVersion: number } | undefined;
    const publication = invocation.publication;
    if (gateway === undefined || publication === null) return fail('gateway.estimate-names-its-call', 'a gateway call estimated without its key, model and rate card version');
    const account = this.accounts.get(invocation.organizationId);
    const key = account?.keys.get(gateway.keyId);
    if (key === undefined) fail('gateway.estimate-names-its-call', `gateway call for key ${gateway.keyId}, which ${invocation.organizationId} never issued`);
    invocation.gateway = { keyId: gateway.keyId, model: gateway.model, rateCardVersion: gateway.rateCardVersion, momentIndex: account!.moments.length };
    const versions = this.rateCard.get(gateway.model) ?? [];
    const card = versions[gateway.rateCardVersion - 1];
    const estimatedAtMs = Date.parse(data.estimatedAt as string);
    if (card === undefined || !cardVersionAcceptable(versions, gateway.rateCardVersion, estimatedAtMs)) {
      fail('gateway.rate-card-in-force', `gateway call priced at ${gateway.model} v${gateway.rateCardVersion} at ${String(data.estimatedAt)}; the card holds ${versions.length} version(s), the next priced at ${versions[gateway.rateCardVersion]?.pricedAt ?? 'never'}`);
    }
    if (!card.enabled) fail('gateway.rate-card-in-force', `gateway call admitted at ${gateway.model} v${card.version}, which is disabled`);
    const expected = expectedGatewayPublication(gateway.model, card, publication.creditHold);
    if (JSON.stringify(canonical(expected)) !== JSON.stringify(canonical(publication))) {
      fail('gateway.rate-card-copied-whole', `the call's publication ${JSON.stringify(publication)} is not ${gateway.model} v${card.version} of the rate card`);
    }
    this.witness.note('checked.gateway-estimate');
  }

  /** A recorded refusal of a gateway call: the account said so at some moment between its estimate and now (refusalWindowStart). */
  private gatewayRefusal(invocation: InvocationAudit, data: Record<string, unknown>, fail: (invariant: string, detail: string) => never): void {
    const account = this.accounts.get(invocation.organizationId);
    const refusal = { reason: data.reason as string, figures: data.figures as Record<string, unknown> };
    const moments = account?.moments ?? [];
    const from = refusalWindowStart(invocation.gateway!.momentIndex, this.witness.accountCommittedAtEstimate?.(invocation.invocationId), this.options.positionsInCommitOrder !== false);
    for (let index = from; index < moments.length; index++) {
      if (refusalExplainedBy(refusal, invocation.estimate, moments[index]!)) {
        this.witness.note(`checked.gateway-refusal.${refusal.reason}`);
        return;
      }
    }
    fail('gateway.refusal-explained', `refused ${refusal.reason} ${JSON.stringify(refusal.figures)}, which the account never said between the call's estimate and its refusal`);
  }

  private attempt(invocation: InvocationAudit, data: Record<string, unknown>, fail: (invariant: string, detail: string) => never): void {
    const publication = invocation.publication!;
    const { limits } = publication;
    const turn = data.turn as number;
    const retry = data.retry as number;
    const last = invocation.attempts[invocation.attempts.length - 1];
    const inOrder = last === undefined ? turn === 1 && retry === 0 : (turn === last.turn && retry === last.retry + 1) || (turn === last.turn + 1 && retry === 0);
    if (!inOrder) fail('attempts.in-order', `attempt turn ${turn} retry ${retry} after ${last === undefined ? 'none' : `turn ${last.turn} retry ${last.retry}`}`);
    if (turn > limits.maxTurns) fail('conversation.turns-within-limit', `attempt in turn ${turn} of at most ${limits.maxTurns}`);
    if (retry >= limits.maxAttemptsPerTurn) fail('conversation.attempts-within-limit', `retry ${retry} with maxAttemptsPerTurn ${limits.maxAttemptsPerTurn}`);
    if (invocation.attempts.length >= MAX_RETAINED_ATTEMPTS) fail('attempts.retained-bound', `more than ${MAX_RETAINED_ATTEMPTS} attempt records`);
    const usage = data.usage as Usage | undefined;
    const price =
      invocation.gateway === undefined || usage === undefined ? priceOf(usage, publication.prices) : independentGatewayPrice(usage, publication.prices as GatewayPrices);
    if (data.priceCredits !== price) fail('attempts.priced-at-rate-version', `attempt priced ${String(data.priceCredits)}; its usage costs ${price} at v${publication.version}`);
    invocation.attempts.push({ turn, retry, ok: data.classification === 'ok', priceCredits: price });
    this.witness.note('checked.attempt-price');
    if (invocation.gateway !== undefined) this.gatewayAttempt(invocation, data, fail);
    invocation.recordedSpend += price;
    invocation.recordedUsage ||= usage !== undefined;
  }

  /** A gateway attempt records what its upstream answered: the same usage, or the malformed field and no usage. */
  private gatewayAttempt(invocation: InvocationAudit, data: Record<string, unknown>, fail: (invariant: string, detail: string) => never): void {
    const answer = this.upstreamAnswers.get(invocation.invocationId);
    this.upstreamAnswers.delete(invocation.invocationId);
    if (answer === undefined) return;
    const report = judgeUpstreamReport(answer, invocation.publication!.prices as GatewayPrices);
    invocation.upstream = report;
    if (report.kind === 'malformed' && (data.malformedUsage === undefined || data.usage !== undefined)) {
      fail('gateway.malformed-usage-recorded', `upstream reported malformed usage; the attempt records ${data.usage === undefined ? 'no field' : 'usage'}`);
    }
    if (report.kind === 'usage' && JSON.stringify(canonical(data.usage)) !== JSON.stringify(canonical(report.usage))) {
      fail('gateway.attempt-records-upstream-usage', `upstream reported ${JSON.stringify(report.usage)}; the attempt records ${JSON.stringify(data.usage)}`);
    }
    this.witness.note(`checked.gateway-upstream-report.${report.kind}`);
  }

  private result(
    invocation: InvocationAudit,
    kind: 'completed' | 'failed',
    data: Record<string, unknown>,
    fail: (invariant: string, detail: string) => never,
  ): void {
    const { limits, creditHold } = invocation.publication!;
    const result: ResultFact = {
      kind,
      outcome: kind === 'failed' ? 'failed' : (data.outcome as string),
      turnsUsed: data.turnsUsed as number,
      toolCallsUsed: data.toolCallsUsed as number,
      spentCredits: data.spentCredits as number,
      attemptCount: data.attemptCount as number,
      usageReported: data.usageReported as boolean,
    };
    if (result.turnsUsed > limits.maxTurns) fail('conversation.turns-within-limit', `${result.turnsUsed} turns of at most ${limits.maxTurns}`);
    if (result.toolCallsUsed > limits.maxToolCalls) fail('conversation.tool-calls-within-limit', `${result.toolCallsUsed} tool calls of at most ${limits.maxToolCalls}`);
    const lastTurn = invocation.attempts[invocation.attempts.length - 1]?.turn ?? 0;
    if (result.turnsUsed < lastTurn) fail('conversation.turns-counted', `${result.turnsUsed} turns reported; attempts reached turn ${lastTurn}`);
    if (result.attemptCount <= MAX_RETAINED_ATTEMPTS) {
      if (result.attemptCount !== invocation.attempts.length) fail('attempts.all-recorded', `${result.attemptCount} attempts reported, ${invocation.attempts.length} recorded`);
      if (result.spentCredits !== invocation.recordedSpend) fail('attempts.spend-is-their-sum', `spent ${result.spentCredits}; the attempts cost ${invocation.recordedSpend}`);
      if (result.usageReported !== invocation.recordedUsage) fail('attempts.usage-flag', 'usageReported differs from the attempts');
    } else if (result.spentCredits < invocation.recordedSpend) {
      fail('attempts.spend-is-their-sum', `spent ${result.spentCredits} is less than the recorded attempts' ${invocation.recordedSpend}`);
    }
    if (result.outcome === 'credit_limit' && result.spentCredits <= creditHold) {
      fail('conversation.credit-guard-strict', `credit_limit with ${result.spentCredits} spent of a hold of ${creditHold}`);
    }
    if (result.attemptCount === invocation.attempts.length) {
      const lastTurn = invocation.attempts[invocation.attempts.length - 1]?.turn;
      const spentBeforeLastTurn = invocation.attempts.filter((attempt) => attempt.turn !== lastTurn).reduce((sum, attempt) => sum + attempt.priceCredits, 0);
      if (spentBeforeLastTurn > creditHold) {
        // docs/rules.md step 8 guards every turn that continues (tool, reminder and pause_turn turns alike).
        fail(
          'conversation.spend-over-hold-only-by-last-turn',
          `${result.outcome} after ${result.turnsUsed} turns: ${spentBeforeLastTurn} credits were spent before its last turn, over a hold of ${creditHold}`,
        );
      }
    }
    this.conversationFacts(invocation, result, fail);
    invocation.result = result;
    invocation.status = kind;
  }

  /** Checks against what the model and tools really did (kept by the simulator, never in the log). */
  private conversationFacts(invocation: InvocationAudit, result: ResultFact, fail: (invariant: string, detail: string) => never): void {
    const episode = this.witness.episodeOf(invocation.invocationId);
    if (episode === undefined) return;
    const { limits, creditHold } = invocation.publication!;
    this.witness.note('checked.conversation-bounds');
    if (result.attemptCount > MAX_RETAINED_ATTEMPTS) this.witness.note('observed.attempts-truncated');
    if (episode.handlerRuns > result.toolCallsUsed) {
      fail('conversation.handlers-within-tool-calls', `${episode.handlerRuns} handlers ran for ${result.toolCallsUsed} answered tool calls`);
    }
    if (episode.modelCalls.length > limits.maxTurns * limits.maxAttemptsPerTurn) {
      fail('conversation.requests-within-limit', `${episode.modelCalls.length} model requests; at most ${limits.maxTurns} × ${limits.maxAttemptsPerTurn}`);
    }
    // Credit guard (docs/rules.md step 8): a tool-requesting turn that the loop went on from had spent
    // at most the hold.
    if (episode.modelCalls.length !== invocation.attempts.length || result.attemptCount !== invocation.attempts.length) return;
    let spent = 0;
    for (let index = 0; index < invocation.attempts.length; index++) {
      const attempt = invocation.attempts[index]!;
      spent += attempt.priceCredits;
      const endsTurn = invocation.attempts[index + 1]?.turn !== attempt.turn;
      const lastTurn = index === invocation.attempts.length - 1;
      if (!endsTurn || lastTurn || !attempt.ok) continue;
      if (!episode.modelCalls[index]!.toolRequesting) continue;
      this.witness.note('checked.credit-guard-turn');
      if (spent > creditHold) {
        fail(
          'conversation.spend-over-hold-only-by-crossing-turn',
          `turn ${attempt.turn} asked for tools with ${spent} spent of a hold of ${creditHold}, and the conversation went on to turn ${attempt.turn + 1}`,
        );
      }
    }
  }

  private gatewaySettled(invocation: InvocationAudit, transition: number, charge: number, overrun: number, fail: (invariant: string, detail: string) => never): void {
    const wrong = gatewaySettledChecks(invocation, transition, charge, overrun);
    if (wrong !== undefined) fail(wrong.invariant, wrong.detail);
    if (overrun > 0) this.witness.note('observed.gateway-overrun-recorded');
    if (invocation.upstream !== undefined) this.witness.note(`checked.gateway-charge-against-upstream.${invocation.upstream.kind}`);
  }

  private settled(
    invocation: InvocationAudit,
    data: Record<string, unknown>,
    position: bigint,
    fail: (invariant: string, detail: string) => never,
  ): void {
    const transition = data.transition as keyof typeof TRANSITIONS;
    const row = TRANSITIONS[transition];
    if (row === undefined || row.to !== 'settled' || row.from !== invocation.status) {
      fail('lifecycle.known-transitions', `settled by transition ${String(transition)} from ${invocation.status}`);
    }
    const by = data.settledBy as string;
    const staleOnly = transition === 12 || transition === 13 || transition === 14;
    if (staleOnly && by !== 'sweep' && by !== 'recovery') fail('lifecycle.settled-by', `transition ${transition} settled by ${by}, not the sweep or recovery`);
    if (transition === 11 && by !== 'exception') fail('lifecycle.settled-by', `transition 11 settled by ${by}`);
    if (transition === 11 && !this.witness.disturbed(invocation.invocationId)) {
      fail('lifecycle.exception-needs-a-fault', 'settled by the exception path (transition 11) although no fault reached its appends');
    }
    const expected = invocation.gateway === undefined ? expectedCharge(invocation, transition) : expectedGatewayCharge(invocation, transition);
    const charge = data.chargeCredits as number;
    if (charge !== expected.credits) {
      fail('settlement.charge-per-spec', `transition ${transition} charged ${charge}; docs/lifecycle.md says ${expected.credits} (${expected.rule})`);
    }
    if (invocation.gateway !== undefined) this.gatewaySettled(invocation, transition, charge, (data.overrunCredits as number | undefined) ?? 0, fail);
    const held = invocation.reservedCredits ?? 0;
    if (data.heldCredits !== held) {
      fail('settlement.releases-the-hold', `settlement releases ${String(data.heldCredits)} of ${held} held`);
    }
    const ground = by === 'sweep' || by === 'recovery' ? this.leases.checkStaleSettlement(invocation.ledger, data, fail) : undefined;
    if (ground !== undefined) this.witness.note(`checked.recovery-of-an-owned-invocation.${ground}`);
    invocation.settlement = { transition, charge, by, at: position, settledAtMs: Date.parse(data.settledAt as string), ground };
    if (invocation.gateway !== undefined) this.witness.note(`observed.gateway-call-settled.transition-${transition}${staleOnly ? `.by-${by}` : ''}${expected.credits < invocation.recordedSpend ? '.capped-at-its-hold' : ''}`);
    this.witness.note(`checked.settlement-charge.transition-${transition}`);
    invocation.status = 'settled';
  }
}

/**
 * A gateway call's settlement (docs/gateway.md "Settlement"): what it cost beyond its hold is on record
 * as its overrun, and, when its upstream's report was recorded, the charge is at least that report's
 * price less the overrun and at most the hold (malformed usage: the hold).
 */
function gatewaySettledChecks(invocation: InvocationAudit, transition: number, charge: number, overrun: number): { invariant: string; detail: string } | undefined {
  const priced = transition === 8 || transition === 10;
  const expectedOverrun = priced ? Math.max(0, invocation.recordedSpend - invocation.estimate) : 0;
  if (overrun !== expectedOverrun) {
    return { invariant: 'gateway.overrun-on-record', detail: `transition ${transition} charged ${charge} with an overrun of ${overrun}; its attempts cost ${invocation.recordedSpend} of a ${invocation.estimate}-credit hold` };
  }
  const wrong = invocation.upstream === undefined ? undefined : settlementAgainstReport(invocation.upstream, { transition, charge, overrun }, invocation.estimate);
  return wrong === undefined ? undefined : { invariant: 'gateway.charge-within-price-and-hold', detail: wrong };
}

/** docs/lifecycle.md: the charge of each settlement path. */
function expectedCharge(invocation: InvocationAudit, transition: number): { credits: number; rule: string } {
  switch (transition) {
    case 8:
      return { credits: invocation.result?.spentCredits ?? Number.NaN, rule: 'sum of attempt prices' };
    case 10:
      return { credits: invocation.result?.spentCredits ?? Number.NaN, rule: 'sum of attempt prices, failed attempts included' };
    case 9:
    case 11:
    case 14:
      return { credits: invocation.estimate, rule: 'the estimate' };
    default:
      return { credits: 0, rule: 'nothing was sent' };
  }
}

/** A gateway call's charge: as an operation's, but never more than its hold (docs/gateway.md "Settlement"). */
function expectedGatewayCharge(invocation: InvocationAudit, transition: number): { credits: number; rule: string } {
  const charge = expectedCharge(invocation, transition);
  return charge.credits > invocation.estimate ? { credits: invocation.estimate, rule: `${charge.rule}, at most the hold` } : charge;
}

/**
 * The attempt price, computed here on its own (docs/rules.md, attempt prices): ceil(Σ count × rate ×
 * (1,000,000 / units per rate) / 1,000,000), exact, long-context rates past the threshold. It walks
 * the same price-kind table as the pricing but shares none of its code, so a mistake in one shows.
 */
function priceOf(usage: Usage | undefined, prices: Prices): number {
  if (usage === undefined) return 0;
  const counts = usage as unknown as Record<string, number>;
  const stated = prices as unknown as Record<string, number | undefined>;
  const input = PRICE_KINDS.filter((kind) => kind.input).reduce((sum, kind) => sum + BigInt(counts[kind.usage]!), 0n);
  const long = prices.longContext !== undefined && input > BigInt(prices.longContext.thresholdInputTokens) ? prices.longContext : undefined;
  const rateOf = (kind: (typeof PRICE_KINDS)[number]): number => {
    if (long !== undefined && kind.replaceable) return (long as unknown as Record<string, number>)[kind.rate]!;
    const own = stated[kind.rate];
    if (own !== undefined) return own;
    if (kind.fallback === 'required') return Number.NaN;
    return 'credits' in kind.fallback ? 0 : stated[kind.fallback.sameAs]!;
  };
  let millionths = 0n;
  for (const kind of PRICE_KINDS) millionths += BigInt(counts[kind.usage]!) * BigInt(rateOf(kind)) * (MILLION / BigInt(kind.unitsPerRate));
  return Number(millionths / MILLION + (millionths % MILLION === 0n ? 0n : 1n));
}

/** A JSON value with object keys sorted, to compare documents whatever their key order. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value as Record<string, unknown>)
      .sort()
      .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
  );
}
