/**
 * Drives the gateway's accounting beside the operations (docs/gateway.md): the calls go through the
 * same port the `/anthropic` routes use (GATEWAY_ACCOUNTING, or the second process's own GatewayCalls),
 * admitted, answered by the simulated upstream (gateway-upstream.ts) on the virtual clock, and settled
 * — unless the process dies first, when recovery or a sweep settles the call at its hold. Keys are
 * issued in the account stream, changed and revoked, and the rate card re-priced, while calls run.
 *
 * Each answer is judged here with what only the simulator knows (the body's facts, the key presented):
 * a refusal the log does not record must be what the key, the rate card or the body explain, and an
 * admitted call must hold exactly the worst case of its facts at the version it copied.
 */
import { createHash } from 'node:crypto';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { ChangeOrganizationSettingsCommand, GrantCreditsCommand } from '../accounts/account-commands';
import type { GatewayAdmission, GatewayCallOutcome } from '../gateway/gateway-call.port';
import { gatewayKeyHash, GATEWAY_KEY_PREFIX } from '../gateway/gateway-keys.codec';
import { RATE_CARD_STREAM } from '../gateway/rate-card';
import { MAX_GATEWAY_HOLD_CREDITS } from '../gateway/worst-case-hold';
import { independentHold, independentWorstCaseTokens } from './gateway-audit';
import { UNPRICED_GATEWAY_MODEL, type GatewayAction, type GatewayCallPlan, type GatewayKeyPlan } from './gateway-scenario';
import { upstreamOutcome } from './gateway-upstream';
import type { LedgerNode } from './ledger-node';
import type { LogAudit, Violation } from './log-audit';
import type { ScenarioPlan } from './scenario';
import type { SimulationClock } from './simulation-clock';
import type { Tally } from './tally';

/** What the driver needs of the simulation: its command path, its clock and audit, and a way to kill the process. */
export interface GatewayHost {
  readonly clock: SimulationClock;
  readonly tally: Tally;
  readonly audit: LogAudit;
  act<T>(label: string, work: (node: LedgerNode) => Promise<T>, context?: () => { readonly invocationId?: string; readonly explains?: (errorName: string) => boolean }): Promise<T | undefined>;
  /** Kills `node` now (a crash mid-call), unless it is dead already; a new process starts on the log. */
  crash(node: LedgerNode): void;
  fail(violation: Violation): void;
}

type Launch = (atMs: number, label: string, work: () => Promise<unknown>) => void;

/** Text a caller may present that is no gateway key at all. */
const MALFORMED_KEY = 'sk-ant-api03-not-a-gateway-key';

export class GatewayDriver {
  constructor(
    private readonly host: GatewayHost,
    private readonly plan: ScenarioPlan,
  ) {}

  /** The key text of a planned key: seeded, so the log's key hashes replay with the seed. */
  secretOf(key: GatewayKeyPlan, variant = ''): string {
    const secret = createHash('sha256').update(`simulated gateway key ${this.plan.seed} ${variant}${key.keyId}`).digest('base64url');
    return `${GATEWAY_KEY_PREFIX}${Buffer.from(key.organizationId, 'utf8').toString('base64url')}.${secret}`;
  }

  /** The rate card, the gateway-only organizations and every key, before any fault is on. */
  async setup(): Promise<void> {
    for (const { model, card } of this.plan.gateway.models) {
      await this.host.act(`price ${model}`, (node) => node.gatewayAdmin.priceModel(model, { ...card }));
    }
    for (const organization of this.plan.gateway.organizations) {
      await this.host.act('settings', (node) => node.commandBus.execute(new ChangeOrganizationSettingsCommand(organization.id, { maxRunning: organization.maxRunning })));
      await this.host.act('grant', (node) => node.commandBus.execute(new GrantCreditsCommand(organization.id, organization.initialCredits, 'initial credits', `${organization.id}-initial`)));
    }
    for (const team of this.plan.gateway.teams) {
      await this.host.act(`create ${team.teamId}`, (node) =>
        node.repository.handle(accountStreamName(team.organizationId), accountDecider, {
          type: 'CreateGatewayTeam',
          data: { teamId: team.teamId, ...team.settings, createdAt: new Date(this.host.clock.now()).toISOString() },
        }),
      );
      this.host.tally.add('gateway.team-created');
    }
    for (const key of this.plan.gateway.keys) {
      await this.host.act(`issue ${key.keyId}`, (node) =>
        node.repository.handle(accountStreamName(key.organizationId), accountDecider, {
          type: 'IssueGatewayKey',
          data: { keyId: key.keyId, keyHash: gatewayKeyHash(this.secretOf(key)), ...key.settings, ...this.expiryOf(key), issuedAt: new Date(this.host.clock.now()).toISOString() },
        }),
      );
      this.host.tally.add('gateway.key-issued');
    }
  }

