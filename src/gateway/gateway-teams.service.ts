/**
 * An organization's gateway teams (docs/gateway.md "Teams"): create, list, change and delete them.
 * Each change is an event in the organization's account stream, where PlaceHold reads them.
 */
import { Inject, Injectable } from '@nestjs/common';
import { accountDecider } from '../accounts/account.decider';
import { accountStreamName } from '../accounts/account.events';
import { teamSpend, type AccountState } from '../accounts/account.state';
import { readTeamSettings, UnknownGatewayTeamError, type GatewayTeam, type GatewayTeamSettings } from '../accounts/gateway-teams';
import { AggregateRepository } from '../aggregates/aggregate.repository';
import { CLOCK, isoAt } from '../domain/clock.token';
import { FieldChecks } from '../domain/field-checks';
import { newEventId } from '../event-store/event-id.generator';
import { UnknownOrganizationError } from '../invocations/invocation-errors';
import type { Clock } from '../runtime';

/** A team as the API lists it: its settings, its keys and its figures in the period counted now. */
export interface GatewayTeamView extends GatewayTeamSettings {
  readonly teamId: string;
  readonly createdAt: string;
  /** Live keys that name the team. */
  readonly keyIds: readonly string[];
  /** The period counted now (`2026-12-01`, `2026-W49`, `2026-12` or `total`), what the team's keys spent in it and what they hold. */
  readonly period: string;
  readonly spentCredits: number;
  readonly heldCredits: number;
}

@Injectable()
export class GatewayTeams {
  constructor(
    private readonly repository: AggregateRepository,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async createTeam(organizationId: string, body: Record<string, unknown>): Promise<GatewayTeamView> {
    await this.existingAccount(organizationId);
    const settings = settingsOf(body);
    const teamId = newEventId();
    await this.repository.handle(accountStreamName(organizationId), accountDecider, { type: 'CreateGatewayTeam', data: { teamId, ...settings, createdAt: isoAt(this.clock) } });
    return this.teamView(organizationId, teamId);
  }

  async listTeams(organizationId: string): Promise<readonly GatewayTeamView[]> {
    const account = await this.existingAccount(organizationId);
    const at = isoAt(this.clock);
    return [...account.gatewayTeams.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.teamId.localeCompare(b.teamId)).map((team) => viewOf(account, team, at));
  }

  async changeTeam(organizationId: string, teamId: string, body: Record<string, unknown>): Promise<GatewayTeamView> {
    await this.existingAccount(organizationId);
    const settings = settingsOf(body);
    await this.repository.handle(accountStreamName(organizationId), accountDecider, { type: 'ChangeGatewayTeam', data: { teamId, ...settings, changedAt: isoAt(this.clock) } });
    return this.teamView(organizationId, teamId);
  }

  /** Deletes a team no live key names; answers the team as it was. */
  async deleteTeam(organizationId: string, teamId: string): Promise<GatewayTeamView> {
    const before = await this.teamView(organizationId, teamId);
    await this.repository.handle(accountStreamName(organizationId), accountDecider, { type: 'DeleteGatewayTeam', data: { teamId, deletedAt: isoAt(this.clock) } });
    return before;
  }

  private async teamView(organizationId: string, teamId: string): Promise<GatewayTeamView> {
    const account = await this.existingAccount(organizationId);
    const team = account.gatewayTeams.get(teamId);
    if (team === undefined) throw new UnknownGatewayTeamError(teamId);
    return viewOf(account, team, isoAt(this.clock));
  }

  private async existingAccount(organizationId: string): Promise<AccountState> {
    const { state } = await this.repository.load(accountStreamName(organizationId), accountDecider);
    if (!state.exists) throw new UnknownOrganizationError(organizationId);
    return state;
  }
}

/** The settings of a team request, refused whole (every bad field named). */
function settingsOf(body: Record<string, unknown>): GatewayTeamSettings {
  const checks = new FieldChecks();
  const settings = readTeamSettings(checks, body);
  checks.throwIfAny();
  return settings;
}

function viewOf(account: AccountState, team: GatewayTeam, at: string): GatewayTeamView {
  const spend = teamSpend(account, team, at);
  const keyIds = [...account.gatewayKeys.values()].filter((key) => key.teamId === team.teamId && key.revokedAt === undefined).map((key) => key.keyId);
  return {
    teamId: team.teamId,
    name: team.name,
    ...(team.spendLimit === undefined ? {} : { spendLimit: team.spendLimit }),
    ...(team.alertAt === undefined ? {} : { alertAt: team.alertAt }),
    createdAt: team.createdAt,
    keyIds,
    period: spend.period,
    spentCredits: spend.spent,
    heldCredits: spend.held,
  };
}
