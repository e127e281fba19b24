/**
 * What operators and an organization's administrators do to the gateway (docs/gateway.md): price a
 * model on the rate card, and issue, list, change and revoke the organization's keys. Each change is
 * an event: keys in the organization's account stream, prices in the rate card's stream.
 */
import { Inject, Injectable } from '@nestjs/common';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { keyCallsInFlight, keySpend, type AccountState } from '../accounts/account.state';
import { readGraceSeconds, readKeySettings, UnknownGatewayKeyError, type GatewayKey, type GatewayKeySettings, type GatewayRejectionCounts, type KeyMinute } from '../accounts/gateway-keys';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../domain/clock.token';
import { FieldChecks } from '../domain/field-checks';
import { UnknownOrganizationError } from '../invocations/invocation-errors';
import { newEventId } from '../event-store/event-id.generator';
import type { Clock } from '../runtime';
import { gatewayKeyHash, newGatewayKey } from './gateway-keys.codec';
import { RATE_CARD_STREAM, rateCardDecider, UnknownGatewayModelError, type RateCardVersion } from './rate-card';

/** A key as the API lists it: its settings and figures, never the key. */
export interface GatewayKeyView extends GatewayKeySettings {
  readonly keyId: string;
  readonly issuedAt: string;
  readonly revokedAt?: string;
  /** The period counted now (`2026-12-01`, `2026-W49`, `2026-12` or `total`), what the key spent in it and what it holds. */
  readonly period: string;
  readonly spentCredits: number;
  readonly heldCredits: number;
  /** Calls refused before their hold since the key was issued, by reason (docs/gateway.md "Rejections before admission"). */
  readonly rejections: GatewayRejectionCounts;
  /** The latest rotation, and until when the secret before it works (docs/gateway.md "Keys"). */
  readonly rotatedAt?: string;
  readonly previousSecretValidUntil?: string;
  /** Calls of the key in flight now, against `maxConcurrent`. */
  readonly inFlight: number;
  /** The key's latest UTC minute with a call: calls admitted and tokens counted, against `requestsPerMinute` and `tokensPerMinute`. */
  readonly currentMinute?: KeyMinute;
}

@Injectable()
export class GatewayAdmin {
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async priceModel(model: string, body: Record<string, unknown>): Promise<{ readonly model: string; readonly version: number }> {
    const { events } = await this.repository.handle(RATE_CARD_STREAM, rateCardDecider, {
      type: 'PriceGatewayModel',
      data: {
        model,
        prices: body.prices,
        maxOutputTokens: body.maxOutputTokens,
        attemptTimeoutMs: body.attemptTimeoutMs,
        serverToolAllowances: body.serverToolAllowances,
        enabled: body.enabled,
        pricedAt: isoAt(this.clock),
      },
    });
    return { model, version: events[0]!.data.version };
  }