  schedule(action: GatewayAction, launch: Launch): void {
    switch (action.kind) {
      case 'gateway-call':
        launch(action.atMs, `gateway ${action.plan.tag}`, () => this.call(action.plan));
        return;
      case 'gateway-key-change':
        launch(action.atMs, `change ${action.key.keyId}`, () => {
          this.host.tally.add('gateway.key-changed-mid-flight');
          return this.host.act(`change ${action.key.keyId}`, (node) => node.gatewayAdmin.changeKey(action.key.organizationId, action.key.keyId, { ...action.settings }), () => ({ explains: (name) => this.revokedError(name, action.key) }));
        });
        return;
      case 'gateway-key-revoke':
        launch(action.atMs, `revoke ${action.key.keyId}`, () => {
          this.host.tally.add('gateway.key-revoked-mid-flight');
          return this.host.act(`revoke ${action.key.keyId}`, (node) => node.gatewayAdmin.revokeKey(action.key.organizationId, action.key.keyId));
        });
        return;
      case 'gateway-key-rotate':
        launch(action.atMs, `rotate ${action.key.keyId}`, () => this.rotate(action.key, action.graceSeconds));
        return;
      case 'gateway-price':
        launch(action.atMs, `price ${action.model}`, () => {
          this.host.tally.add(action.card.enabled ? 'gateway.rate-card-changed-mid-flight' : 'gateway.rate-card-disabled-mid-flight');
          return this.host.act(`price ${action.model}`, (node) => node.gatewayAdmin.priceModel(action.model, { ...action.card }));
        });
    }
  }

  /** Rotations of each key so far: its current secret is the one of the latest. */
  private readonly rotations = new Map<string, number>();

  /**
   * A new secret for the key, derived from the seed like the first (a rotation by the admin route would
   * draw it at random and the run would not replay). Calls present the new one once it is on the log,
   * and a call by the old one is what the account's decision refuses after the grace.
   */
  private async rotate(key: GatewayKeyPlan, graceSeconds: number): Promise<void> {
    const next = (this.rotations.get(key.keyId) ?? 0) + 1;
    this.host.tally.add('gateway.key-rotated-mid-flight');
    let done = false;
    await this.host.act(
      `rotate ${key.keyId}`,
      async (node) => {
        await node.repository.handle(accountStreamName(key.organizationId), accountDecider, {
          type: 'RotateGatewayKey',
          data: { keyId: key.keyId, keyHash: gatewayKeyHash(this.secretOf(key, `rotation ${next} `)), graceSeconds, rotatedAt: new Date(this.host.clock.now()).toISOString() },
        });
        done = true;
      },
      () => ({ explains: (name) => this.revokedError(name, key) }),
    );
    if (done) this.rotations.set(key.keyId, next);
  }

  /** The key's current secret: its first, or the one of its latest rotation. */
  private currentSecret(key: GatewayKeyPlan): string {
    const rotations = this.rotations.get(key.keyId) ?? 0;
    return rotations === 0 ? this.secretOf(key) : this.secretOf(key, `rotation ${rotations} `);
  }

  /** The key's `expiresAt`, its planned span after now (its issue). */
  private expiryOf(key: GatewayKeyPlan): { readonly expiresAt?: string } {
    return key.expiresAfterMs === undefined ? {} : { expiresAt: new Date(this.host.clock.now() + key.expiresAfterMs).toISOString() };
  }

  /** Changing a key someone revoked meanwhile is refused: right. */
  private revokedError(name: string, key: GatewayKeyPlan): boolean {
    return name === 'UnknownGatewayKeyError' && this.host.audit.accounts.get(key.organizationId)?.keys.get(key.keyId)?.revokedAtMs !== undefined;
  }

  private presentedKey(plan: GatewayCallPlan): string {
    const key = this.plan.gateway.keys.find((candidate) => candidate.keyId === plan.keyId)!;
    if (plan.presented === 'malformed') return MALFORMED_KEY;
    return plan.presented === 'unknown-key' ? this.secretOf(key, 'never issued ') : this.currentSecret(key);
  }

