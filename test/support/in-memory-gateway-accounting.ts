/**
 * A small, real accounting side for the gateway's HTTP tests, behind the same port as the ledger's
 * (GATEWAY_ACCOUNTING): keys with model allowlists, a rate card, each organization's credits and
 * running calls, a hold per admitted call that settlement releases once and charges from the usage
 * reported. It keeps everything in memory and records what it was asked, so a test can say what the
 * HTTP side told the accounting: the facts it read, the outcome it settled with, and how often.
 */
import type {
  GatewayAccounting,
  GatewayAdmission,
  GatewayCallOutcome,
  GatewayCallRequest,
  GatewayModelInfo,
  GatewayRefusal,
  GatewayRejection,
} from '../../src/gateway/gateway-call.port';
import type { Usage } from '../../src/runtime/provider.port';

export interface FakeGatewayKey {
  readonly key: string;
  readonly keyId: string;
  readonly organizationId: string;
  /** The models it may use; all when absent. */
  readonly models?: readonly string[];
}

export interface FakeRateCardModel {
  readonly id: string;
  readonly attemptTimeoutMs: number;
  readonly maxOutputTokens: number;
}

/** Credits a call costs per token, and what its hold allows per body byte and per output token. */
export const INPUT_CREDITS_PER_TOKEN = 1;
export const OUTPUT_CREDITS_PER_TOKEN = 5;

interface Account {
  available: number;
  held: number;
  charged: number;
  running: number;
  readonly maxRunning: number;
}

export interface Settlement {
  readonly admission: Extract<GatewayAdmission, { admitted: true }>;
  readonly outcome: GatewayCallOutcome;
  readonly charge: number;
}

export class InMemoryGatewayAccounting implements GatewayAccounting {
  /** Every request admit() was asked about, in order (facts only: no key in the clear is kept beyond the call). */
  readonly admitted: GatewayCallRequest['facts'][] = [];
  readonly refusals: GatewayRefusal[] = [];
  readonly settlements: Settlement[] = [];
  /** What the HTTP side reported as refused before a hold (noteRejection). */
  readonly rejections: GatewayRejection[] = [];
  private readonly keys: Map<string, FakeGatewayKey>;
  private readonly models_: readonly FakeRateCardModel[];
  private readonly accounts = new Map<string, Account>();
  private readonly holds = new Map<string, { readonly organizationId: string; readonly hold: number; settled: boolean }>();
  private readonly settlementWaiters: Array<{ readonly count: number; readonly resolve: () => void }> = [];
  private sequence = 0;
  private readonly settling: (() => Promise<void>) | undefined;

  constructor(options: {
    readonly keys: readonly FakeGatewayKey[];
    readonly models: readonly FakeRateCardModel[];
    readonly credits: Readonly<Record<string, number>>;
    readonly maxRunning?: number;
    /** Awaited at the start of each settlement: a stand-in for the store's commit, which takes turns of the event loop. */
    readonly settling?: () => Promise<void>;
  }) {
    this.settling = options.settling;
    this.keys = new Map(options.keys.map((key) => [key.key, key]));
    this.models_ = [...options.models].sort((a, b) => a.id.localeCompare(b.id));
    for (const [organizationId, credits] of Object.entries(options.credits)) {
      this.accounts.set(organizationId, { available: credits, held: 0, charged: 0, running: 0, maxRunning: options.maxRunning ?? 100 });
    }
  }

  /** The worst case this fake holds for: every body byte a token, every output token at its rate. */
  static holdOf(facts: GatewayCallRequest['facts']): number {
    return facts.bodyBytes * INPUT_CREDITS_PER_TOKEN + facts.maxTokens * OUTPUT_CREDITS_PER_TOKEN;
  }

  static priceOf(usage: Usage): number {
    return (usage.inputTokens + usage.cacheWriteTokens + usage.cacheWrite1hTokens + usage.cacheReadTokens) * INPUT_CREDITS_PER_TOKEN + usage.outputTokens * OUTPUT_CREDITS_PER_TOKEN;
  }

  account(organizationId: string): Readonly<Account> {
    return { ...this.accounts.get(organizationId)! };
  }

  async authenticate(presentedKey: string): Promise<{ readonly ok: true; readonly organizationId: string; readonly keyId: string } | GatewayRefusal> {
    const key = this.keys.get(presentedKey);
    if (key === undefined) return { admitted: false, status: 401, errorType: 'authentication_error', message: 'invalid x-api-key' };
    return { ok: true, organizationId: key.organizationId, keyId: key.keyId };
  }