  /**
   * The rate card, every model with every version; `enabledOnly` (an organization's administrator):
   * only the models enabled now, which are the models a key of theirs may be allowed to call.
   */
  async rateCard(enabledOnly = false): Promise<readonly { readonly model: string; readonly versions: readonly RateCardVersion[] }[]> {
    const { state } = await this.repository.load(RATE_CARD_STREAM, rateCardDecider);
    return [...state.models]
      .filter(([, versions]) => !enabledOnly || versions[versions.length - 1]!.enabled)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([model, versions]) => ({ model, versions }));
  }

  /** A model's versions; `enabledOnly`: a model not enabled now is not found, as for a key's caller. */
  async rateCardOf(model: string, enabledOnly = false): Promise<{ readonly model: string; readonly versions: readonly RateCardVersion[] }> {
    const versions = (await this.repository.load(RATE_CARD_STREAM, rateCardDecider)).state.models.get(model);
    if (versions === undefined || (enabledOnly && !versions[versions.length - 1]!.enabled)) throw new UnknownGatewayModelError(model);
    return { model, versions };
  }

  /** Issues a key; the answer is the only place the key is ever shown. */
  async issueKey(organizationId: string, body: Record<string, unknown>): Promise<GatewayKeyView & { readonly key: string }> {
    await this.existingAccount(organizationId);
    const issuedAt = isoAt(this.clock);
    const settings = settingsOf(body, issuedAt);
    const key = newGatewayKey(organizationId);
    const keyId = newEventId();
    await this.repository.handle(accountStreamName(organizationId), accountDecider, {
      type: 'IssueGatewayKey',
      data: { keyId, keyHash: gatewayKeyHash(key), ...settings, issuedAt },
    });
    return { ...(await this.keyView(organizationId, keyId)), key };
  }

  async listKeys(organizationId: string): Promise<readonly GatewayKeyView[]> {
    const account = await this.existingAccount(organizationId);
    const at = isoAt(this.clock);
    return [...account.gatewayKeys.values()].sort((a, b) => a.issuedAt.localeCompare(b.issuedAt) || a.keyId.localeCompare(b.keyId)).map((key) => viewOf(account, key, at));
  }

  async changeKey(organizationId: string, keyId: string, body: Record<string, unknown>): Promise<GatewayKeyView> {
    await this.existingAccount(organizationId);
    const changedAt = isoAt(this.clock);
    const settings = settingsOf(body, changedAt);
    await this.repository.handle(accountStreamName(organizationId), accountDecider, { type: 'ChangeGatewayKey', data: { keyId, ...settings, changedAt } });
    return this.keyView(organizationId, keyId);
  }

  /** A new secret for the key, shown this once; the old one works `graceSeconds` more, then is refused. */
  async rotateKey(organizationId: string, keyId: string, body: Record<string, unknown>): Promise<GatewayKeyView & { readonly key: string }> {
    await this.existingAccount(organizationId);
    const checks = new FieldChecks();
    const graceSeconds = readGraceSeconds(checks, body.graceSeconds);
    checks.throwIfAny();
    const key = newGatewayKey(organizationId);
    await this.repository.handle(accountStreamName(organizationId), accountDecider, {
      type: 'RotateGatewayKey',
      data: { keyId, keyHash: gatewayKeyHash(key), graceSeconds, rotatedAt: isoAt(this.clock) },
    });
    return { ...(await this.keyView(organizationId, keyId)), key };
  }

  async revokeKey(organizationId: string, keyId: string): Promise<GatewayKeyView> {
    await this.existingAccount(organizationId);
    await this.repository.handle(accountStreamName(organizationId), accountDecider, { type: 'RevokeGatewayKey', data: { keyId, revokedAt: isoAt(this.clock) } });
    return this.keyView(organizationId, keyId);
  }

  private async keyView(organizationId: string, keyId: string): Promise<GatewayKeyView> {
    const account = (await this.repository.load(accountStreamName(organizationId), accountDecider, false)).state;
    const key = account.gatewayKeys.get(keyId);
    if (key === undefined) throw new UnknownGatewayKeyError(keyId);
    return viewOf(account, key, isoAt(this.clock));
  }

  private async existingAccount(organizationId: string) {
    const { state } = await this.repository.load(accountStreamName(organizationId), accountDecider);
    if (!state.exists) throw new UnknownOrganizationError(organizationId);
    return state;
  }
}

/** The settings of a key request, refused whole (every bad field named) before a key is made. */
function settingsOf(body: Record<string, unknown>, now: string): GatewayKeySettings {
  const checks = new FieldChecks();
  const settings = readKeySettings(checks, body, now);
  checks.throwIfAny();
  return settings;
}

function viewOf(account: AccountState, key: GatewayKey, at: string): GatewayKeyView {
  const spend = keySpend(account, key, at);
  const inGrace = key.previousKeyValidUntil !== undefined && key.previousKeyValidUntil > at;
  return {
    keyId: key.keyId,
    name: key.name,
    ...(key.models === undefined ? {} : { models: key.models }),
    ...(key.maxOutputTokens === undefined ? {} : { maxOutputTokens: key.maxOutputTokens }),
    ...(key.spendLimit === undefined ? {} : { spendLimit: key.spendLimit }),
    ...(key.alertAt === undefined ? {} : { alertAt: key.alertAt }),
    ...(key.teamId === undefined ? {} : { teamId: key.teamId }),
    ...pick(key, ['expiresAt', 'maxConcurrent', 'requestsPerMinute', 'tokensPerMinute', 'rotatedAt']),
    ...(inGrace ? { previousSecretValidUntil: key.previousKeyValidUntil } : {}),
    issuedAt: key.issuedAt,
    ...(key.revokedAt === undefined ? {} : { revokedAt: key.revokedAt }),
    period: spend.period,
    spentCredits: spend.spent,
    heldCredits: spend.held,
    rejections: key.rejections ?? {},
    inFlight: keyCallsInFlight(account, key.keyId),
    ...(key.rateMinute === undefined ? {} : { currentMinute: key.rateMinute }),
  };
}

/** The fields of `key` that are set, as they are. */
function pick<K extends keyof GatewayKey>(key: GatewayKey, fields: readonly K[]): Partial<Pick<GatewayKey, K>> {
  return Object.fromEntries(fields.filter((field) => key[field] !== undefined).map((field) => [field, key[field]])) as Partial<Pick<GatewayKey, K>>;
}