  /** One call: admitted, answered by upstream after its latency, settled; or the process dies on the way. */
  private async call(plan: GatewayCallPlan): Promise<void> {
    const { clock, tally } = this.host;
    tally.add('gateway.call');
    if (plan.bySecondProcess) tally.add('gateway.call.by-second-process');
    if (plan.inBurst) tally.add('gateway.call.in-burst');
    const startedAtMs = clock.now();
    let admission: GatewayAdmission | undefined;
    let settled = false;
    await this.host.act(
      `gateway ${plan.tag}`,
      async (node) => {
        const accounting = plan.bySecondProcess ? node.second.gateway : node.gateway;
        admission = await accounting.admit({ presentedKey: this.presentedKey(plan), facts: plan.facts, requestId: `sim-${plan.tag}` });
        if (!admission.admitted) return;
        tally.add(`gateway.upstream.${plan.upstream}`);
        const outcome = upstreamOutcome(plan, clock.now(), admission.attemptTimeoutMs);
        await this.upstream(node, plan, outcome);
        this.host.audit.upstreamAnswered(admission.invocationId, outcome);
        await accounting.settle(admission, outcome);
        settled = true;
        tally.add('gateway.settled-by-its-call');
      },
      () => ({
        ...(admission?.invocationId === undefined ? {} : { invocationId: admission.invocationId }),
        explains: (name) => name === 'IllegalTransitionError' && admission?.invocationId !== undefined && this.host.audit.settledByStaleCloser(admission.invocationId),
      }),
    );
    if (admission === undefined) return;
    if (admission.admitted && !settled) tally.add('gateway.admitted-not-settled-by-its-call');
    await this.judge(plan, admission, startedAtMs);
  }


  /** Upstream takes its time; a crash planned mid-call kills the process while upstream is still answering. */
  private async upstream(node: LedgerNode, plan: GatewayCallPlan, outcome: GatewayCallOutcome): Promise<void> {
    if (plan.upstream !== 'crash-mid-call') return this.host.clock.sleep(outcome.durationMs, node.killSignal);
    const waitMs = Math.max(outcome.durationMs, 1_000);
    this.host.clock.setTimer(Math.floor(waitMs / 2), () => this.host.crash(node));
    return this.host.clock.sleep(waitMs, node.killSignal);
  }

  /**
   * What the call was told, against what the key, the rate card and the body explain, as the audit's
   * fold of the log has them. On PostgreSQL a reader of `$all` stops below the oldest append still
   * running, so the fold may be behind what the call saw: the estimate it committed, or a revocation
   * or a new rate card version the admission read on the streams themselves. When the streams
   * already hold what the fold lacks, the call is judged at the next quiet point instead, once the
   * fold has it, as the audit does for a result handed over ahead of the fold.
   */
  private async judge(plan: GatewayCallPlan, admission: GatewayAdmission, startedAtMs: number): Promise<void> {
    const { tally } = this.host;
    const judgedAtMs = this.host.clock.now();
    if (admission.admitted) {
      tally.add('gateway.admitted');
      const { invocationId, holdCredits } = admission;
      // Reports through the host: nothing left for the audit to return.
      const check = (): undefined => void this.checkAdmitted(plan, invocationId, holdCredits, startedAtMs, judgedAtMs);
      const estimated = this.host.audit.invocations.get(invocationId)?.gateway === undefined ? await this.host.audit.streamPositionOf(invocationId, 'InvocationEstimated') : undefined;
      if (estimated !== undefined) {
        tally.add('gateway.admitted-ahead-of-the-fold');
        this.host.audit.deferToQuietPoint(check, estimated);
        return;
      }
      check();
      return;
    }
    tally.add(`gateway.refused.${admission.status}${admission.invocationId === undefined ? '' : '.recorded'}`);
    const why = this.unexplained(plan, admission, startedAtMs, judgedAtMs);
    if (why === undefined) return;
    const ahead = await this.host.audit.positionAheadOfTheFold([accountStreamName(plan.organizationId), RATE_CARD_STREAM]);
    if (ahead !== undefined) {
      tally.add('gateway.refused-ahead-of-the-fold');
      this.host.audit.deferToQuietPoint(() => void this.failUnexplained(plan, admission, this.unexplained(plan, admission, startedAtMs, judgedAtMs)), ahead);
      return;
    }
    this.failUnexplained(plan, admission, why);
  }

  private failUnexplained(plan: GatewayCallPlan, admission: Extract<GatewayAdmission, { admitted: false }>, why: string | undefined): void {
    if (why === undefined) return;
    this.host.fail({
      invariant: 'gateway.refusal-explained',
      detail: `gateway call ${plan.tag} (key ${plan.keyId}, ${plan.facts.model}, max_tokens ${plan.facts.maxTokens}) was refused ${admission.status} ${admission.errorType} "${admission.message}": ${why}`,
      streams: [accountStreamName(plan.organizationId), ...(admission.invocationId === undefined ? [] : [`invocation-${admission.invocationId}`])],
      invocations: admission.invocationId === undefined ? [] : [admission.invocationId],
    });
  }