  async models(presentedKey: string): Promise<{ readonly ok: true; readonly models: readonly GatewayModelInfo[] } | GatewayRefusal> {
    const known = await this.authenticate(presentedKey);
    if (!('ok' in known)) return known;
    const key = this.keys.get(presentedKey)!;
    const models = this.models_.filter((model) => key.models === undefined || key.models.includes(model.id));
    return { ok: true, models: models.map((model) => ({ type: 'model', id: model.id, display_name: `Model ${model.id}`, created_at: '2026-01-01T00:00:00Z' })) };
  }

  noteRejection(rejection: GatewayRejection): void {
    this.rejections.push(rejection);
  }

  async admit(request: GatewayCallRequest): Promise<GatewayAdmission> {
    const known = await this.authenticate(request.presentedKey);
    if (!('ok' in known)) return this.refuse(known);
    const key = this.keys.get(request.presentedKey)!;
    const { facts } = request;
    if (key.models !== undefined && !key.models.includes(facts.model)) {
      return this.refuse({ admitted: false, status: 403, errorType: 'permission_error', message: `this key may not use ${facts.model}` });
    }
    const model = this.models_.find((candidate) => candidate.id === facts.model);
    if (model === undefined) return this.refuse({ admitted: false, status: 404, errorType: 'not_found_error', message: `model: ${facts.model}` });
    if (facts.maxTokens > model.maxOutputTokens) {
      return this.refuse({ admitted: false, status: 400, errorType: 'invalid_request_error', message: `max_tokens: at most ${model.maxOutputTokens}` });
    }
    const account = this.accounts.get(key.organizationId)!;
    const invocationId = `gw-call-${++this.sequence}`;
    const hold = InMemoryGatewayAccounting.holdOf(facts);
    if (account.available < hold) {
      return this.refuse({ admitted: false, status: 402, errorType: 'billing_error', message: `hold ${hold} exceeds available ${account.available}`, invocationId });
    }
    if (account.running >= account.maxRunning) {
      return this.refuse({ admitted: false, status: 429, errorType: 'rate_limit_error', message: 'too many calls running', invocationId, retryAfterSeconds: 1 });
    }
    account.available -= hold;
    account.held += hold;
    account.running += 1;
    this.admitted.push(facts);
    this.holds.set(invocationId, { organizationId: key.organizationId, hold, settled: false });
    return { admitted: true, invocationId, organizationId: key.organizationId, keyId: key.keyId, holdCredits: hold, attemptTimeoutMs: model.attemptTimeoutMs };
  }

  async settle(admission: Extract<GatewayAdmission, { admitted: true }>, outcome: GatewayCallOutcome): Promise<void> {
    if (this.settling !== undefined) await this.settling();
    const hold = this.holds.get(admission.invocationId);
    if (hold === undefined) throw new Error(`settled a call never admitted: ${admission.invocationId}`);
    if (hold.settled) throw new Error(`settled twice: ${admission.invocationId}`);
    hold.settled = true;
    // Measured: what the usage prices, never above the hold; unmeasured: the hold.
    const charge = outcome.usage === undefined ? hold.hold : Math.min(hold.hold, InMemoryGatewayAccounting.priceOf(outcome.usage));
    const account = this.accounts.get(hold.organizationId)!;
    account.held -= hold.hold;
    account.available += hold.hold - charge;
    account.charged += charge;
    account.running -= 1;
    this.settlements.push({ admission, outcome, charge });
    for (const waiter of this.settlementWaiters.filter((candidate) => this.settlements.length >= candidate.count)) {
      this.settlementWaiters.splice(this.settlementWaiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  /** Resolves once `count` calls have been settled. */
  waitForSettlements(count: number): Promise<readonly Settlement[]> {
    if (this.settlements.length >= count) return Promise.resolve(this.settlements);
    return new Promise((resolve) => this.settlementWaiters.push({ count, resolve: () => resolve(this.settlements) }));
  }

  /** Admitted calls not yet settled. */
  get unsettled(): number {
    return [...this.holds.values()].filter((hold) => !hold.settled).length;
  }

  private refuse(refusal: GatewayRefusal): GatewayRefusal {
    this.refusals.push(refusal);
    return refusal;
  }
}
