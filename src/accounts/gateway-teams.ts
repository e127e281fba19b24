/**
 * Gateway teams (docs/gateway.md "Teams"): a spend limit shared by the keys that name the team, kept in
 * the organization's account stream beside its keys, so one PlaceHold decides the organization's
 * credits, the team's limit and the key's limit against the same expected revision.
 */
import { DomainError } from '../domain/domain.errors';
import { FieldChecks } from '../domain/field-checks';
import type { BudgetAlertsSent } from './budget-alerts';
import { readBudgetAlerts, readSpendLimit, type SpendLimit } from './gateway-keys';

/** Teams an organization may have at once (a deleted team no longer counts). */
export const MAX_GATEWAY_TEAMS_PER_ORGANIZATION = 100;
/** Longest team name, in characters. */
export const MAX_GATEWAY_TEAM_NAME_CHARS = 100;

/** What an administrator sets on a team; absent limit: the team only groups its keys. */
export interface GatewayTeamSettings {
  readonly name: string;
  readonly spendLimit?: SpendLimit;
  /** Percentages of `spendLimit` at which a GatewayBudgetThresholdCrossed is recorded, once per period. */
  readonly alertAt?: readonly number[];
}

export interface GatewayTeam extends GatewayTeamSettings {
  readonly teamId: string;
  readonly createdAt: string;
  /** The period `spentInPeriod` counts: the period of the latest hold by one of the team's keys. */
  readonly spendPeriod?: string;
  /** Credits charged for the team's calls admitted in `spendPeriod`. */
  readonly spentInPeriod: number;
  /** The `alertAt` thresholds already recorded as crossed, in the latest period one was. */
  readonly alertsSent?: BudgetAlertsSent;
}

/** A team's settings, checked field by field (names are paths in the request body). */
export function readTeamSettings(checks: FieldChecks, input: Record<string, unknown>): GatewayTeamSettings {
  const name = checks.text('name', input.name, MAX_GATEWAY_TEAM_NAME_CHARS);
  const spendLimit = readSpendLimit(checks, input.spendLimit);
  const alertAt = readBudgetAlerts(checks, input, spendLimit);
  return { name, ...(spendLimit === undefined ? {} : { spendLimit }), ...(alertAt === undefined ? {} : { alertAt }) };
}

/** No team with this id belongs to the organization (or it was deleted): nothing is written. */
export class UnknownGatewayTeamError extends DomainError {
  override readonly name = 'UnknownGatewayTeamError';

  constructor(readonly teamId: string) {
    super('unknown_gateway_team', `gateway team "${teamId}" was not found`);
  }
}