  /** Why a refusal is not explained, or undefined when it is. Recorded refusals are the audit's to explain. */
  private unexplained(plan: GatewayCallPlan, refusal: Extract<GatewayAdmission, { admitted: false }>, startedAtMs: number, nowMs: number): string | undefined {
    const key = this.host.audit.accounts.get(plan.organizationId)?.keys.get(plan.keyId);
    const versions = this.host.audit.rateCard.get(plan.facts.model) ?? [];
    switch (refusal.status) {
      case 401:
        if (plan.presented !== 'key' || key?.revokedAtMs !== undefined) return undefined;
        // A secret rotated away is refused once its grace ends: any rotation of the key explains it.
        if (key !== undefined && key.secretEnds.size > 0) return undefined;
        return key?.settingsDuring(startedAtMs, nowMs).some((settings) => settings.expiresAt !== undefined && Date.parse(settings.expiresAt) <= nowMs) === true
          ? undefined
          : 'the key presented was issued, never revoked, and not past an expiresAt';
      case 404:
        return plan.facts.model === UNPRICED_GATEWAY_MODEL || versions.some((version) => !version.enabled) ? undefined : 'the model is priced and enabled';
      case 403:
        if (refusal.invocationId !== undefined) return undefined;
        return key?.settingsDuring(startedAtMs, nowMs).some((settings) => settings.models !== undefined && !settings.models.includes(plan.facts.model)) === true
          ? undefined
          : 'every allowlist of the key while the call was admitted allows the model';
      case 400: {
        const caps = [...versions.map((version) => version.maxOutputTokens), ...(key?.settingsDuring(startedAtMs, nowMs) ?? []).map((settings) => settings.maxOutputTokens ?? Number.MAX_SAFE_INTEGER)];
        const overCap = caps.some((cap) => plan.facts.maxTokens > cap);
        const tooLarge = versions.some((version) => independentHold(plan.facts, version.prices) > BigInt(MAX_GATEWAY_HOLD_CREDITS));
        // A worst case in tokens past the key's tokensPerMinute can never be admitted (docs/gateway.md "Rate limits").
        const worst = versions.map((version) => independentWorstCaseTokens(plan.facts, version.prices));
        const overMinute = (key?.settingsDuring(startedAtMs, nowMs) ?? []).some((settings) => settings.tokensPerMinute !== undefined && worst.some((tokens) => tokens > BigInt(settings.tokensPerMinute!)));
        if (overMinute) this.host.tally.add('checked.gateway-refusal.max_tokens_over_tokens_per_minute');
        return overCap || tooLarge || overMinute ? undefined : `max_tokens ${plan.facts.maxTokens} is within every cap and the hold within ${MAX_GATEWAY_HOLD_CREDITS}`;
      }
      default:
        return refusal.invocationId === undefined ? 'a refusal of the account that the log does not record' : undefined;
    }
  }

  /** An admitted call: a live key that allows the model and max_tokens, holding the worst case of its facts. */
  private checkAdmitted(plan: GatewayCallPlan, invocationId: string, holdCredits: number, startedAtMs: number, judgedAtMs: number): void {
    const fail = (detail: string): void =>
      this.host.fail({ invariant: 'gateway.admitted-as-the-key-and-card-allow', detail: `gateway call ${plan.tag} (${invocationId}): ${detail}`, streams: [`invocation-${invocationId}`, accountStreamName(plan.organizationId)], invocations: [invocationId] });
    if (plan.presented !== 'key') return fail(`admitted with a ${plan.presented} key`);
    const invocation = this.host.audit.invocations.get(invocationId);
    const publication = invocation?.publication;
    if (invocation?.gateway === undefined || publication == null) return fail('admitted, but the log holds no gateway estimate for it');
    const card = this.host.audit.rateCard.get(invocation.gateway.model)?.[invocation.gateway.rateCardVersion - 1];
    const expected = card === undefined ? undefined : independentHold(plan.facts, card.prices);
    if (expected === undefined || BigInt(holdCredits) !== expected || publication.creditHold !== holdCredits) {
      return fail(`held ${holdCredits} (estimate ${publication.creditHold}); the worst case of its facts at v${invocation.gateway.rateCardVersion} is ${String(expected)}`);
    }
    const key = this.host.audit.accounts.get(plan.organizationId)?.keys.get(plan.keyId);
    const allowed = (key?.settingsDuring(startedAtMs, judgedAtMs) ?? []).some(
      (settings) => (settings.models === undefined || settings.models.includes(plan.facts.model)) && plan.facts.maxTokens <= (settings.maxOutputTokens ?? Number.MAX_SAFE_INTEGER),
    );
    if (!allowed) return fail(`no settings of key ${plan.keyId} while it was admitted allow ${plan.facts.model} with max_tokens ${plan.facts.maxTokens}`);
    if (plan.facts.maxTokens > card!.maxOutputTokens) return fail(`max_tokens ${plan.facts.maxTokens} over the card's ${card!.maxOutputTokens}`);
    this.host.tally.add('checked.gateway-hold-is-the-worst-case');
  }
}
